package batch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// Errors of a test run (ripple run --tests) beyond those of Run.
var (
	// ErrCollection: pytest reported errors while collecting, and, as
	// pytest does without --continue-on-collection-errors, no test ran.
	ErrCollection = errors.New("errors during collection")
	// ErrNoPytest: the interpreter cannot import pytest and the project
	// has tests written for pytest.
	ErrNoPytest = errors.New("pytest is not installed")
	// ErrNoTests: nothing was collected (pytest's exit status 5).
	ErrNoTests = errors.New("no tests collected")
	// ErrStopped: pytest stopped the session (-x, --maxfail).
	ErrStopped = errors.New("stopped")
)

// testItem is one collected item or collection report, as the kernel's
// ripple_pytest.py answers it.
type testItem struct {
	NodeID   string    `json:"nodeid"`
	Path     string    `json:"path"`
	Line     int       `json:"line"` // 0-based as pytest's location; -1 unknown
	Scope    string    `json:"scope"`
	JUnit    [2]string `json:"junit"`
	Status   string    `json:"status"` // collection reports only
	Message  string    `json:"message"`
	Longrepr string    `json:"longrepr"`
	// With split collection (split.go): the index of the item's (the
	// report's) file in the kernel's Files (-1: none), and for a report
	// how many files collection had reached when it came.
	File int `json:"file"`
	Pos  int `json:"pos"`
}

type collectAnswer struct {
	NoPytest    string      `json:"noPytest"`
	Python      string      `json:"python"`
	NeedsPytest [][2]string `json:"needsPytest"`
	Usage       string      `json:"usage"`
	Interrupted string      `json:"interrupted"`
	Count       int         `json:"count"`
	// Items and CollectReports come as progress frames (a result is
	// capped at 64 KiB).
	Items          []testItem          `json:"-"`
	CollectReports []testItem          `json:"-"`
	Deps           map[string][]string `json:"-"` // test module -> the project files it imports
	// Split collection (split.go): the kernel's account, and the test
	// files collection reached, in order, with each one's share (-1:
	// every kernel collects it).
	Split       *splitAnswer `json:"split"`
	Files       []string     `json:"-"`
	Owners      []int        `json:"-"`
	Continue    bool         `json:"continueOnCollectionErrors"`
	CollectOnly bool         `json:"collectOnly"`
	Stopped     string       `json:"stopped"`
}

// testEvent is a progress frame of the kernel method "pytest".
type testEvent struct {
	Event    string      `json:"event"` // start or end
	I        int         `json:"i"`
	Status   string      `json:"status"`
	Message  string      `json:"message"`
	Longrepr string      `json:"longrepr"`
	Stdout   string      `json:"stdout"`
	Stderr   string      `json:"stderr"`
	Sections [][2]string `json:"sections"`
	Duration float64     `json:"duration"`
}

type runAnswer struct {
	Stopped string `json:"stopped"`
	// Clash: a session- or package-scoped fixture failed in this session
	// while other sessions ran (yieldWide): the kernel reported neither
	// the test whose setup failed nor the rest of the call (clash).
	Clash string `json:"clash"`
}

// errTestTimeout is the cause of a call cancelled because its running
// test passed Options.Timeout.
var errTestTimeout = errors.New("test timed out")

// testRun is one ripple run --tests: pytest in every kernel, the tests
// handed out by scope group.
//
// Ownership: the workers (one goroutine per kernel) own their kernel; the
// scheduling state below mu is shared by them; results go from the
// workers (and their kernels' reader goroutines) to Run's goroutine over
// results, which owns the report and the observer.
//
// Scheduling invariant: a worker whose pytest session is open (counted in
// open) may still put tests back in the queue: those its kernel held when
// it died, or when its agent was lost. So a worker that finds the queue
// empty finishes its own session and then waits (more) until a group is
// put back or no session is open any more; only then does it end. Every
// change of queue, open, holders or stopped broadcasts more.
//
// With split collection (split.go) a session has one share of the suite
// and runs only that share's groups; a worker without a session takes a
// group of a share no open session holds (holders: the share's kernel is
// gone), collecting that share itself, else steals a group of a share
// that has more than one left, collecting only its module.
type testRun struct {
	opts    *Options
	python  kernel.Interpreter
	root    string
	args    []string
	workers int
	unit    bool // pytest is missing: unittest's loader runs the tests
	// split: each session collects one share of the shares (split.go);
	// without split there is one share, the whole suite, in every session.
	split  bool
	shares int
	// shareItems: per share, its collection: a kernel that collects the
	// share again must agree. entryOf: per share, kernel index -> entry
	// index. Both are written before the workers run, then only read.
	shareItems [][]testItem
	entryOf    []map[int]int
	// indexOf: per share (with split), node id -> kernel index; files:
	// the File collectors' node ids in collection order (testItem.File).
	indexOf []map[string]int
	files   []string

	entries []Entry
	results chan indexedResult

	mu      sync.Mutex
	more    *sync.Cond  // on mu
	queue   []testGroup // guarded by mu: groups not started, in collection order
	open    int         // guarded by mu: workers whose session is open
	holders []int       // guarded by mu: per share, the open sessions that collected it
	stopped bool        // guarded by mu
	// rerun: guarded by mu: entry index -> the agent lost while that
	// test ran; such a test is run again once, elsewhere.
	rerun map[int]string
	// gone: guarded by mu: why workers ended before the run did (a
	// kernel that could not be replaced, an agent lost); the tests left
	// unrun when no worker is left are reported with it.
	gone   []string
	cancel context.CancelCauseFunc // ends every kernel's call: Ctrl-C, --fail-fast, -x
	flags  runFlags
	// lost: guarded by mu: a kernel was replaced during the run; what its
	// predecessor recorded for --watch's hot path is gone.
	lost bool
	// running: the workers run the tests (set before they start): a
	// collection from then on (a kernel replaced, a stolen module) is
	// not the run's first, so it does not purge or report dependencies.
	running bool
}

// testGroup is tests that run in one session, in this order: indices into
// the collection of share.
type testGroup struct {
	share   int
	indices []int
}

type indexedResult struct {
	i int
	r *Result
}

