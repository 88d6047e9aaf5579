package batch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ripple-run/ripple/workspace"
)

// ErrSyntax: a saved module does not parse. A watch keeps running the
// code it had and waits for the next save.
var ErrSyntax = errors.New("syntax error")

// hotSession is what a watch's last clean run left in its kernels: every
// kernel of workers has its pytest session open on the same collection,
// items (the whole suite: a watch's runs always collect it), made with
// args. The pool's goroutine owns it.
type hotSession struct {
	args    []string
	items   []testItem
	workers int
	// junit and cache: pytest's --junitxml and cache plugin in the
	// sessions (nil: off), which each re-run writes as a run does; suite:
	// the sessions' collection.
	junit *PytestJUnitXML
	cache *pytestCache
	suite suite
	// console: how the sessions' console is laid out (console_layout.go);
	// a re-run prints no header (its tests are not a collection).
	console PytestStart
}

// hot is a watch's hot path for saved library modules (not test modules,
// conftest.py or configuration): every kernel diffs each file against the
// source it imported and, when only function bodies changed and none of
// them ran at import, collection or in a fixture wider than a test (or
// under a cache), replaces those functions' code in place
// (kernel/python/ripple_kernel/watchfn.py); then the tests that any kernel saw
// reach a changed function run again in the open sessions.
//
// why is not "" when the change must take the module path instead (the
// caller purges and re-collects: whatever a kernel patched is discarded
// with the modules). err is ErrSyntax when a file does not parse; rep
// has no results when no test reached a changed function.
//
// The re-run keeps the sessions open and runs the items again, rather
// than a new pytest session restricted to the node ids in the warm
// kernels, by measurement (bench/watchtests/rerun.py: 3 cheap sympy tests,
// in one process, the two ways alternated; 2-core machine under another
// session's load, so minima are the steadier figure): test_sets.py (111
// tests) new session median 57 ms / min 48 ms against items 38 / 33 ms,
// again 91 / 75 against 58 / 43 ms; test_boolalg.py (82 tests) 159 / 96
// against 33 / 29 ms over 31 rounds (49 / 43 against 57 / 33 over 15).
// A new session pays pytest's configuration and the collection of the
// affected modules (Function items, fixture closures) on every save, and
// that grows with the module; the open session's items pay only their own
// setup and teardown (runtestprotocol resets an item's request after each
// run, which pytest-rerunfailures relies on too).
func (p *testPool) hot(ctx context.Context, opts Options, files []hotFile) (rep *Report, why string, err error) {
	s := p.session
	if s == nil {
		return nil, "the last run left no open sessions", nil
	}
	began := time.Now()
	ws := p.workers[:s.workers]
	answers := make([]hotAnswer, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w.k == nil {
				errs[i] = fmt.Errorf("kernel %s is not up", w.name())
				return
			}
			raw, err := w.k.Call(ctx, pytestMethod, hotRequest{Op: opHot, Files: files}, nil)
			if err == nil {
				err = json.Unmarshal(raw, &answers[i])
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		p.session = nil
		if ctx.Err() != nil {
			return nil, "", fmt.Errorf("%w: while the kernels patched", ErrInterrupted)
		}
		return nil, err.Error(), nil
	}
	tests := map[string]bool{}
	for _, a := range answers {
		if a.SyntaxError != "" {
			return nil, "", fmt.Errorf("%w: %s", ErrSyntax, a.SyntaxError)
		}
	}
	for _, a := range answers {
		if a.Fallback != "" {
			return nil, a.Fallback, nil
		}
		for _, id := range a.Tests {
			tests[id] = true
		}
	}
	opts.Logger.Debug("hot patch", "changed", answers[0].Changed, "moved", len(answers[0].Moved), "tests", len(tests), "took", time.Since(began))
	var indices []int
	for i, it := range s.items {
		if tests[it.NodeID] {
			indices = append(indices, i)
		}
	}
	if len(indices) == 0 {
		return &Report{Project: p.root, Python: p.python, Kernels: len(ws), Started: time.Now()}, "", nil
	}
	rep, err = p.rerun(ctx, opts, s, indices)
	opts.Logger.Debug("hot re-run", "tests", len(indices), "took", time.Since(began))
	rep.PytestJUnitXML = s.junit
	if s.cache != nil && !rep.Interrupted {
		// As a run's end (testPool.run) writes it.
		err = cmp.Or(err, writePytestCache(s.cache, s.suite, rep, 0, false))
	}
	return rep, "", err
}

// rerun runs the items indices (in collection order) of the open sessions
// s again, on its kernels, handed out by module as in a run.
func (p *testPool) rerun(ctx context.Context, opts Options, s *hotSession, indices []int) (*Report, error) {
	started := time.Now()
	ws := p.workers[:s.workers]
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t := newTestRun(&opts, p.python, p.root, s.args, len(ws), runFlags{watch: true, keep: true}, cancel)
	t.shares = 1
	t.shareItems = [][]testItem{s.items}
	t.entryOf = []map[int]int{{}}
	t.open = len(ws)
	t.holders = []int{len(ws)}
	for _, w := range ws {
		w.t = t
		w.setShare(0)
		w.setSteal(nil)
	}
	items := make([]sharedItem, 0, len(indices))
	for j, i := range indices {
		it := s.items[i]
		t.entries = append(t.entries, it.entry())
		t.entryOf[0][i] = j
		items = append(items, sharedItem{it, 0, i})
	}
	t.queue = scopeGroups(items)
	t.results = make(chan indexedResult, len(t.entries)+4*len(ws))
	if h, ok := opts.Observer.(PytestObserver); ok {
		start := s.console
		start.Header, start.Deselected, start.warnings = "", 0, nil
		h.PytestStarted(start)
	}
	c := t.startReport(started, nil)
	err := t.drive(ctx, runCtx, ws, c)
	if !t.clean() {
		p.session = nil
	}
	return c.report, err
}

// hotCandidates are the changed files the hot path may take: modified
// .py files that are not test modules (by deps, the modules the last
// collection found, or pytest's default names) nor conftest.py. ok is
// false when any change is something else (added, removed, a test module,
// a conftest.py): the whole batch then takes the module path.
func hotCandidates(deps map[string][]string, changes []workspace.Change) (paths []string, ok bool) {
	for _, c := range changes {
		base := c.Path[strings.LastIndex(c.Path, "/")+1:]
		if !strings.HasSuffix(c.Path, ".py") {
			continue
		}
		_, test := deps[c.Path]
		if c.Kind != workspace.Modified || test || base == "conftest.py" || strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") {
			return nil, false
		}
		paths = append(paths, c.Path)
	}
	sort.Strings(paths)
	return paths, len(paths) > 0
}
