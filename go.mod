module github.com/ripple-run/ripple

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1
	go.uber.org/goleak v1.3.0
)

require golang.org/x/sys v0.13.0 // indirect
