package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/watchview"
)

// watchClientID is the id the terminal view connects to the engine with.
const watchClientID = "ripple-watch"

// watchStopTimeout bounds the graceful engine stop on exit (kernels get
// SIGTERM, then SIGKILL when it ends).
const watchStopTimeout = 10 * time.Second

// watchFlags are the parsed arguments of ripple watch.
type watchFlags struct {
	dir    string
	entry  protocol.MethodPointer
	json   bool
	python string
}

// parseWatchFlags parses `[PROJECT_DIR] [--entry module:function] [--json]
// [--python P]`, flags before or after the directory.
func parseWatchFlags(args []string, stderr io.Writer) (watchFlags, bool) {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	entry := fs.String("entry", "", "the function to run and show, as module:function, or module:__main__ for a module's top level as a script (default main:main, or main:__main__ when main.py defines no main)")
	jsonOut := fs.Bool("json", false, "print one JSON object per line (see the watchview package doc) instead of tables")
	python := fs.String("python", "", "Python interpreter (default: $RIPPLE_PYTHON, DIR/.venv/bin/python, python3 on PATH)")
	var dirs []string
	for {
		if err := fs.Parse(args); err != nil {
			return watchFlags{}, false
		}
		if fs.NArg() == 0 {
			break
		}
		dirs = append(dirs, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(dirs) > 1 {
		fmt.Fprintf(stderr, "ripple watch: want at most one project directory, got %q\n", dirs)
		return watchFlags{}, false
	}
	f := watchFlags{dir: ".", json: *jsonOut, python: *python}
	if len(dirs) == 1 {
		f.dir = dirs[0]
	}
	if *entry == "" {
		f.entry = defaultEntry(f.dir)
		return f, true
	}
	mp, err := protocol.ParseMethodPointer(*entry)
	if err != nil {
		fmt.Fprintf(stderr, "ripple watch: --entry %s: %v\n", *entry, err)
		return watchFlags{}, false
	}
	f.entry = mp
	return f, true
}

// runEnds is the view as the engine sees it, counting the runs that ended,
// so that Ctrl-C can tell whether the run it interrupted is over.
type runEnds struct {
	*watchview.View
	ended atomic.Int64
}

func (r *runEnds) Notify(method string, params any) {
	if method == protocol.NotifyExecutionComplete || method == protocol.NotifyExecutionFailed {
		r.ended.Add(1)
	}
	r.View.Notify(method, params)
}

// watchCmd is `ripple watch`: it runs the entry through the engine with
// file watching on and shows its expressions until Ctrl-C (or ctx ends).
//
// Ctrl-C: while a run is going (queued or running) the first Ctrl-C
// interrupts it; a second one before that run has ended, or one while
// nothing runs, exits 0 after stopping the engine gracefully. The process
// receives SIGINT itself here (main leaves it to watch); ctx ends on
// SIGTERM.
func watchCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, ok := parseWatchFlags(args, stderr)
	if !ok {
		return 2
	}
	root, err := filepath.Abs(f.dir)
	if err == nil {
		var st os.FileInfo
		if st, err = os.Stat(root); err == nil && !st.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "ripple watch: project directory %s: %v\n", f.dir, err)
		return exitUsage
	}

	sigint := make(chan os.Signal, 2)
	signal.Notify(sigint, os.Interrupt)
	defer signal.Stop(sigint)

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := engine.New(ctx, engine.Config{Root: root, Python: f.python, Kernels: 1, Watch: true, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "ripple watch: %v\n", err)
		return 1
	}
	if err := e.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "ripple watch: %v\n", err)
		return 1
	}
	stopCtx := context.WithoutCancel(ctx)
	stopEngine := func() {
		sctx, cancel := context.WithTimeout(stopCtx, watchStopTimeout)
		defer cancel()
		if err := e.Stop(sctx); err != nil {
			fmt.Fprintf(stderr, "ripple watch: stop: %v\n", err)
		}
	}

	opts := watchview.Options{Out: stdout, Err: stderr, JSON: f.json, Entry: f.entry.String()}
	if term, ok := stdout.(*os.File); ok && !f.json {
		if width, tty := terminalWidth(term); tty {
			opts.Color = os.Getenv("NO_COLOR") == ""
			opts.Width = width
		}
	}
	view := &runEnds{View: watchview.New(opts)}
	if err := view.Start(ctx); err != nil {
		stopEngine()
		fmt.Fprintf(stderr, "ripple watch: %v\n", err)
		return 1
	}
	stopView := func() {
		sctx, cancel := context.WithTimeout(stopCtx, watchStopTimeout)
		defer cancel()
		_ = view.Stop(sctx)
	}

	code := watchEntry(ctx, e, view, f, sigint, stderr)
	stopEngine()
	view.Stopped()
	stopView()
	return code
}

// watchEntry connects the view, starts the entry and serves Ctrl-C until
// the user exits or ctx ends.
func watchEntry(ctx context.Context, e *engine.Engine, view *runEnds, f watchFlags, sigint <-chan os.Signal, stderr io.Writer) int {
	// The first line goes out before the view can receive anything else.
	py := e.Python()
	view.Watching(watchview.WatchInfo{Root: e.Root(), Entry: f.entry.String(), Python: py.Path, PythonVersion: py.Version})
	if _, err := e.Connect(ctx, watchClientID, view); err != nil {
		fmt.Fprintf(stderr, "ripple watch: %v\n", err)
		return 1
	}
	created, err := e.CreateContext(ctx, watchClientID, protocol.CreateContextParams{})
	if err != nil {
		fmt.Fprintf(stderr, "ripple watch: %v\n", err)
		return 1
	}
	id := created.ContextID
	if err := e.Push(ctx, watchClientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(f.entry)}); err != nil {
		fmt.Fprintf(stderr, "ripple watch: --entry %s: %v\n", f.entry, err)
		return 1
	}

	interruptedAt := int64(-1) // runs ended when the last interrupt was sent; -1: none
	for {
		select {
		case <-ctx.Done():
			return 0
		case <-sigint:
			st, err := e.Status(ctx)
			busy := err == nil && st.Queue.Pending+st.Queue.Running > 0
			ended := view.ended.Load()
			if !busy || interruptedAt == ended {
				return 0 // idle, or a second Ctrl-C while the interrupted run is still ending
			}
			if err := e.Interrupt(ctx, watchClientID, id); err != nil {
				fmt.Fprintf(stderr, "ripple watch: interrupt: %v\n", err)
				return 1
			}
			interruptedAt = ended
			view.Interrupting()
		}
	}
}