// next takes the next group for a worker: with its session open (on
// share), the next group of that share, else none; without a session, the
// next group of a share no session holds, else (split) a group to steal,
// else it waits while sessions are open (they may put tests back, or end).
// steal: the group is of a share another session holds; the worker
// collects only its module (split.go). false when the run stops or nothing
// is left for it (see testRun).
func (t *testRun) next(share int, open bool) (g testGroup, steal, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for !t.stopped {
		for i, g := range t.queue {
			if (open && g.share != share) || (!open && t.holders[g.share] > 0 && t.split) {
				continue
			}
			t.queue = slices.Delete(t.queue, i, i+1)
			return g, false, true
		}
		if !open && t.split {
			// Work stealing: the first (largest) group of a share that
			// has more than one left, so that its own kernel, which
			// needs no new session, keeps at least one: a steal costs a
			// session and the module's import, and the run ends only when
			// the thief's session does.
			left := make([]int, len(t.holders))
			for _, g := range t.queue {
				left[g.share]++
			}
			for i, g := range t.queue {
				if left[g.share] > 1 {
					t.queue = slices.Delete(t.queue, i, i+1)
					return g, true, true
				}
			}
		}
		if open || t.open == 0 {
			break
		}
		t.more.Wait()
	}
	return testGroup{}, false, false
}

// retire takes a session whose wide fixture failed (testWorker.clash) out
// of the run when another session is still open: g, its tests not yet
// reported, goes back to the queue for the others, and the session no
// longer counts as open (the worker must not call closed). false when it
// is the last open session (or the run stops): it runs them itself.
func (t *testRun) retire(g testGroup) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.open < 2 {
		return false
	}
	if len(g.indices) > 0 {
		t.queue = append([]testGroup{g}, t.queue...)
	}
	t.open--
	t.holders[g.share]--
	t.more.Broadcast()
	return true
}

// othersOpen reports whether another session than the caller's is open.
func (t *testRun) othersOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open > 1
}

// requeue puts back the tests of a group a dead kernel (or a lost agent)
// did not run.
func (t *testRun) requeue(g testGroup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = append([]testGroup{g}, t.queue...)
	t.more.Broadcast()
}

// opened and closed count the workers' open sessions, by share.
func (t *testRun) opened(share int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open++
	t.holders[share]++
}

func (t *testRun) closed(share int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open--
	t.holders[share]--
	t.more.Broadcast()
}

// replaced records that a worker's kernel is being replaced.
func (t *testRun) replaced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lost = true
}

// clean reports whether the run left every kernel's session open and
// whole, with what each test reached recorded: it ran to its end (not
// stopped, no worker gone, no kernel replaced), without split collection
// or unittest. Only then can a watch's hot path use the sessions.
func (t *testRun) clean() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.stopped && !t.lost && len(t.gone) == 0 && !t.split && !t.unit
}

// left records why a worker ended before the run.
func (t *testRun) left(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = append(t.gone, why)
}

// lostWhileRunning records that test (entry) i was running when agent was lost;
// it returns the agent lost the first time when this is the second.
func (t *testRun) lostWhileRunning(i int, agent string) (before string, again bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if before, again = t.rerun[i]; !again {
		t.rerun[i] = agent
	}
	return before, again
}

// stop ends the run: no group starts, running calls are interrupted.
func (t *testRun) stop(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		t.cancel(cause)
		t.more.Broadcast()
	}
}

func (t *testRun) isStopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

// runTests is Run with Options.Tests: pytest's session runs in every
// kernel (kernel/python/ripple_pytest.py); each kernel collects, the
// collections must agree (as pytest-xdist's workers' must), then the
// scope groups go to the kernels as they free up.
func runTests(ctx context.Context, opts Options, workers int) (*Report, error) {
	p, err := newTestPool(ctx, opts, workers)
	if err != nil {
		return nil, err
	}
	defer p.stop(ctx)
	rep, _, err := p.run(ctx, opts, opts.PytestArgs, runFlags{})
	return rep, err
}

// testPool is the kernels of test runs: one run (runTests), or every run
// of a watch (Watch), which keeps them warm in between. Run's goroutine
// (or Watch's) owns it.
//
// Its kernels are children of this process (kernel.Start), or, with
// Options.Agents, the kernels of the launcher's slots: the agents'
// kernels and the launcher's local ones. A worker then drives one slot:
// the launcher (an agent's pool, or the local pool) replaces a kernel
// that dies, and the worker takes the slot's next kernel.
type testPool struct {
	python  kernel.Interpreter
	root    string
	workers []*testWorker
	slots   engine.Kernels // the launcher's slots; nil: children
	stopTO  time.Duration
	// session: the open pytest sessions a watch's last run left in the
	// kernels, for the hot path (hot.go); nil when that run was not clean
	// (testRun.clean), which sends the next change down the module path.
	session *hotSession
}

// replaceTimeout bounds the wait for a slot's next kernel after one died
// or was restarted (an agent's pool starts it with backoff): a run never
// waits forever for a kernel.
const replaceTimeout = time.Minute

func newTestPool(ctx context.Context, opts Options, workers int) (*testPool, error) {
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	py, err := kernel.FindPython(ctx, opts.Python, root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	p := &testPool{python: py, root: root, stopTO: cmp.Or(opts.StopTimeout, 10*time.Second)}
	if opts.Agents != nil {
		slots, err := p.startSlots(ctx, opts, workers)
		if err != nil {
			return nil, err
		}
		for i, slot := range slots {
			p.workers = append(p.workers, &testWorker{id: i, slots: p.slots, slot: slot})
		}
		return p, nil
	}
	p.workers = make([]*testWorker, workers)
	for i := range p.workers {
		p.workers[i] = &testWorker{id: i, slot: -1}
	}
	return p, nil
}

// startSlots starts the agents launcher's slots, waits for n agent
// kernels and returns the slots that have a kernel ready then (local
// ones first): every kernel of every agent connected by then, and the
// launcher's local kernels. Agents that connect later serve no test of
// this run.
func (p *testPool) startSlots(ctx context.Context, opts Options, n int) ([]int, error) {
	p.slots = opts.Agents.Kernels(kernel.PoolConfig{
		Kernel: kernel.Config{Python: p.python, Root: p.root},
		Size:   opts.Agents.Size(),
		// As in a batch run of entries: no spare, and a local slot that
		// cannot start a kernel gives up rather than wait forever.
		NoSpare:          true,
		MaxStartFailures: 3,
	})
	if err := p.slots.Start(ctx); err != nil {
		p.stop(ctx)
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	opts.Logger.Info("waiting for agent kernels", "kernels", n)
	if err := opts.Agents.WaitKernels(ctx, n); err != nil {
		p.stop(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: while waiting for agent kernels", ErrInterrupted)
		}
		return nil, fmt.Errorf("%w: agents: %w", ErrProject, err)
	}
	// A local slot may still be starting its kernel (its worker waits for
	// it); an agent slot counts once its kernel is ready.
	ak, _ := p.slots.(engine.AgentKernels)
	var slots []int
	for _, st := range p.slots.Status() {
		local := ak == nil || ak.SlotAgent(st.Slot) == nil
		if (local && !p.slots.Retired(st.Slot)) || st.State == kernel.StateReady || st.State == kernel.StateBusy {
			slots = append(slots, st.Slot)
		}
	}
	slices.Sort(slots)
	opts.Logger.Debug("agent kernels ready", "slots", slots)
	return slots, nil
}

// stop stops every kernel; with agents, it tells them to shut down.
func (p *testPool) stop(ctx context.Context) {
	for _, w := range p.workers {
		w.stopKernel(ctx)
	}
	if p.slots != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.stopTO)
		defer cancel()
		p.slots.Stop(sctx)
	}
}

