package batch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/notebook"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// NotebookOptions configure RunNotebooks (ripple run --notebooks).
type NotebookOptions struct {
	// Root is the project directory; Paths are notebooks or folders of
	// notebooks in it (relative to Root or absolute; none: every notebook
	// of the project, outside ignored folders such as .ipynb_checkpoints).
	Root  string
	Paths []string
	// Python, Kernels, Timeout, Observer, Logger and StopTimeout are as
	// in Options; Timeout bounds each notebook's run.
	Python      string
	Kernels     int
	Timeout     time.Duration
	Observer    Observer
	Logger      *slog.Logger
	StopTimeout time.Duration
	// KeepOutputs leaves the notebooks as they are; by default every
	// notebook run gets its outputs written back (notebook.WriteFile),
	// as `jupyter nbconvert --execute --inplace` does.
	KeepOutputs bool
}

// ErrNoNotebooks: the paths name no notebook.
var ErrNoNotebooks = errors.New("no notebooks to run")

// RunNotebooks runs notebooks headless, each a script frame
// (module:__main__ of its derived Python, package notebook) in an
// execution context of its own, up to Kernels at once over the engine's
// kernels. Each is one result: passed when every code cell ran; failed
// when a statement raised (the message names the cell and line, as
// "cell 6, line 1: NameError: ..."); error when the notebook does not
// parse or the run failed as a whole; crashed or timeout as for entries.
// The cells' outputs (stream, execute_result, display_data, error) and
// execution counts are written back into each notebook unless KeepOutputs.
func RunNotebooks(ctx context.Context, opts NotebookOptions) (*Report, error) {
	started := time.Now()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	opts.Root = root
	entries, err := findNotebooks(root, opts.Paths)
	if err != nil {
		return nil, err
	}
	kernels, err := prepare(&Options{Kernels: opts.Kernels, Timeout: opts.Timeout})
	if err != nil {
		return nil, err
	}
	kernels = min(kernels, len(entries))
	e, err := engine.New(ctx, engine.Config{Root: root, Python: opts.Python, Kernels: kernels,
		ExecuteTimeout: opts.Timeout, Batch: true, Logger: opts.Logger,
		KernelEnv: []string{notebookResultsEnv}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	stop := stopOnce(ctx, e, opts.StopTimeout)
	defer stop()
	if err := e.Start(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: while the kernels started", ErrInterrupted)
		}
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	col := newNotebookCollector()
	if _, err := e.Connect(ctx, clientID, col); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	report := &Report{Project: root, Python: e.Python(), Kernels: kernels, Timeout: opts.Timeout,
		Started: started, Results: make([]*Result, len(entries))}
	if opts.Observer != nil {
		opts.Observer.Started(entries, kernels)
	}
	nr := &notebookRun{e: e, opts: &opts, col: col, entries: entries, report: report}
	nr.runAll(ctx, kernels)
	report.Duration = time.Since(started)
	if err := stop(); err != nil {
		opts.Logger.Warn("stop engine", "err", err)
	}
	if ctx.Err() != nil {
		report.Interrupted = true
		return report, fmt.Errorf("%w: %d notebooks", ErrInterrupted, len(entries))
	}
	return report, nil
}

// notebookResultsEnv asks the kernels to show each cell's value as its
// execute_result with every mime type (notebook.py show_result), as
// nbclient on ipykernel writes it; the page and ripple watch, which show
// a notebook's values by statement, do not set it.
const notebookResultsEnv = "RIPPLE_NOTEBOOK_RESULTS=1"

// findNotebooks lists the notebooks of paths as entries (module:__main__),
// in report order.
func findNotebooks(root string, paths []string) ([]Entry, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var rels []string
	for _, p := range paths {
		abs := p
		if !filepath.IsAbs(p) {
			abs = filepath.Join(root, p)
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("%w: --notebooks %s: not inside the project %s", ErrUsage, p, root)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: --notebooks %s: %w", ErrUsage, p, err)
		}
		if !fi.IsDir() {
			if !strings.HasSuffix(abs, workspace.NotebookExt) {
				return nil, fmt.Errorf("%w: --notebooks %s: not a notebook (want a .ipynb file or a folder)", ErrUsage, p)
			}
			rels = append(rels, filepath.ToSlash(rel))
			continue
		}
		err = filepath.WalkDir(abs, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && q != abs && workspace.IgnoredDir(d.Name()) {
				return fs.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(q, workspace.NotebookExt) {
				r, _ := filepath.Rel(root, q)
				rels = append(rels, filepath.ToSlash(r))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%w: --notebooks %s: %w", ErrUsage, p, err)
		}
	}
	slices.Sort(rels)
	rels = slices.Compact(rels)
	if len(rels) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoNotebooks, strings.Join(paths, " "))
	}
	entries := make([]Entry, 0, len(rels))
	for _, rel := range rels {
		mod, ok := workspace.ModuleName(rel)
		var mp protocol.MethodPointer
		var err error
		if ok {
			mp, err = protocol.ParseMethodPointer(mod + ":__main__")
		}
		if !ok || err != nil {
			return nil, fmt.Errorf("%w: notebook %s: its path is not a Python module name (letters, digits and _ in each part, no spaces or dots): rename it", ErrUsage, rel)
		}
		entries = append(entries, Entry{Pointer: mp, Path: rel})
	}
	return entries, nil
}

// notebookRun runs a RunNotebooks's notebooks: runAll's workers take
// entries by index; each result is written to report.Results[i] and told
// to the observer in report order under mu.
type notebookRun struct {
	e       *engine.Engine
	opts    *NotebookOptions
	col     *notebookCollector
	entries []Entry

	mu      sync.Mutex
	report  *Report // Results guarded by mu
	emitted int     // guarded by mu: results told to the observer
}

// runAll runs every notebook, kernels at a time.
func (nr *notebookRun) runAll(ctx context.Context, kernels int) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range kernels {
		wg.Go(func() {
			for i := range next {
				nr.complete(i, nr.runOne(ctx, i))
			}
		})
	}
	for i := range nr.entries {
		if ctx.Err() != nil {
			nr.complete(i, &Result{Entry: nr.entries[i], Status: StatusSkipped, Message: "not run: interrupted"})
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// complete records result i and tells the observer what is next in order.
func (nr *notebookRun) complete(i int, r *Result) {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	nr.report.Results[i] = r
	obs := nr.opts.Observer
	if obs == nil {
		return
	}
	done, failing := 0, 0
	for _, r := range nr.report.Results {
		if r != nil {
			done++
			if r.Status.Failing() {
				failing++
			}
		}
	}
	for nr.emitted < len(nr.report.Results) && nr.report.Results[nr.emitted] != nil {
		obs.Result(nr.report.Results[nr.emitted])
		nr.emitted++
	}
	obs.Progress(Progress{Done: done, Total: len(nr.entries), Failing: failing, Elapsed: time.Since(nr.report.Started)})
}

// runOne runs notebook i and writes its outputs back.
func (nr *notebookRun) runOne(ctx context.Context, i int) *Result {
	en := nr.entries[i]
	path := filepath.Join(nr.opts.Root, filepath.FromSlash(en.Path))
	data, err := os.ReadFile(path)
	if err != nil {
		return &Result{Entry: en, Status: StatusError, Message: err.Error()}
	}
	nb, err := notebook.Parse(data)
	if err != nil {
		return &Result{Entry: en, Status: StatusError, Message: fmt.Sprintf("%s: %v", en.Path, err)}
	}
	script := nb.Script()
	started := time.Now()
	rec, err := nr.execute(ctx, en)
	if err != nil {
		return &Result{Entry: en, Status: StatusError, Kind: protocol.ResultFailure, Message: err.Error()}
	}
	r := notebookResult(en, nb, script, rec)
	r.Duration = time.Since(started)
	if ctx.Err() != nil && rec.ended.IsZero() {
		r.Status, r.Message = StatusInterrupted, "interrupted"
		return r
	}
	if !nr.opts.KeepOutputs {
		if err := notebook.WriteFile(path, nb); err != nil && r.Status == StatusPassed {
			r.Status, r.Message = StatusError, "write outputs: "+err.Error()
		}
	}
	return r
}

// execute runs the entry's script frame in a context of its own and waits
// for its end (or ctx).
func (nr *notebookRun) execute(ctx context.Context, en Entry) (*notebookRecord, error) {
	res, err := nr.e.CreateContext(ctx, clientID, protocol.CreateContextParams{})
	if err != nil {
		return nil, fmt.Errorf("create an execution context: %w", err)
	}
	defer func() {
		if err := nr.e.DestroyContext(context.WithoutCancel(ctx), clientID, res.ContextID); err != nil && !errors.Is(err, engine.ErrNotStarted) {
			nr.opts.Logger.Debug("destroy context", "context", res.ContextID, "err", err)
		}
	}()
	rec := nr.col.register(res.ContextID)
	if err := nr.e.Push(ctx, clientID, protocol.PushParams{ContextID: res.ContextID, StackItem: en.StackItem()}); err != nil {
		nr.col.forget(res.ContextID)
		return nil, fmt.Errorf("push %s: %w", en.ID(), err)
	}
	select {
	case <-rec.done:
	case <-ctx.Done():
		nr.col.forget(res.ContextID)
	}
	return rec, nil
}
