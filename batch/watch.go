package batch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"

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
	// Skipped is told the changed files no test depends on.
	Skipped func(changed []string)
}

// configFiles are pytest's configuration files: a change to one re-runs
// every test.
var configFiles = []string{"pytest.ini", "pyproject.toml", "setup.cfg", "tox.ini", ".pytest.ini"}

// Watch is ripple run --tests --watch: it runs the tests (Options.Tests
// must be set) and then, on each change saved in the project, the tests
// of the test modules that import a changed file, directly or through
// other project modules (conftest.py files included), or every test when
// a configuration file changed; until ctx ends, which is not an error.
//
// The kernels stay up between runs (imports of installed packages are
// paid once); each run is a new pytest session in them, after the
// kernels forgot the project's own modules, so that it sees the code as
// saved.
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
	watcher := workspace.NewWatcher(ws, workspace.WatchOptions{})
	if err := watcher.Start(ctx); err != nil {
		return fmt.Errorf("%w: watch %s: %w", ErrProject, p.root, err)
	}
	defer watcher.Stop(context.WithoutCancel(ctx))

	// deps: test module -> the project files it imports (itself
	// included), from the last run that collected it.
	deps := map[string][]string{}
	runOnce := func(args []string, purge bool, changed []string, modules int) {
		o := opts
		if hooks.Observer != nil {
			o.Observer = hooks.Observer()
		}
		rep, d, err := p.run(ctx, o, args, runFlags{purge: purge, deps: true, keep: true, kernels: modules})
		for k, v := range d {
			deps[k] = v
		}
		if hooks.Ran != nil && ctx.Err() == nil {
			hooks.Ran(rep, err, changed)
		}
	}
	runOnce(opts.PytestArgs, false, nil, 0)
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
			runOnce(opts.PytestArgs, true, changed, 0)
			continue
		}
		affected := affectedTests(deps, b.Changes)
		if len(affected) == 0 {
			if hooks.Skipped != nil {
				hooks.Skipped(changed)
			}
			continue
		}
		// The options of the first run (-k, -m, what followed --), the
		// affected modules instead of its paths.
		args := append(optionArgs(opts.PytestArgs), affected...)
		runOnce(args, true, changed, len(affected))
	}
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

// optionArgs drops the positional arguments (paths, node ids) of a pytest
// command line, keeping its options and their values. An option's value
// is taken as the next argument when the option is one of pytest's that
// take one and is not written -o=value.
func optionArgs(args []string) []string {
	withValue := map[string]bool{"-k": true, "-m": true, "-p": true, "-o": true, "-c": true, "-W": true, "--maxfail": true,
		"--rootdir": true, "--confcutdir": true, "--deselect": true, "--ignore": true, "--ignore-glob": true, "--basetemp": true,
		"--override-ini": true, "--import-mode": true, "--tb": true, "-r": true, "--durations": true, "--junitxml": true, "--log-level": true}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		out = append(out, a)
		if withValue[a] && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}
