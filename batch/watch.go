package batch

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ripple-run/ripple/workspace"
)

// WatchHooks tell the caller of Watch about its runs. They are called
// from Watch's goroutine, one at a time.
type WatchHooks struct {
	// Observer returns the observer of the next run (a new Console).
	Observer func() Observer
	// Ran is told each run's report (nil when the run could not start)
	// and error, and the changed files that caused it (none for the
	// first run).
	Ran func(rep *Report, err error, changed []string)
	// Skipped is told the changed files no test depends on: no test
	// module imports them, or (the hot path) no test reached a function
	// whose body changed.
	Skipped func(changed []string)
	// Fallback is told why a change of library modules could not take
	// the hot path (function granularity): the module path follows.
	Fallback func(changed []string, why string)
}

// configFiles are pytest's configuration files: a change to one re-runs
// every test.
var configFiles = []string{"pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", ".pytest.ini"}

// Watch is ripple run --tests --watch: it runs the tests (Options.Tests
// must be set) and then re-runs, on each burst of changes saved in the
// project, the tests that depend on them; until ctx ends, which is not an
// error. The kernels stay up between runs (imports of installed packages
// are paid once) and record, during every run, which project functions
// each test reached (kernel/python/ripple_kernel/watchfn.py).
//
// A change takes one of three paths:
//
//   - hot (function granularity, hot.go): library modules (not test
//     modules, conftest.py or configuration) whose saved source differs
//     from what the kernels run only in function or method bodies, none
//     of which ran at import, collection, in a fixture wider than a test
//     or under a cache. Each kernel replaces those functions' code in
//     place and the tests any kernel saw reach one of them run again in
//     the kernels' open pytest sessions; the others are not re-run. A
//     module that does not parse is reported (ErrSyntax) and the kernels
//     keep the code they had, so the next save is diffed against it.
//   - module (the fallback, and every change the hot path does not
//     take): the tests of the test modules that import a changed file,
//     directly or through other project modules (conftest.py files
//     included), after the kernels forgot the project's modules; a new
//     pytest session that collects the whole suite as the first run did
//     (so that the sessions it leaves open hold every test) and runs those
//     modules' tests. It discards what the hot path patched.
//   - all: a configuration file changed: every test, after the purge.
//
// What the hot path does not see, and so does not guard against: state
// that earlier runs left in project modules (a global a test changed, a
// cache other than functools'-style ones found at collection, a
// generator suspended in old code), and function objects copied from a
// function's code rather than wrapping it; a new pytest session (the
// module path) would start from a fresh import. A test during which
// something replaced the recorder is re-run on every hot change.
//
// The record of which test reached what is the kernels' (each holds that
// of the tests it ran, and keeps it across purges: it names functions by
// path and qualname); Watch owns the module-level map (deps) and asks the
// kernels for the rest on each hot change. A run that did not end cleanly
// (stopped, a kernel replaced: its record is lost) leaves no open
// sessions, and later changes take the module path.
func Watch(ctx context.Context, opts Options, hooks WatchHooks) error {
	kernels, err := prepareWatch(&opts)
	if err != nil {
		return err
	}
	p, err := newTestPool(ctx, opts, kernels)
	if err != nil {
		return err
	}
	defer p.stop(context.WithoutCancel(ctx))
	batches, stop, err := watchProject(ctx, p.root, opts.Logger)
	if err != nil {
		return err
	}
	defer stop()
	w := &watch{opts: opts, hooks: hooks, pool: p, deps: map[string][]string{}}
	w.run(ctx, false, nil, nil)
	for {
		select {
		case <-ctx.Done():
			return nil
		case b, ok := <-batches:
			if !ok {
				return nil
			}
			w.change(ctx, b)
		}
	}
}

