package batch

// testPool: the kernels of ripple run --tests (one run) or --watch (every
// run of the watch), and a run over them as a short sequence of phases:
// collect (collection.go), merge and plan (testplan.go), drive (drive.go).

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// runTests is Run with Options.Tests: pytest's session runs in every
// kernel (kernel/python/ripple_kernel/pytest_plugin.py); each kernel collects, the
// collections must agree (as pytest-xdist's workers' must), then the
// scope groups go to the kernels as they free up.
func runTests(ctx context.Context, opts Options, workers int) (*Report, error) {
	times := ""
	var flags runFlags
	if opts.Kernels == 0 && opts.Agents == nil {
		// The default: one kernel where a second cannot pay for itself
		// (kernelchoice.go).
		root, _ := filepath.Abs(opts.Root)
		times = testTimesPath(root, opts.Python, opts.PytestArgs)
		var why string
		if workers, flags.prior, why = chooseKernels(times, workers); why != "" {
			opts.Logger.Info("one kernel", "why", why)
		}
		flags.stagger = true
	}
	p, err := newTestPool(ctx, opts, workers)
	if err != nil {
		return nil, err
	}
	defer p.stop(ctx)
	rep, _, err := p.run(ctx, opts, opts.PytestArgs, flags)
	if rep != nil {
		saveTestTimes(times, rep, rep.collectTime)
	}
	if rep != nil && rep.PytestJUnitXML != nil {
		if werr := WritePytestJUnit(rep.PytestJUnitXML, rep); werr != nil && err == nil {
			err = werr
		}
	}
	return rep, err
}

// testPool is the kernels of test runs: one run (runTests), or every run
// of a watch (Watch), which keeps them warm in between. Run's goroutine
// (or Watch's), the pool's goroutine, owns it: its fields are that
// goroutine's, and so are the workers' kernels between runs.
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
	// reaches (kernel/python/ripple_kernel/watchfn.py) and keep their pytest
	// sessions open after the run, for the hot path (hot.go).
	watch bool
	// stagger: the kernels but the first start beside its collection and
	// join by a hand-over of its selection (testRun.late, handover.go);
	// prior: the last run's mean test time (0: unknown).
	stagger bool
	prior   time.Duration
	// only, when not nil, keeps the tests of these test files (paths
	// relative to the root): a watch's module path collects the whole
	// suite, so that the sessions it leaves open hold every test, and runs
	// the affected modules.
	only map[string]bool
}

