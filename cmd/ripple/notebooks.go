package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/ripple-run/ripple/batch"
)

const notebooksUsage = `usage: ripple run --notebooks [PATH...] [--project DIR] [flags]

Runs Jupyter notebooks headless for CI: each notebook's code cells, in order,
run as one script (docs/notebooks.md) on ripple's kernels, several notebooks
at once (--kernels). Each notebook is one result (a JUnit test case): it fails
when a cell raises, naming the cell and line. The cells' outputs and execution
counts are written back into each notebook (as nbconvert --execute --inplace)
unless --keep-outputs. PATHs are notebooks or folders of them inside the
project (default: the whole project). Exit status: 0 every notebook ran, 1 a
notebook failed, 2 a usage or project error, 130 after Ctrl-C.
`

// notebooksFlag is the flag that makes ripple run run notebooks.
const notebooksFlag = "notebooks"

// wantsNotebooks reports whether a ripple run command line has --notebooks.
func wantsNotebooks(args []string) bool {
	return slices.Contains(args, "--"+notebooksFlag) || slices.Contains(args, "-"+notebooksFlag)
}

// notebooksCommand is ripple run --notebooks.
func notebooksCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run --notebooks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // printed below: -h to stdout, a bad flag to stderr
	usage := func(w io.Writer) {
		fs.SetOutput(w)
		fmt.Fprint(w, notebooksUsage)
		fs.PrintDefaults()
	}
	fs.Bool(notebooksFlag, true, "run notebooks (this mode)")
	project := fs.String("project", ".", "the project `DIR` (the kernels' working directory and import root)")
	kernels := fs.Int("kernels", 0, "number of kernels, notebooks running at once (default: the number of CPUs)")
	var timeout timeoutFlag
	fs.Var(&timeout, "timeout", "time limit of each notebook, e.g. 5m (default: none)")
	junit := fs.String("junit", "", "write a JUnit XML report to `FILE`")
	jsonOut := fs.String("json", "", "write a JSON report to `FILE`")
	keep := fs.Bool("keep-outputs", false, "do not write the outputs back into the notebooks")
	watch := fs.Bool("watch", false, "keep the notebooks' kernels and, on each save, re-run only the statements (cells) the change affects; Ctrl-C stops")
	python := fs.String("python", "", "Python interpreter (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	logLevel := fs.String("log-level", "warn", "log `level` on stderr: debug, info, warn or error")
	var paths []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage(stdout)
				return 0
			}
			usage(stderr)
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		paths, rest = append(paths, fs.Arg(0)), fs.Args()[1:]
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return exitWith("run", stderr, usageError("--log-level %q: want debug, info, warn or error", *logLevel))
	}
	root, err := filepath.Abs(*project)
	if err != nil {
		return exitWith("run", stderr, usageError("--project: %v", err))
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return exitWith("run", stderr, usageError("--project %s: not a directory", *project))
	}
	for i, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			paths[i] = abs // as the user typed it, from the current directory
		}
	}
	for _, p := range []struct{ flag, path string }{{"--junit", *junit}, {"--json", *jsonOut}} {
		if p.path != "" {
			if err := batch.CheckReportPath(p.flag, p.path); err != nil {
				return exitWith("run", stderr, usageError("%v", err))
			}
		}
	}
	opts := batch.NotebookOptions{Root: root, Paths: paths, Python: *python,
		Kernels: *kernels, Timeout: timeout.d, KeepOutputs: *keep,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	if *watch {
		if *junit != "" || *jsonOut != "" {
			return exitWith("run", stderr, usageError("--watch runs until Ctrl-C: it writes no --junit or --json report"))
		}
		return watchNotebooks(ctx, opts, stdout, stderr)
	}
	console := batch.NewConsole(stdout, batch.ConsoleOptions{})
	opts.Observer = console
	rep, err := batch.RunNotebooks(ctx, opts)
	f := &runFlags{junit: *junit, jsonOut: *jsonOut}
	return f.finish(rep, err, console, stderr)
}

// watchNotebooks is ripple run --notebooks --watch: one line per run of a
// notebook, until Ctrl-C (exit 0).
func watchNotebooks(ctx context.Context, opts batch.NotebookOptions, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "ripple run: running the notebooks; then watching for changes (Ctrl-C to stop)")
	err := batch.WatchNotebooks(ctx, opts, func(r *batch.Result) {
		line := fmt.Sprintf("ripple run: %s %s", r.Entry.Path, r.Status)
		if r.Message != "" {
			line += ": " + r.Message
		}
		fmt.Fprintln(stdout, line)
	})
	if err != nil {
		return exitWith("run", stderr, usageError("%v", err))
	}
	return 0
}
