module github.com/ripple-run/ripple

go 1.26.8

require go.uber.org/goleak v1.3.0

require golang.org/x/sys v0.49.0 // indirect