// runFlags say what a run of a pool does beyond running the tests.
type runFlags struct {
	// purge: the kernels forget the project's modules first (a watch's
	// later runs: the code changed).
	purge bool
	// deps: the first kernel reports each test module's project imports.
	deps bool
	// keep: the kernels stay up after the run.
	keep bool
	// kernels, when above 0, is how many of the pool's kernels the run
	// uses.
	kernels int
	// watch: the kernels record which project functions each test
	// reaches (kernel/python/ripple_watchfn.py) and keep their pytest
	// sessions open after the run, for the hot path (hot.go).
	watch bool
	// only, when not nil, keeps the tests of these test files (paths
	// relative to the root): a watch's module path collects the whole
	// suite, so that the sessions it leaves open hold every test, and runs
	// the affected modules.
	only map[string]bool
}

// run collects with args in every kernel (starting those that are not
// up), then runs the tests; see runTests.
func (p *testPool) run(ctx context.Context, opts Options, args []string, flags runFlags) (*Report, map[string][]string, error) {
	started := time.Now()
	if flags.watch {
		p.session = nil // a new collection: set again below when the run ends clean
	}
	ws := p.workers
	if flags.kernels > 0 && flags.kernels < len(ws) {
		ws = ws[:flags.kernels]
	}
	py, root, workers := p.python, p.root, len(ws)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if opts.FailFast {
		// Each kernel's pytest stops at its first failure, as -x does;
		// the run stops the other kernels.
		args = append(slices.Clone(args), "--maxfail=1")
	}
	t := &testRun{opts: &opts, python: py, root: root, args: args, workers: workers, cancel: cancel, flags: flags,
		rerun: make(map[int]string)}
	t.more = sync.NewCond(&t.mu)

	// Split collection (split.go): kernel i collects share i.
	t.split = workers > 1 && opts.SplitCollection
	t.shares = workers
	for i, w := range ws {
		w.setShare(0)
		if t.split {
			w.setShare(i)
		}
	}
	answers := make([]*collectAnswer, workers)
	errs := make([]error, workers)
	// collectAll runs collect on the workers that need it, at once.
	collectAll := func(need func(i int) bool, step func(w *testWorker) (*collectAnswer, error)) {
		var wg sync.WaitGroup
		for i, w := range ws {
			if !need(i) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i], errs[i] = step(w)
			}()
		}
		wg.Wait()
	}
	for _, w := range ws {
		w.t = t
	}
	collectAll(func(int) bool { return true }, func(w *testWorker) (*collectAnswer, error) { return w.begin(runCtx) })
	stopAll := func() { p.stop(ctx) }
	opts.Logger.Debug("kernels collected", "after", time.Since(started))
	lostShare := false
	if p.slots != nil {
		ws, answers, errs = dropLost(opts.Logger, ws, answers, errs)
		lostShare = len(ws) < workers
		workers = len(ws)
		t.workers = workers
	}
	collectErr := func() error {
		if err := errors.Join(errs...); err != nil {
			stopAll()
			if ctx.Err() != nil {
				return fmt.Errorf("%w: while the kernels collected", ErrInterrupted)
			}
			return err
		}
		return nil
	}
	if err := collectErr(); err != nil {
		return nil, nil, err
	}
	first := answers[0]
	if first.NoPytest != "" {
		if len(first.NeedsPytest) > 0 {
			stopAll()
			f := first.NeedsPytest[0]
			return nil, nil, fmt.Errorf("%w: %s (%s) cannot import pytest, and %s is written for pytest (%s; %d such %s): install pytest into that interpreter (%s -m pip install pytest, or on Debian apt install python3-pytest)",
				ErrNoPytest, first.Python, py.Version, f[0], f[1], len(first.NeedsPytest), plural(len(first.NeedsPytest), "file", "files"), py.Path)
		}
		if arg := pytestOnly(args); arg != "" {
			stopAll()
			return nil, nil, fmt.Errorf("%w: %s (%s) cannot import pytest, and %s needs it (unittest's loader takes only paths): install pytest into that interpreter (%s -m pip install pytest, or on Debian apt install python3-pytest)",
				ErrNoPytest, first.Python, py.Version, arg, py.Path)
		}
		// unittest's own loader, on the same kernels, on the paths given
		// (none: the project).
		t.unit, t.split = true, false
		for i, w := range ws {
			w.setShare(0)
			answers[i], errs[i] = w.collect(runCtx)
		}
		if err := errors.Join(errs...); err != nil {
			stopAll()
			return nil, nil, err
		}
		first = answers[0]
	}
	if t.split && !slices.ContainsFunc(answers, func(a *collectAnswer) bool { return a.Split != nil }) {
		// No kernel split (a usage error, pytest.exit while collecting):
		// every kernel's answer is that. When only some did not, the
		// split may be why: they all collect everything (below).
		t.split = false
	}
	if t.split {
		shares := make([]int, len(ws))
		for i, w := range ws {
			shares[i] = w.share
		}
		why := splitFallback(answers, shares, t.shares)
		if lostShare {
			why = "a kernel was lost while it collected"
		}
		if why != "" {
			// The slow path: the kernels that collected a share (or
			// failed to) collect everything; one that said "off" did.
			opts.Logger.Info("split collection off: every kernel collects the whole suite", "why", why)
			t.split = false
			collectAll(func(i int) bool { return answers[i].Split == nil || answers[i].Split.Off == "" },
				func(w *testWorker) (*collectAnswer, error) { return w.collect(runCtx) })
			for _, w := range ws {
				w.setShare(0)
			}
			if err := collectErr(); err != nil {
				return nil, nil, err
			}
			first = answers[0]
		}
	}
	if first.Usage != "" {
		stopAll()
		runner := "pytest"
		if t.unit {
			runner = "unittest (pytest is not installed)"
		}
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrUsage, runner, first.Usage)
	}
	if first.Interrupted != "" {
		stopAll()
		return nil, nil, fmt.Errorf("%w: pytest: %s", ErrInterrupted, first.Interrupted)
	}

	// The suite: without split, the first kernel's collection, which the
	// others' must equal (as pytest-xdist's workers' must); with it, the
	// union of the shares.
	var items, reports []sharedItem
	deps := first.Deps
	if t.split {
		shares := make([]int, len(ws))
		deps = map[string][]string{}
		t.shareItems = make([][]testItem, t.shares)
		for i, w := range ws {
			shares[i] = w.share
			t.shareItems[w.share] = answers[i].Items
			maps.Copy(deps, answers[i].Deps)
		}
		items, reports = mergeSplit(answers, shares, t.shares)
		opts.Logger.Debug("split collection", "files", len(first.Files), "planned", first.Split.Planned, "items", len(items))
	} else {
		for i, a := range answers[1:] {
			if d := differ(first.Items, a.Items); d != "" {
				stopAll()
				return nil, nil, fmt.Errorf("%w: kernels %s and %s collected different tests (%d and %d): %s", ErrProject, ws[0].name(), ws[i+1].name(), len(first.Items), len(a.Items), d)
			}
		}
		t.shareItems = [][]testItem{first.Items}
		for i, it := range first.Items {
			items = append(items, sharedItem{it, 0, i})
		}
		for i, r := range first.CollectReports {
			reports = append(reports, sharedItem{r, 0, i})
		}
	}
	if t.split {
		t.files = first.Files
		t.indexOf = make([]map[string]int, t.shares)
		for s, its := range t.shareItems {
			t.indexOf[s] = make(map[string]int, len(its))
			for i, it := range its {
				t.indexOf[s][it.NodeID] = i
			}
		}
	}
	// Every kernel collected: its session is open.
	t.open = workers
	t.holders = make([]int, len(t.shareItems))
	for _, w := range ws {
		t.holders[w.share]++
	}

	// Entries: the collection reports that did not pass, then the items,
	// in pytest's order.
	var entries []Entry
	var pre []*Result
	for _, c := range reports {
		en := Entry{NodeID: c.NodeID, Path: c.Path, JUnitClass: c.JUnit[0], JUnitName: c.JUnit[1]}
		entries = append(entries, en)
		pre = append(pre, &Result{Entry: en, Status: Status(c.Status), Message: c.Message, Longrepr: c.Longrepr})
	}
	collectErrors := 0
	for _, r := range pre {
		if r.Status == StatusError {
			collectErrors++
		}
	}
	nItems := len(items)
	runItems := collectErrors == 0 || first.Continue
	if first.CollectOnly || !runItems {
		nItems = 0
	}
	for _, it := range items[:nItems] {
		entries = append(entries, Entry{NodeID: it.NodeID, Path: it.Path, Line: it.Line + 1, JUnitClass: it.JUnit[0], JUnitName: it.JUnit[1], Scope: it.Scope})
	}
	offset := len(pre)
	// Sharding keeps whole items; the kernels' indices stay those of
	// their collection.
	keep := make([]sharedItem, 0, nItems) // the item of each kept item entry
	kept := entries[:offset]
	for i := offset; i < len(entries); i++ {
		if (opts.Shard.All() || opts.Shard.Has(entries[i].ID())) && (flags.only == nil || flags.only[entries[i].Path]) {
			kept = append(kept, entries[i])
			keep = append(keep, items[i-offset])
		}
	}
	entries = kept
	t.entries = entries
	t.results = make(chan indexedResult, len(entries)+4*workers)

	report := &Report{Project: root, Python: py, Kernels: workers, Timeout: opts.Timeout, Shard: opts.Shard,
		Started: started, Results: make([]*Result, len(entries))}
	if opts.Observer != nil {
		opts.Observer.Started(entries, workers)
	}
	c := &completer{report: report, obs: opts.Observer, started: started, total: len(entries)}
	for i, r := range pre {
		c.complete(i, r)
	}

	// Groups: consecutive items of one scope (a module, or with loadscope
	// a class) and one share, in collection order; with load, chunks
	// (loadChunks). Per share, kernel index -> entry index.
	t.entryOf = make([]map[int]int, len(t.shareItems))
	for s := range t.entryOf {
		t.entryOf[s] = map[int]int{}
	}
	for j, it := range keep {
		t.entryOf[it.share][it.index] = offset + j
	}
	if opts.Dist == DistLoad {
		t.queue = loadChunks(keep, workers, t.split)
	} else {
		for j, it := range keep {
			if j > 0 && entries[offset+j].Scope == entries[offset+j-1].Scope && keep[j-1].share == it.share {
				last := &t.queue[len(t.queue)-1]
				last.indices = append(last.indices, it.index)
				continue
			}
			t.queue = append(t.queue, testGroup{share: it.share, indices: []int{it.index}})
		}
		if workers > 1 {
			// Largest module first (by tests; their times are unknown),
			// so that a big module does not start last and leave the
			// other kernels idle at the end. A module's tests keep
			// pytest's order.
			slices.SortStableFunc(t.queue, func(a, b testGroup) int { return cmp.Compare(len(b.indices), len(a.indices)) })
		}
	}
	opts.Logger.Debug("tests", "collected", len(items), "groups", len(t.queue), "kernels", workers, "split", t.split)

	if !runItems {
		stopAll()
		report.Duration = time.Since(started)
		return report, deps, fmt.Errorf("%w: %d %s", ErrCollection, collectErrors, plural(collectErrors, "error", "errors"))
	}
	runErr := p.drive(ctx, runCtx, t, ws, c)
	if flags.watch {
		if t.clean() {
			p.session = &hotSession{args: args, items: first.Items, workers: workers}
		}
	}
	if runErr == nil && len(items) == 0 && len(pre) == 0 {
		runErr = ErrNoTests
	}
	return report, deps, runErr
}

