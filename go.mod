module github.com/ripple-run/ripple

go 1.26.8
