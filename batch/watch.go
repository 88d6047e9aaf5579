package batch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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
// each test reached (kernel/python/ripple_watchfn.py).
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
	if !opts.Tests || len(opts.Entries) > 0 {
		return fmt.Errorf("%w: --watch runs the tests: it needs --tests and no --entry", ErrUsage)
	}
	if opts.Agents != nil {
		return fmt.Errorf("%w: --watch over agents is not built (docs/scale-out.md)", ErrUsage)
	}
	if opts.ShowValues {
		return fmt.Errorf("%w: --show-values shows the statements' values of --entry runs; with --tests, pytest's report of a failure shows its values", ErrUsage)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	kernels := opts.Kernels
	if kernels == 0 {
		kernels = runtime.NumCPU()
	}
	p, err := newTestPool(ctx, opts, kernels)
	if err != nil {
		return err
	}
	defer p.stop(context.WithoutCancel(ctx))
	ws, err := workspace.Open(p.root, workspace.Options{Logger: opts.Logger})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	defer ws.Close()
	// A short debounce: an editor's save is one write (or a write and a
	// rename), and the hot path's whole budget is ~100 ms.
	watcher := workspace.NewWatcher(ws, workspace.WatchOptions{Debounce: watchDebounce})
	if err := watcher.Start(ctx); err != nil {
		return fmt.Errorf("%w: watch %s: %w", ErrProject, p.root, err)
	}
	defer watcher.Stop(context.WithoutCancel(ctx))

	// deps: test module -> the project files it imports (itself
	// included), from the last run that collected it.
	deps := map[string][]string{}
	observer := func() Options {
		o := opts
		if hooks.Observer != nil {
			o.Observer = hooks.Observer()
		}
		return o
	}
	ran := func(rep *Report, err error, changed []string) {
		if hooks.Ran != nil && ctx.Err() == nil {
			hooks.Ran(rep, err, changed)
		}
	}
	runOnce := func(purge bool, changed []string, only map[string]bool) {
		rep, d, err := p.run(ctx, observer(), opts.PytestArgs, runFlags{purge: purge, deps: true, keep: true, watch: true, only: only})
		for k, v := range d {
			deps[k] = v
		}
		ran(rep, err, changed)
	}
	runOnce(false, nil, nil)
	for {
		var b workspace.Batch
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case b, ok = <-watcher.Batches():
			if !ok {
				return nil
			}
		}
		var changed []string
		all := false
		for _, c := range b.Changes {
			switch {
			case slices.Contains(configFiles, path.Base(c.Path)):
				all = true
			case !strings.HasSuffix(c.Path, ".py"):
				continue
			}
			changed = append(changed, c.Path)
		}
		if len(changed) == 0 {
			continue
		}
		if all {
			runOnce(true, changed, nil)
			continue
		}
		affected := affectedTests(deps, b.Changes)
		if len(affected) == 0 {
			if hooks.Skipped != nil {
				hooks.Skipped(changed)
			}
			continue
		}
		if files, ok := hotCandidates(deps, b.Changes); ok {
			rep, why, err := hotChange(ctx, p, observer, files)
			if why == "" {
				if err == nil && rep != nil && len(rep.Results) == 0 {
					if hooks.Skipped != nil {
						hooks.Skipped(changed)
					}
					continue
				}
				ran(rep, err, changed)
				continue
			}
			opts.Logger.Info("module path", "changed", changed, "why", why)
			if hooks.Fallback != nil {
				hooks.Fallback(changed, why)
			}
		}
		only := map[string]bool{}
		for _, a := range affected {
			only[a] = true
		}
		runOnce(true, changed, only)
	}
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