// pytestOnly is the first of pytest's arguments that unittest's loader
// cannot honour (an option such as -k, or a PATH::NODE id), or "": without
// pytest such a run is refused, not run as something else.
func pytestOnly(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "::") {
			return a
		}
	}
	return ""
}

// loadChunkDiv: a chunk of --dist load is the tests not yet handed out
// over loadChunkDiv times the kernels. Small, because test times are
// skewed (numpy's random suite: its first module holds two thirds of the
// time; with 2 as the divisor one chunk of it outlasted everything else):
// measured on that suite with 2 kernels, divisors 2, 4, 8 and 16 ran in
// 8.9, 8.5, 7.5 and 6.4 s, and smaller chunks gained nothing more. A
// chunk costs one request; the fixtures it shares with its neighbours
// cost nothing more (see loadChunks).
const loadChunkDiv = 16

// loadChunks is the queue of --dist load (pytest-xdist's default mode):
// the items in collection order, cut into consecutive chunks whose sizes
// shrink as the suite is handed out (guided self-scheduling), so that the
// last ones, a test or a few each, even out the kernels' ends without
// knowing any test's time. A chunk holds one share's items; with split
// collection also one file's, as a kernel that steals a chunk collects
// only its module.
//
// A kernel takes chunks in collection order, so it never comes back to a
// module or class after it left it: each module- or class-scoped fixture
// is set up at most once per kernel, as under xdist, however small the
// chunks (a kernel lost mid-run puts its chunk back at the front: its
// taker may then set them up again).
func loadChunks(items []sharedItem, workers int, split bool) []testGroup {
	var queue []testGroup
	size := 0 // the current chunk's target
	for j, it := range items {
		if j > 0 {
			last := &queue[len(queue)-1]
			same := items[j-1].share == it.share && (!split || items[j-1].Path == it.Path)
			if same && len(last.indices) < size {
				last.indices = append(last.indices, it.index)
				continue
			}
		}
		left := len(items) - j
		size = max(1, (left+loadChunkDiv*workers-1)/(loadChunkDiv*workers))
		queue = append(queue, testGroup{share: it.share, indices: []int{it.index}})
	}
	return queue
}