// run collects with args in every kernel (starting those that are not
// up), then runs the tests; see runTests. It returns the report, each
// test module's project imports (with flags.deps) and the run's error.
//
// Its phases: newRun (the run and its kernels), collect (every kernel
// collects; the answers settle on pytest or unittest, split or not),
// merge (the suite), plan (the entries and the report so far), groups
// (the queue), drive (the workers run the queue).
func (p *testPool) run(ctx context.Context, opts Options, args []string, flags runFlags) (*Report, map[string][]string, error) {
	started := time.Now()
	if flags.watch {
		p.session = nil // a new collection: set again below when the run ends clean
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	t, ws := p.newRun(&opts, args, flags, cancel)
	if flags.stagger && len(ws) > 1 && !t.split && p.slots == nil && !opts.FailFast {
		// The first kernel collects; the others start now and collect a
		// hand-over once it pays (testRun.late, handover.go).
		t.late, t.cpu = ws[1:], newIdleMeter()
		ws = ws[:1]
		ws[0].up = make(chan struct{})
		for _, w := range t.late {
			w.startLate(runCtx, ws[0].up, lateStartDelay)
		}
	}
	col, err := p.collect(ctx, runCtx, t, ws, started)
	collected := time.Since(started)
	var s suite
	if err == nil {
		s, err = t.merge(col)
	}
	if err != nil {
		p.stop(ctx)
		return nil, nil, err
	}
	pl := t.plan(s, col.first(), flags.only)
	if h, ok := t.opts.Observer.(PytestObserver); ok && !col.first().CollectOnly && col.first().NoPytest == "" {
		h.PytestStarted(col.first().pytestStart())
	}
	if col.first().CollectOnly {
		// pytest's listing says it all: the observer is not told the
		// collection reports (startReport's results) apart.
		t.opts.Observer = nil
	}
	c := t.startReport(started, pl.pre)
	c.report.collectTime = collected
	if !opts.FailFast { // which stops the run itself (gather)
		c.limit(col.first().MaxFail)
	}
	c.report.Deselected, c.report.Verbosity = col.first().Deselected, col.first().Verbosity
	c.report.PytestJUnitXML = col.first().JUnitXML
	t.queue = t.groups(pl.keep)
	if t.workers == 1 && len(t.late) == 0 && p.slots == nil && !flags.watch {
		t.queue = oneCall(t.queue)
	}
	opts.Logger.Debug("tests", "collected", len(s.items), "groups", len(t.queue), "kernels", t.workers, "split", t.split)
	if first := col.first(); first.CollectOnly {
		// pytest's --collect-only: the kernels ran nothing, the first one's
		// listing is the output, its status pytest's.
		p.stop(ctx)
		c.report.PytestConsole = first.Console
		c.report.Duration = time.Since(started)
		switch {
		case pl.collectErrors > 0 && !first.Continue:
			err = fmt.Errorf("%w: %d %s", ErrCollection, pl.collectErrors, plural(pl.collectErrors, "error", "errors"))
		case len(s.items) == 0:
			err = ErrNoTests
		}
		if first.Cache != nil {
			err = cmp.Or(err, writePytestCache(first.Cache, s, c.report, len(pl.pre), true))
		}
		return c.report, s.deps, err
	}
	if !pl.runItems {
		p.stop(ctx)
		c.report.Duration = time.Since(started)
		return c.report, s.deps, collectionStop(c.report, col.first(), pl.collectErrors)
	}
	if cache := col.first().Cache; cache != nil && cache.Stepwise && (len(col.ws) > 1 || len(t.late) > 0) {
		t.only = col.ws[0]
	}
	t.prepareHandOver(col.first())
	runErr := t.drive(ctx, runCtx, col.ws, c)
	if cache := col.first().Cache; cache != nil && !c.report.Interrupted {
		// As pytest's plugins at the session's end (not after Ctrl-C: the
		// kernels were stopped mid-run).
		runErr = cmp.Or(runErr, writePytestCache(cache, s, c.report, len(pl.pre), false))
	}
	if flags.watch && t.clean() {
		p.session = &hotSession{args: t.args, items: col.first().Items, workers: t.workers,
			junit: col.first().JUnitXML, cache: col.first().Cache, suite: s, console: col.first().pytestStart()}
	}
	if runErr == nil && len(s.items) == 0 && len(pl.pre) == 0 {
		runErr = ErrNoTests
	}
	return c.report, s.deps, runErr
}

// collectionStop is the end of a run whose collection had errors (and no
// --continue-on-collection-errors), as pytest ends its session: its
// Interrupted ("Interrupted: 1 error during collection", status 2), under
// its -x/--maxfail line when the errors reached it; or, when they reached
// it before the last module, that line alone and status 1 (ErrStopped).
func collectionStop(rep *Report, first *collectAnswer, errs int) error {
	err := fmt.Errorf("%w: %d %s", ErrCollection, errs, plural(errs, "error", "errors"))
	if first.StopFailed {
		rep.pytestStopped = first.Stopped
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	rep.pytestStopped = fmt.Sprintf("Interrupted: %d %s during collection", errs, plural(errs, "error", "errors"))
	if first.ShouldFail != "" {
		rep.pytestStopped = first.ShouldFail + "\n" + rep.pytestStopped
	}
	return err
}

// newRun is a run of the pool's first flags.kernels kernels (all: 0),
// which it returns: pytest's arguments get --maxfail=1 under --fail-fast,
// and with split collection kernel i collects share i.
func (p *testPool) newRun(opts *Options, args []string, flags runFlags, cancel context.CancelCauseFunc) (*testRun, []*testWorker) {
	ws := p.workers
	if flags.kernels > 0 && flags.kernels < len(ws) {
		ws = ws[:flags.kernels]
	}
	if opts.FailFast {
		// Each kernel's pytest stops at its first failure, as -x does;
		// the run stops the other kernels.
		args = append(slices.Clone(args), "--maxfail=1")
	}
	t := newTestRun(opts, p.python, p.root, args, len(ws), flags, cancel)
	t.split = len(ws) > 1 && opts.SplitCollection
	t.shares = len(ws)
	for i, w := range ws {
		w.t = t
		w.setShare(0)
		if t.split {
			w.setShare(i)
		}
	}
	return t, ws
}
