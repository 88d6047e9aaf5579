package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ripple-run/ripple/kernel"
)

const usage = `usage: ripple <command> [arguments]

commands:
  version                         print ripple's version
  serve [flags] [DIR]             serve DIR to IDE clients over a WebSocket (serve -h: flags)
  agent --coordinator ADDR [flags]
                                  serve kernels of this host to a coordinator
                                  (ripple serve --agents-listen; ripple agent -h)
  kernel-check [--python P] [DIR] start a kernel in DIR (default: the current
                                  directory), run a line of Python, print its output
  watch [DIR] [--entry module:function] [--json] [--python P]
                                  run the entry (default main:main) of the project
                                  in DIR and show its values; re-run on every save.
                                  Ctrl-C interrupts a run, twice (or when idle) exits
  lsp [flags] [DIR]               speak the Language Server Protocol on stdin/stdout:
                                  live values in any LSP editor (ripple lsp -h, docs/editors.md)
  run [DIR] [flags]               run the project's entries or tests headless for CI
                                  (ripple run -h for the flags)
  run --notebooks [PATH...]       run Jupyter notebooks headless for CI, outputs written
                                  back (ripple run --notebooks -h, docs/notebooks.md)
  report merge OUT IN...          merge the reports of the shards of a run
  jupyter install|kernel          ripple as a Jupyter kernel (ripple jupyter -h, docs/jupyter.md)
`

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if isCommand(args[0]) && helpRequested(args[1:]) && (args[0] != "run" || !wantsNotebooks(args[1:])) {
		return commandHelp(ctx, args[0], stdout)
	}
	return dispatch(ctx, args, stdout, stderr)
}

// dispatch runs the command args[0].
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, "ripple", version)
		return 0
	case "kernel-check":
		return kernelCheck(ctx, args[1:], stdout, stderr)
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "agent":
		return agentCmd(ctx, args[1:], stdout, stderr)
	case "watch":
		return watchCmd(ctx, args[1:], stdout, stderr)
	case "lsp":
		return lspCmd(ctx, args[1:], closableStdin, stdout, stderr)
	case "run", "report":
		if args[0] == "run" && wantsNotebooks(args[1:]) {
			return notebooksCommand(ctx, args[1:], stdout, stderr)
		}
		return batchCommand(ctx, args, stdout, stderr)
	case "jupyter":
		return jupyterCmd(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "ripple: unknown command %q\n%s", args[0], usage)
	return 2
}

// checkCode is what kernel-check runs in the kernel.
const checkCode = "print('hello from', __import__('sys').version)"

// kernelCheck starts one kernel, runs checkCode, copies its output and
// stops the kernel.
func kernelCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kernel-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pythonFlag := fs.String("python", "", "Python interpreter (default: $RIPPLE_PYTHON, DIR/.venv/bin/python, python3 on PATH)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "ripple kernel-check: want at most one directory, got %q\n", fs.Args())
		return 2
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	root, err := filepath.Abs(dir)
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(root); err == nil && !st.IsDir() {
			err = fmt.Errorf("not a directory")
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "ripple kernel-check: project directory %s: %v\n", dir, err)
		return exitUsage
	}

	py, err := kernel.FindPython(ctx, *pythonFlag, root)
	if err != nil {
		fmt.Fprintf(stderr, "ripple kernel-check: %v\n", err)
		return 1
	}
	start := time.Now()
	k, err := kernel.Start(ctx, kernel.Config{Python: py, Root: root})
	if err != nil {
		fmt.Fprintf(stderr, "ripple kernel-check: %v\n", err)
		return 1
	}
	ready := time.Since(start)
	defer k.Stop(context.WithoutCancel(ctx))

	var mu sync.Mutex // the sink runs on the kernel's reader goroutine
	sink := kernel.SinkFuncs{OutputFunc: func(s kernel.Stream, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		if s == kernel.Stderr {
			stderr.Write(b)
		} else {
			stdout.Write(b)
		}
	}}
	start = time.Now()
	err = k.Eval(ctx, checkCode, sink)
	if err != nil {
		fmt.Fprintf(stderr, "ripple kernel-check: %v\n", err)
		if errors.Is(err, kernel.ErrInterrupted) {
			return 130
		}
		return 1
	}
	fmt.Fprintf(stderr, "kernel %s (pid %d, %s): ready in %v, round trip %v\n",
		k.ID(), k.PID(), py.Path, ready.Round(time.Millisecond), time.Since(start).Round(time.Microsecond))
	return 0
}