// drive runs the queued groups of t on the workers ws, whose sessions are
// open, hands the results to c until every worker ended, and completes
// what did not run (skipped when the run was stopped, crashed when no
// kernel was left to run it).
func (p *testPool) drive(ctx, runCtx context.Context, t *testRun, ws []*testWorker, c *completer) error {
	opts, report, entries := t.opts, c.report, t.entries
	var runErr error
	t.running = true
	done := make(chan struct{})
	var wwg sync.WaitGroup
	for _, w := range ws {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			w.loop(runCtx)
			if !t.flags.keep {
				w.stopKernel(ctx)
			}
		}()
	}
	go func() {
		wwg.Wait()
		close(done)
	}()
	var tick <-chan time.Time
	if opts.Observer != nil {
		tk := time.NewTicker(progressInterval)
		defer tk.Stop()
		tick = tk.C
	}
	var stopReason error
	interrupt := ctx.Done()
loop:
	for {
		select {
		case ir := <-t.results:
			c.complete(ir.i, ir.r)
			if ir.r.Status.Failing() && opts.FailFast && stopReason == nil {
				report.StoppedEarly = true
				stopReason = errFailFast
				t.stop(errFailFast)
			}
		case <-interrupt:
			interrupt = nil
			if stopReason == nil {
				stopReason = ErrInterrupted
				t.stop(ErrInterrupted)
			}
		case <-done:
			break loop
		case <-tick:
			c.progress()
		}
	}
	for {
		select {
		case ir := <-t.results:
			c.complete(ir.i, ir.r)
			continue
		default:
		}
		break
	}
	interruptedBy := "" // a test's own KeyboardInterrupt ended the run
	for _, w := range ws {
		if w.interrupted != "" && stopReason == nil {
			stopReason, interruptedBy = ErrInterrupted, w.interrupted
		}
		if w.stopped != "" && stopReason == nil {
			stopReason = fmt.Errorf("%w: %s", ErrStopped, w.stopped)
			report.StoppedEarly = true
		}
	}
	why := "stopped by --fail-fast after the first failure"
	switch {
	case errors.Is(stopReason, ErrInterrupted):
		why = "interrupted (Ctrl-C)"
		if interruptedBy != "" {
			why = "interrupted: " + interruptedBy
		}
		report.Interrupted = true
		runErr = fmt.Errorf("%w: %d of %d tests ended", ErrInterrupted, c.ended, len(entries))
	case errors.Is(stopReason, ErrStopped):
		why = stopReason.Error()
	}
	notRun := &Result{Status: StatusSkipped, Message: "not run: " + why}
	if stopReason == nil {
		// Nothing stopped the run, yet tests did not run: every kernel
		// that could run them is gone. Not a green run.
		notRun = &Result{Status: StatusCrashed, Message: "not run: no kernel left to run it: " + strings.Join(t.gone, "; ")}
	}
	for i, r := range report.Results {
		if r == nil {
			r := *notRun
			r.Entry = entries[i]
			c.complete(i, &r)
		}
	}
	report.Duration = time.Since(c.started)
	return runErr
}

var errFailFast = errors.New("--fail-fast")

// dropLost leaves out of the run the kernels whose agent was lost while
// they collected, unless none would be left: the others run their share.
func dropLost(log *slog.Logger, ws []*testWorker, answers []*collectAnswer, errs []error) ([]*testWorker, []*collectAnswer, []error) {
	var kw []*testWorker
	var ka []*collectAnswer
	var ke []error
	for i, w := range ws {
		if errs[i] != nil && w.agentLost(errs[i]) {
			log.Warn("agent lost while its kernel collected: the run goes on without it", "agent", w.agent, "kernel", w.name(), "err", errs[i])
			continue
		}
		kw, ka, ke = append(kw, w), append(ka, answers[i]), append(ke, errs[i])
	}
	if len(kw) == 0 {
		return ws, answers, errs
	}
	return kw, ka, ke
}

// differ says where two collections differ ("" when they do not).
func differ(a, b []testItem) string {
	for i := range min(len(a), len(b)) {
		if a[i].NodeID != b[i].NodeID {
			return fmt.Sprintf("item %d is %s in one and %s in the other", i, a[i].NodeID, b[i].NodeID)
		}
	}
	switch {
	case len(a) > len(b):
		return "only one has " + a[len(b)].NodeID
	case len(b) > len(a):
		return "only one has " + b[len(a)].NodeID
	}
	return ""
}

// completer records results and tells the observer each one that is next
// in report order. Run's goroutine only.
type completer struct {
	report  *Report
	obs     Observer
	started time.Time
	total   int
	emitted int
	ended   int
	failing int
}

func (c *completer) complete(i int, r *Result) {
	if c.report.Results[i] != nil {
		return
	}
	c.report.Results[i] = r
	c.ended++
	if r.Status.Failing() {
		c.failing++
	}
	if c.obs != nil {
		for c.emitted < len(c.report.Results) && c.report.Results[c.emitted] != nil {
			c.obs.Result(c.report.Results[c.emitted])
			c.emitted++
		}
	}
	c.progress()
}

func (c *completer) progress() {
	if c.obs != nil {
		c.obs.Progress(Progress{Done: c.ended, Total: c.total, Failing: c.failing, Elapsed: time.Since(c.started)})
	}
}

