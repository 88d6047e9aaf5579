package batch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/notebook"
	"github.com/ripple-run/ripple/protocol"
)

// WatchNotebooks is ripple run --notebooks --watch: it runs the notebooks
// as RunNotebooks does, then keeps each one's context and, on every save
// of a notebook or of a module it imports, re-runs only the statements the
// change affects (the engine's caching, as ripple watch), so an edited cell
// runs again with what reads its names, the other cells keep their values
// and output. After each run of a notebook its outputs are written back
// (unless KeepOutputs; a write that would not change the file is skipped,
// so ripple's own writes end there) and ran is told its result. It returns
// when ctx ends (nil) or on a usage or project error.
//
// The outputs are set on the notebook as it is on disk when its run ends:
// a save made while it ran is kept, and runs again.
func WatchNotebooks(ctx context.Context, opts NotebookOptions, ran func(*Result)) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	opts.Root = root
	entries, err := findNotebooks(root, opts.Paths)
	if err != nil {
		return err
	}
	kernels, err := prepare(&Options{Kernels: opts.Kernels, Timeout: opts.Timeout})
	if err != nil {
		return err
	}
	e, err := engine.New(ctx, engine.Config{Root: root, Python: opts.Python, Kernels: min(kernels, len(entries)),
		ExecuteTimeout: opts.Timeout, Watch: true, Logger: opts.Logger,
		KernelEnv: []string{notebookResultsEnv}})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	stop := stopOnce(ctx, e, opts.StopTimeout)
	defer stop()
	if err := e.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	col := newWatchCollector()
	if _, err := e.Connect(ctx, clientID, col); err != nil {
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	byContext := make(map[protocol.ContextID]Entry, len(entries))
	started := make(map[protocol.ContextID]time.Time, len(entries))
	last := make(map[protocol.ContextID]string) // the status and message last told
	for _, en := range entries {
		res, err := e.CreateContext(ctx, clientID, protocol.CreateContextParams{})
		if err != nil {
			return fmt.Errorf("%w: create an execution context: %w", ErrProject, err)
		}
		col.register(res.ContextID)
		byContext[res.ContextID], started[res.ContextID] = en, time.Now()
		if err := e.Push(ctx, clientID, protocol.PushParams{ContextID: res.ContextID, StackItem: en.StackItem()}); err != nil {
			return fmt.Errorf("%w: push %s: %w", ErrProject, en.ID(), err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-col.ends:
			rec := col.snapshot(id)
			if rec == nil {
				continue
			}
			r, wrote := watchResult(opts, byContext[id], rec)
			r.Duration = rec.ended.Sub(started[id])
			started[id] = time.Now() // the next run's start is unknown: time from this end
			if said := string(r.Status) + r.Message; wrote || said != last[id] {
				last[id] = said
				ran(r) // a run after ripple's own write, which changed nothing, is not told
			}
		}
	}
}

// watchResult is the result of a notebook's latest run, its outputs
// written back unless they are already there (wrote says whether they
// were not).
func watchResult(opts NotebookOptions, en Entry, rec *notebookRecord) (r *Result, wrote bool) {
	path := filepath.Join(opts.Root, filepath.FromSlash(en.Path))
	data, err := os.ReadFile(path)
	if err != nil {
		return &Result{Entry: en, Status: StatusError, Message: err.Error()}, false
	}
	nb, err := notebook.Parse(data)
	if err != nil {
		return &Result{Entry: en, Status: StatusError, Message: fmt.Sprintf("%s: %v", en.Path, err)}, false
	}
	r = notebookResult(en, nb, nb.Script(), rec)
	if opts.KeepOutputs {
		return r, false
	}
	out, err := nb.Marshal()
	if err == nil && !bytes.Equal(out, data) {
		err, wrote = notebook.WriteFile(path, nb), true
	}
	if err != nil && r.Status == StatusPassed {
		r.Status, r.Message = StatusError, "write outputs: "+err.Error()
	}
	return r, wrote
}