// prepareWatch checks opts for a watch and fills in its defaults; kernels
// is how many kernels the watch keeps.
func prepareWatch(opts *Options) (kernels int, err error) {
	if !opts.Tests || len(opts.Entries) > 0 {
		return 0, fmt.Errorf("%w: --watch runs the tests: it needs --tests and no --entry", ErrUsage)
	}
	if opts.Agents != nil {
		return 0, fmt.Errorf("%w: --watch over agents is not built (docs/scale-out.md)", ErrUsage)
	}
	if opts.ShowValues {
		return 0, fmt.Errorf("%w: --show-values shows the statements' values of --entry runs; with --tests, pytest's report of a failure shows its values", ErrUsage)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	kernels = opts.Kernels
	if kernels == 0 {
		kernels = runtime.NumCPU()
	}
	return kernels, nil
}

// watchProject watches the project at root for saved changes, in bursts;
// stop stops the watcher and closes the workspace.
func watchProject(ctx context.Context, root string, log *slog.Logger) (batches <-chan workspace.Batch, stop func(), _ error) {
	ws, err := workspace.Open(root, workspace.Options{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	// A short debounce: an editor's save is one write (or a write and a
	// rename), and the hot path's whole budget is ~100 ms.
	watcher := workspace.NewWatcher(ws, workspace.WatchOptions{Debounce: watchDebounce})
	if err := watcher.Start(ctx); err != nil {
		ws.Close()
		return nil, nil, fmt.Errorf("%w: watch %s: %w", ErrProject, root, err)
	}
	return watcher.Batches(), func() {
		watcher.Stop(context.WithoutCancel(ctx))
		ws.Close()
	}, nil
}

// watch is the state of a Watch between its runs. Watch's goroutine
// only.
type watch struct {
	opts  Options
	hooks WatchHooks
	pool  *testPool
	// deps: test module -> the project files it imports (itself
	// included), from the last run that collected it.
	deps map[string][]string
}

// observer is the options of the next run, with its own observer.
func (w *watch) observer() Options {
	o := w.opts
	if w.hooks.Observer != nil {
		o.Observer = w.hooks.Observer()
	}
	return o
}

// ran writes pytest's --junitxml of a run, as a run without --watch does
// (every run of the watch rewrites it), and tells the Ran hook of the
// run, unless the watch is ending.
func (w *watch) ran(ctx context.Context, rep *Report, err error, changed []string) {
	if rep != nil && rep.PytestJUnitXML != nil {
		err = cmp.Or(err, WritePytestJUnit(rep.PytestJUnitXML, rep))
	}
	if w.hooks.Ran != nil && ctx.Err() == nil {
		w.hooks.Ran(rep, err, changed)
	}
}

func (w *watch) skipped(changed []string) {
	if w.hooks.Skipped != nil {
		w.hooks.Skipped(changed)
	}
}

// run is a run of the module path (the first run: of every test): a new
// collection of the whole suite, purged of the project's modules after
// the first, running the tests of the test files only (nil: all).
func (w *watch) run(ctx context.Context, purge bool, changed []string, only map[string]bool) {
	rep, d, err := w.pool.run(ctx, w.observer(), w.opts.PytestArgs, runFlags{purge: purge, deps: true, keep: true, watch: true, only: only})
	maps.Copy(w.deps, d)
	w.ran(ctx, rep, err, changed)
}

// change handles a burst of saved changes: a configuration file re-runs
// every test; else the tests that depend on the changed Python files
// re-run, by the hot path when it can take the change, else by the
// module path.
func (w *watch) change(ctx context.Context, b workspace.Batch) {
	changed, all := changedFiles(b.Changes)
	if len(changed) == 0 {
		return
	}
	if all {
		w.run(ctx, true, changed, nil)
		return
	}
	affected := affectedTests(w.deps, b.Changes)
	if len(affected) == 0 {
		w.skipped(changed)
		return
	}
	if files, ok := hotCandidates(w.deps, b.Changes); ok && w.hot(ctx, files, changed) {
		return
	}
	only := map[string]bool{}
	for _, a := range affected {
		only[a] = true
	}
	w.run(ctx, true, changed, only)
}

// hot tries the hot path for the saved library modules files; false when
// the change must take the module path (the Fallback hook is told why).
func (w *watch) hot(ctx context.Context, files, changed []string) bool {
	rep, why, err := hotChange(ctx, w.pool, w.observer, files)
	if why != "" {
		w.opts.Logger.Info("module path", "changed", changed, "why", why)
		if w.hooks.Fallback != nil {
			w.hooks.Fallback(changed, why)
		}
		return false
	}
	if err == nil && rep != nil && len(rep.Results) == 0 {
		w.skipped(changed)
		return true
	}
	w.ran(ctx, rep, err, changed)
	return true
}

// changedFiles are the changed Python and configuration files of a burst;
// all: a configuration file changed.
func changedFiles(changes []workspace.Change) (changed []string, all bool) {
	for _, c := range changes {
		switch {
		case slices.Contains(configFiles, path.Base(c.Path)):
			all = true
		case !strings.HasSuffix(c.Path, ".py"):
			continue
		}
		changed = append(changed, c.Path)
	}
	return changed, all
}

// watchDebounce is how long the project must stay quiet after a save
// before a watch acts on it.
const watchDebounce = 20 * time.Millisecond

// hotChange reads the saved files and tries the hot path (testPool.hot);
// a file that cannot be read sends the change down the module path.
func hotChange(ctx context.Context, p *testPool, observer func() Options, paths []string) (*Report, string, error) {
	files := make([]hotFile, 0, len(paths))
	for _, rel := range paths {
		data, err := os.ReadFile(filepath.Join(p.root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", rel, err), nil
		}
		files = append(files, hotFile{Path: rel, Source: string(data)})
	}
	if p.session == nil {
		return nil, "the last run did not leave its sessions open (not clean)", nil
	}
	return p.hot(ctx, observer(), files)
}

// affectedTests are the test modules that import a changed file, and the
// added or changed files that are test modules pytest would collect by
// its default names (test_*.py, *_test.py), sorted.
func affectedTests(deps map[string][]string, changes []workspace.Change) []string {
	set := map[string]bool{}
	for _, c := range changes {
		if !strings.HasSuffix(c.Path, ".py") {
			continue
		}
		if c.Kind == workspace.Removed {
			delete(deps, c.Path) // a test module gone: nothing to run for it
		}
		for test, ds := range deps {
			if slices.Contains(ds, c.Path) {
				set[test] = true
			}
		}
		base := path.Base(c.Path)
		if _, known := deps[c.Path]; !known && c.Kind != workspace.Removed &&
			(strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) {
			set[c.Path] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}