// testWorker drives one kernel. Its fields are its goroutine's, except
// those under mu, which the kernel's reader goroutine (the sink) writes.
type testWorker struct {
	t       *testRun
	id      int
	k       *kernel.Kernel
	stopped string // pytest stopped the session (-x)
	// interrupted: which test raised KeyboardInterrupt itself (or sent
	// SIGINT to its own process), "ID raised KeyboardInterrupt": pytest
	// ends its session there, exit status 2, and so does the run. Written
	// by the worker's goroutine, read by drive once the workers ended.
	interrupted string
	open        bool // its pytest session is open (counted in t.open)
	// stay: its session failed a wide fixture when no other was left
	// (clash): it reports such failures from then on, as pytest would.
	// retired: it left the run for that reason; its session is closed,
	// also in a watch.
	stay, retired bool

	// slots and slot: the launcher slot whose kernels the worker drives
	// (Options.Agents); slots is nil and slot -1 for a child kernel.
	slots engine.Kernels
	slot  int
	agent string // the host of the slot's agent when the kernel was taken; "" for a local one

	mu sync.Mutex
	// share: the share its session collects (split.go; 0 without split);
	// steal: when the session collected only a stolen group's module, its
	// kernel indices mapped to the share's. Written by its goroutine under
	// mu, read under mu by send.
	share    int
	steal    *stolen
	assigned map[int]time.Time // sent, no outcome yet; value: when it started (zero: not yet)
	running  int               // kernel index of the test running, -1 none
	output   strings.Builder   // what the running test printed outside pytest's capture
	timer    *time.Timer
	cancel   context.CancelCauseFunc
}

// agentLost reports whether err ended the worker's kernel because its
// agent was lost (its connection closed, killed, lease expired) or is
// stopping: not the test's doing, unlike a kernel that died or was
// restarted.
func (w *testWorker) agentLost(err error) bool {
	return w.agent != "" && errors.Is(err, kernel.ErrStopped) && !errors.Is(err, kernel.ErrKernelRestarted) && !errors.Is(err, kernel.ErrKernelDied)
}

// setShare sets the share of the worker's next session (its goroutine).
func (w *testWorker) setShare(s int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.share = s
}

// setSteal sets (nil: clears) the stolen module of the worker's session
// (its goroutine).
func (w *testWorker) setSteal(s *stolen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steal = s
}

// name is the kernel's name in messages: gw1, or gw1 (agent beta).
func (w *testWorker) name() string {
	if w.agent != "" {
		return fmt.Sprintf("gw%d (agent %s)", w.id, w.agent)
	}
	return fmt.Sprintf("gw%d", w.id)
}

// begin collects, starting the kernel if it is not up.
func (w *testWorker) begin(ctx context.Context) (*collectAnswer, error) {
	if w.k != nil {
		return w.collect(ctx)
	}
	return w.start(ctx)
}

// start starts the kernel (takes the slot's kernel) and collects.
func (w *testWorker) start(ctx context.Context) (*collectAnswer, error) {
	for w.slots != nil {
		k, err := w.slots.Kernel(ctx, w.slot)
		if err != nil {
			return nil, fmt.Errorf("%w: kernel %s, slot %d: %w", ErrProject, w.name(), w.slot, err)
		}
		w.k, w.agent = k, ""
		if ak, ok := w.slots.(engine.AgentKernels); ok {
			if ref := ak.SlotAgent(w.slot); ref != nil {
				w.agent = ref.Host
			}
		}
		a, err := w.collect(ctx)
		if kernel.WasNotSent(err) && ctx.Err() == nil {
			continue // the kernel was gone before the request left: the slot's next one
		}
		return a, err
	}
	cfg := kernel.Config{Python: w.t.python, Root: w.t.root, ID: fmt.Sprintf("gw%d", w.id),
		Env: append([]string{fmt.Sprintf("PYTEST_XDIST_WORKER=gw%d", w.id), fmt.Sprintf("PYTEST_XDIST_WORKER_COUNT=%d", w.t.workers)},
			kernelThreadLimits(w.t.workers)...)}
	k, err := kernel.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	w.k = k
	return w.collect(ctx)
}

