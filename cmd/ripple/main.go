// Command ripple is the live execution server for Python projects.
//
//	ripple version
//	ripple kernel-check [--python P] [DIR]
//	ripple watch [DIR] [--entry module:function] [--json] [--python P]
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if len(os.Args) > 1 && os.Args[1] == "watch" {
		signals = signals[1:] // watch serves Ctrl-C itself: once interrupts a run, twice exits
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
