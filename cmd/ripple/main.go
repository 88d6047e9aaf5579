// Command ripple is the live execution server for Python projects.
//
//	ripple version
//	ripple agent --coordinator ADDR --token-file F [--kernels N]
//	ripple kernel-check [--python P] [DIR]
//	ripple watch [DIR] [--entry module:function] [--json] [--python P]
//	ripple lsp [flags] [DIR]
//	ripple jupyter install|kernel ...
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit statuses, the same for every command: 0 success, 1 a failure while
// working (a kernel that cannot start, a failing test run), exitUsage for
// what the user must fix before anything runs (a bad flag, a project
// directory that does not exist), 130 after Ctrl-C where a command says so.
const exitUsage = 2

// commands are the subcommands; `ripple CMD -h` prints CMD's help.
var commands = []string{"serve", "agent", "watch", "lsp", "run", "report", "kernel-check", "jupyter", "version"}

func isCommand(name string) bool {
	for _, c := range commands {
		if c == name {
			return true
		}
	}
	return false
}

// helpRequested reports whether args ask for help (-h, -help, --help
// before any "--").
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// commandHelp prints a command's help on stdout and exits 0, as -h does
// for command-line tools (the flag package's own -h prints on stderr and
// makes commands exit 2).
func commandHelp(ctx context.Context, name string, stdout io.Writer) int {
	if name == "version" {
		fmt.Fprintln(stdout, "usage: ripple version (or ripple --version)\n\nPrint ripple's version.")
		return 0
	}
	dispatch(ctx, []string{name, "-h"}, stdout, stdout)
	return 0
}

func main() {
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if len(os.Args) > 1 && (os.Args[1] == "watch" || os.Args[1] == "jupyter") {
		// watch serves Ctrl-C itself: once interrupts a run, twice exits;
		// a Jupyter kernel's SIGINT is an interrupt of the running cell.
		signals = signals[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