func (w *testWorker) collect(ctx context.Context) (*collectAnswer, error) {
	// Without split the first kernel's dependencies are the suite's; with
	// it, each kernel tells its share's.
	params := map[string]any{"op": "collect", "args": w.t.args, "worker": w.id, "workers": w.t.workers,
		"purge": w.t.flags.purge && !w.t.running, "deps": w.t.flags.deps && (w.id == 0 || w.t.split) && !w.t.running,
		"watch": w.t.flags.watch}
	if w.t.opts.Dist == DistLoadScope {
		params["dist"] = DistLoadScope
	}
	if w.t.split {
		split := map[string]any{"share": w.share, "shares": w.t.shares}
		if w.steal != nil {
			split["only"] = []string{w.steal.file}
		}
		params["split"] = split
	}
	if w.slots != nil {
		// The launcher started the kernel: it gets the worker variables
		// a child kernel gets at its start.
		params["env"] = map[string]string{"PYTEST_XDIST_WORKER": fmt.Sprintf("gw%d", w.id),
			"PYTEST_XDIST_WORKER_COUNT": fmt.Sprint(w.t.workers)}
	}
	if w.t.unit {
		params = map[string]any{"op": "unittest", "step": "collect", "paths": w.t.args}
	}
	var items, reports []testItem
	var files []string
	var owners []int
	deps := map[string][]string{}
	var bad error
	sink := kernel.SinkFuncs{ProgressFunc: func(raw json.RawMessage) {
		var ev struct {
			Event  string     `json:"event"`
			Items  []testItem `json:"items"`
			Report testItem   `json:"report"`
			Path   string     `json:"path"`
			Deps   []string   `json:"deps"`
			Files  []string   `json:"files"`
			Owners []int      `json:"owners"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			bad = err
		}
		switch ev.Event {
		case "items":
			items = append(items, ev.Items...)
		case "collectReport":
			reports = append(reports, ev.Report)
		case "deps":
			deps[ev.Path] = ev.Deps
		case "files":
			files = append(files, ev.Files...)
			owners = append(owners, ev.Owners...)
		}
	}}
	raw, err := w.k.Call(ctx, "pytest", params, sink)
	if err != nil {
		return nil, fmt.Errorf("%w: kernel %s: collect: %w", ErrProject, w.name(), err)
	}
	var a collectAnswer
	if err := cmp.Or(json.Unmarshal(raw, &a), bad); err != nil {
		return nil, fmt.Errorf("%w: kernel %s: collect: %w", ErrProject, w.name(), err)
	}
	a.Items, a.CollectReports, a.Deps, a.Files, a.Owners = items, reports, deps, files, owners
	if len(a.Items) != a.Count {
		return nil, fmt.Errorf("%w: kernel %s: collect: %d items announced, %d received", ErrProject, w.name(), a.Count, len(a.Items))
	}
	return &a, nil
}

// stopKernel stops a child kernel; a slot's kernel is only let go (its
// launcher stops it).
func (w *testWorker) stopKernel(ctx context.Context) {
	if w.k == nil {
		return
	}
	if w.slots == nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		w.k.Stop(sctx)
	}
	w.k = nil
}

// rejoin gives the worker a kernel with a session of this run again, after
// its kernel died, timed out or was lost: a child kernel is replaced; a
// slot's kernel is restarted when it is still alive (restart), else the
// slot's next kernel is awaited (a lost agent's slot fails at once). The
// new kernel's collection must be the run's. Its error says why the worker
// cannot go on.
func (w *testWorker) rejoin(ctx context.Context, restart bool) error {
	old := w.k
	w.stopKernel(ctx)
	if w.slots != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, replaceTimeout)
		defer cancel()
		if restart && old != nil && old.Err() == nil {
			if err := w.slots.Restart(ctx, w.slot, "test timed out"); err != nil {
				return fmt.Errorf("kernel %s could not be restarted: %w", w.name(), err)
			}
		}
	}
	w.t.replaced()
	if err := w.join(ctx); err != nil {
		return fmt.Errorf("kernel %s could not be replaced: %w", w.name(), err)
	}
	return nil
}

// join opens a new session of the run on the worker's kernel (starting
// it, or taking the slot's, if there is none): its collection must be the
// run's (with split collection, that of the worker's share).
func (w *testWorker) join(ctx context.Context) error {
	a, err := w.begin(ctx)
	switch {
	case err != nil:
		return err
	case a.NoPytest != "" || a.Usage != "":
		return fmt.Errorf("it cannot run pytest: %s", cmp.Or(a.NoPytest, a.Usage))
	}
	if w.steal != nil {
		return w.steal.index(a.Items, w.t.indexOf[w.share])
	}
	if d := differ(w.t.shareItems[w.share], a.Items); d != "" && !w.t.unit {
		return fmt.Errorf("it collected other tests than the run's kernels did: %s", d)
	}
	return nil
}

// loop runs groups until none is left or the run stops: with its session
// open it takes what the queue has, and finishes the session (the
// held-back test, session teardown) once the queue is empty; then it
// waits for tests that another kernel puts back, which it runs in a new
// session, until no open session is left (testRun's invariant).
func (w *testWorker) loop(ctx context.Context) {
	w.assigned = make(map[int]time.Time)
	w.running = -1
	w.open = true
	defer func() {
		if w.open {
			w.open = false
			w.t.closed(w.share)
		}
	}()
	for {
		g, steal, ok := w.t.next(w.share, w.open)
		if !ok {
			if !w.open {
				return
			}
			began := time.Now()
			if !w.t.isStopped() && !w.t.unit && !w.call(ctx, "finish", nil) {
				return
			}
			w.t.opts.Logger.Debug("session finished", "kernel", w.name(), "took", time.Since(began))
			w.open = false
			w.t.closed(w.share)
			continue
		}
		if !w.open {
			// Tests put back after this kernel finished its session (or
			// the share of a kernel that is gone): a new session
			// (collection) for them.
			w.setShare(g.share)
			w.setSteal(nil)
			if steal {
				w.setSteal(&stolen{file: w.t.fileOf(g), want: g.indices})
				w.t.opts.Logger.Debug("stealing a module", "kernel", w.name(), "module", w.steal.file, "tests", len(g.indices))
			}
			w.t.opened(w.share)
			w.open = true
			if err := w.join(ctx); err != nil {
				w.t.requeue(g)
				if steal {
					// Not this kernel's fault: the group goes back to
					// its share's kernel, the worker ends.
					w.t.opts.Logger.Warn("work stealing failed", "kernel", w.name(), "err", err)
				}
				w.t.left(fmt.Sprintf("kernel %s: %v", w.name(), err))
				return
			}
		}
		indices := g.indices
		if w.steal != nil {
			indices = w.steal.fromShare(indices)
		}
		began := time.Now()
		if !w.call(ctx, "run", indices) {
			return
		}
		w.t.opts.Logger.Debug("group ran", "kernel", w.name(), "tests", len(indices), "took", time.Since(began))
		if w.steal != nil && w.open {
			// A stolen module's session ends with it.
			if !w.t.isStopped() && !w.call(ctx, "finish", nil) {
				return
			}
			w.open = false
			w.t.closed(w.share)
			w.setSteal(nil)
		}
	}
}

// call runs one request; false when the worker must end (the run stops or
// its kernel cannot be replaced).
func (w *testWorker) call(ctx context.Context, op string, group []int) bool {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.mu.Lock()
	for _, i := range group {
		w.assigned[i] = time.Time{}
	}
	w.cancel = cancel
	w.mu.Unlock()
	params := map[string]any{"op": op, "indices": group}
	if !w.stay && (op == "run" || op == "finish") && w.t.othersOpen() {
		params["yieldWide"] = true
	}
	if op == "finish" && w.t.flags.watch && !w.retired {
		params["keep"] = true // the hot path runs its items again (hot.go)
	}
	if w.t.unit {
		params = map[string]any{"op": "unittest", "step": "run", "indices": group}
	}
	if w.k == nil {
		return false
	}
	raw, err := w.k.Call(callCtx, "pytest", params, kernel.SinkFuncs{OutputFunc: w.output1, ProgressFunc: w.event})
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	running := w.running
	w.mu.Unlock()
	if err == nil {
		var a runAnswer
		if json.Unmarshal(raw, &a) == nil && a.Stopped != "" {
			w.stopped = a.Stopped
			w.t.stop(ErrStopped)
			return false
		}
		if a.Clash != "" {
			return w.clash(ctx, op, a.Clash)
		}
		return true
	}
	// The call failed: the running test gets the reason, the kernel is
	// replaced and the rest of what it held runs on the new one (or on
	// another kernel).
	cause := context.Cause(callCtx)
	status, msg := StatusCrashed, err.Error()
	lost := false // the kernel's agent was lost: not the test's doing
	switch {
	case errors.Is(cause, errTestTimeout):
		status, msg = StatusTimeout, fmt.Sprintf("timed out after %s", w.t.opts.Timeout)
	case w.t.isStopped():
		status, msg = StatusInterrupted, "interrupted"
		if errors.Is(cause, errFailFast) {
			msg = "stopped by --fail-fast after the first failure"
		}
	case w.agentLost(err):
		// The agent's connection ended (killed, network, lease) or the
		// agent is stopping: its kernel's tests run again elsewhere; a
		// test that was running when a second agent was lost is not
		// tried a third time.
		lost = true
		w.t.opts.Logger.Warn("agent lost during the run: its kernel's tests go to other kernels", "agent", w.agent, "kernel", w.name(), "err", err)
		msg = fmt.Sprintf("agent %s was lost while the test ran: %v", w.agent, err)
	case errors.Is(err, kernel.ErrInterrupted) && cause == nil:
		// A KeyboardInterrupt ripple did not cause: the test raised it
		// (or signalled its own process). pytest re-raises it out of the
		// test's protocol and ends the session, interrupted (exit 2).
		status, msg = StatusInterrupted, "KeyboardInterrupt raised by the test: pytest ends its session here, and so does the run"
		w.interrupted = "a test raised KeyboardInterrupt"
		if j, ok := w.entryIndex(running); running >= 0 && ok {
			w.interrupted = w.t.entries[j].NodeID + " raised KeyboardInterrupt"
		}
		w.t.stop(fmt.Errorf("%w: %s", ErrInterrupted, w.interrupted))
	case errors.Is(err, kernel.ErrKernelDied):
		var ee *kernel.ExitError
		if errors.As(err, &ee) {
			msg = "the kernel died: " + ee.Status()
		}
	}
	w.mu.Lock()
	if running >= 0 {
		rerun := false
		if lost {
			j, _ := w.entryIndex(running)
			before, again := w.t.lostWhileRunning(j, w.agent)
			if again {
				msg += fmt.Sprintf(" (it had been run again after agent %s was lost)", before)
			}
			rerun = !again
		}
		if !rerun {
			began := w.assigned[running]
			delete(w.assigned, running)
			w.send(running, &Result{Status: status, Message: msg, Output: w.output.String(), Duration: time.Since(began)})
		}
	}
	var rest []int
	for i := range w.assigned {
		rest = append(rest, i)
	}
	if w.steal != nil {
		rest = w.steal.toShare(rest)
	}
	clear(w.assigned)
	w.running = -1
	w.mu.Unlock()
	slices.Sort(rest)
	if w.t.isStopped() {
		w.stopKernel(ctx)
		return false
	}
	if len(rest) > 0 {
		w.t.requeue(testGroup{share: w.share, indices: rest})
	}
	if err := w.rejoin(ctx, status == StatusTimeout); err != nil {
		if lost {
			err = fmt.Errorf("agent %s lost: %w", w.agent, err)
		}
		w.t.opts.Logger.Warn("kernel gone: its tests go to other kernels", "kernel", w.name(), "err", err)
		w.t.left(err.Error())
		return false
	}
	return true
}

// clash handles a session whose session- or package-scoped fixture failed
// while other sessions ran beside it. Under pytest there is one session;
// here each kernel has one, in the same directory and on the same
// machine, so such a fixture that takes a fixed resource (IPython's
// creates ./tmp-ipython-pytest-profiledir and fails when it exists, a
// server fixture binds a fixed port) fails in all but the first session:
// an error pytest would never report. So the session leaves the run: the
// tests it had not reported (the one whose setup failed included) go to
// the other kernels, and it is torn down (the worker ends). A fixture
// that is broken fails in every session, so the last one reports it,
// as pytest does: with no other session open, this one runs the tests
// again here (the failing fixture's error is pytest's, for each of them)
// and reports such failures from then on.
func (w *testWorker) clash(ctx context.Context, op, why string) bool {
	w.mu.Lock()
	var held []int
	for i := range w.assigned {
		held = append(held, i)
	}
	slices.Sort(held)
	toShare := held
	if w.steal != nil {
		toShare = w.steal.toShare(held)
	}
	clear(w.assigned)
	w.running = -1
	w.mu.Unlock()
	if w.t.isStopped() {
		return false
	}
	if w.t.retire(testGroup{share: w.share, indices: toShare}) {
		w.open, w.retired = false, true
		w.t.opts.Logger.Info("a session-wide fixture failed in this kernel's pytest session while other kernels ran theirs: its tests go to them",
			"kernel", w.name(), "fixture", why, "tests", len(held))
		w.t.left(fmt.Sprintf("kernel %s left the run: %s, while other kernels ran", w.name(), why))
		w.call(ctx, "finish", nil) // tears the session down; the worker ends either way
		return false
	}
	w.stay = true
	if !w.call(ctx, "run", held) {
		return false
	}
	if op == "finish" {
		return w.call(ctx, "finish", nil)
	}
	return true
}

// event handles a progress frame (the kernel's reader goroutine).
func (w *testWorker) event(raw json.RawMessage) {
	var ev testEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		w.t.opts.Logger.Warn("kernel event", "kernel", w.id, "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Event {
	case "start":
		w.running = ev.I
		w.output.Reset()
		w.assigned[ev.I] = time.Now()
		if d := w.t.opts.Timeout; d > 0 {
			if w.timer != nil {
				w.timer.Stop()
			}
			cancel := w.cancel
			w.timer = time.AfterFunc(d, func() { cancel(errTestTimeout) })
		}
	case "end":
		if w.timer != nil {
			w.timer.Stop()
		}
		delete(w.assigned, ev.I)
		r := &Result{Status: Status(ev.Status), Message: ev.Message, Longrepr: ev.Longrepr,
			Stdout: ev.Stdout, Stderr: ev.Stderr, Duration: time.Duration(ev.Duration * float64(time.Second))}
		var out strings.Builder
		for _, s := range ev.Sections {
			fmt.Fprintf(&out, "----- %s -----\n%s", s[0], s[1])
			if !strings.HasSuffix(s[1], "\n") {
				out.WriteByte('\n')
			}
		}
		out.WriteString(w.output.String())
		r.Output = out.String()
		w.output.Reset()
		if ev.I == w.running {
			w.running = -1
		}
		w.send(ev.I, r)
	}
}

// output1 keeps what the running test printed past pytest's capture (-s).
func (w *testWorker) output1(_ kernel.Stream, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running >= 0 && w.output.Len() < captureLimit {
		w.output.Write(data)
	}
}

// entryIndex is the entry of the kernel's item i (w.mu held).
func (w *testWorker) entryIndex(i int) (int, bool) {
	if w.steal != nil {
		s, ok := w.steal.share[i]
		if !ok {
			return 0, false
		}
		i = s
	}
	j, ok := w.t.entryOf[w.share][i]
	return j, ok
}

// send hands a result to Run's goroutine (w.mu held).
func (w *testWorker) send(i int, r *Result) {
	j, ok := w.entryIndex(i)
	if !ok {
		return
	}
	r.Entry = w.t.entries[j]
	w.t.results <- indexedResult{j, r}
}
