package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Options configure a batch run.
type Options struct {
	// Root is the project directory.
	Root string
	// Python is the --python flag ("" = RIPPLE_PYTHON, .venv, python3).
	Python string
	// Entries and Tests say what to run: the --entry functions, or the
	// project's tests, which pytest collects and runs in the kernels.
	Entries []string
	Tests   bool
	// PytestArgs are pytest's command line arguments for Tests: the
	// selection (PATH[::NODE]..., -k, -m) and what follows "--".
	PytestArgs []string
	// Kernels is the number of kernels, entries running at once (0 = the
	// number of CPUs).
	Kernels int
	// Timeout bounds each entry's run (0 = none).
	Timeout time.Duration
	// FailFast stops the run at the first failing entry: running entries
	// are interrupted, the others skipped.
	FailFast bool
	// ShowValues records every statement's value preview in the results.
	ShowValues bool
	// Shard runs a deterministic part of the entries (zero: all).
	Shard Shard
	// SplitCollection makes each kernel of a test run collect (import)
	// only the test modules it runs (split.go), not the whole suite: faster
	// where imports are heavy, but a test module's import side effects
	// then reach only the tests of its kernel, where under pytest every
	// module is imported before any test runs. Off by default (pytest's
	// outcomes come first): ripple run --split-collection.
	SplitCollection bool
	// Dist is how a test run's tests are grouped over the kernels, with
	// pytest-xdist's names: DistLoadFile (the default, ""): a module's tests
	// run on one kernel, its module and class fixtures set up once, as
	// under pytest; DistLoadScope: a class's tests run on one kernel, a
	// module's functions on one kernel, so a module's classes may run on
	// different kernels, each setting up the module's fixtures (faster
	// when one module holds much of a suite; a test that relies on what
	// another class of its module did first can differ from pytest);
	// DistLoad: consecutive chunks of tests, a module's tests on as many
	// kernels as are free, each setting up the module's and classes'
	// fixtures it needs (xdist's default mode: the most even, and a test
	// that relies on an earlier test of its module can differ from
	// pytest).
	Dist string
	// Observer is told of each result, in report order, and of progress
	// (nil: nobody).
	Observer Observer
	// Logger receives the engine's logs (nil: discarded).
	Logger *slog.Logger
	// StopTimeout bounds the graceful stop of the kernels at the end
	// (0 = 10 s); past it they are killed.
	StopTimeout time.Duration
	// Agents, when set, provides the kernels instead of local children
	// (ripple run --agents-listen): the run waits for Kernels (default 1)
	// of its agent kernels to be ready, then spreads the entries, or the
	// tests, over every kernel it has then (the launcher's local ones
	// included). Not with Watch.
	Agents AgentsLauncher
	// LocalKernels is the number of local kernels the Agents launcher
	// serves beside the agents' (agent.CoordinatorConfig.Local; ripple
	// run --local-kernels): entries count them as kernels of the run.
	LocalKernels int
}

// AgentsLauncher is a launcher whose kernels connect by themselves
// (agent.Coordinator).
type AgentsLauncher interface {
	engine.Launcher
	// Size is the number of engine slots it serves.
	Size() int
	// WaitKernels waits until n of its kernels are ready.
	WaitKernels(ctx context.Context, n int) error
}

// Observer follows a run; ripple run's Console implements it. Its methods
// are called from Run's goroutine, one at a time.
type Observer interface {
	// Started is told the entries the run will report, in report order,
	// and how many kernels run them.
	Started(entries []Entry, kernels int)
	// Result is told each result in report order: entry i only after
	// entries 0..i-1, whatever order they ended in.
	Result(r *Result)
	// Progress is told after each result and every few hundred
	// milliseconds.
	Progress(p Progress)
}

// Progress is how far a run is.
type Progress struct {
	Done, Total int
	// Failing counts the results so far that fail the run.
	Failing int
	Elapsed time.Duration
}

// perSlot is how many entries are pushed per kernel slot at a time: the
// one running and the next, queued behind it on the same slot, which the
// queue starts as soon as the kernel is free, without a round trip through
// the dispatcher between two entries. The price: an entry may wait behind
// a slow one on its slot while another slot is free (one entry per slot
// at most). --fail-fast pushes one per slot, so that nothing starts after
// a failure that the dispatcher has not seen.
const perSlot = 2

// clientID is the engine client a batch run connects as.
const clientID = "ripple-run"

// progressInterval is how often Observer.Progress is told while nothing
// ends (a progress bar's clock).
const progressInterval = 250 * time.Millisecond

// The groupings of Options.Dist.
const (
	DistLoadFile  = "loadfile"
	DistLoadScope = "loadscope"
	DistLoad      = "load"
)

// Run runs the entries of a project, as ripple run does: it starts an
// engine (Batch mode: a crash is reported, not retried), discovers the
// entries, keeps every kernel busy with one entry at a time (each in an
// execution context of its own, pushed as an ExplicitCall) and returns the
// report once every entry has a result.
//
// When ctx is cancelled (Ctrl-C), Run stops the engine gracefully, marks
// the running entries interrupted and the others skipped, and returns the
// report with an error wrapping ErrInterrupted. Usage and project errors
// (ErrUsage, ErrNoEntries, ErrDiscovery, ErrProject) return no report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Kernels < 0 {
		return nil, fmt.Errorf("%w: --kernels %d: want a positive number", ErrUsage, opts.Kernels)
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("%w: --timeout %s: want a positive duration", ErrUsage, opts.Timeout)
	}
	kernels := opts.Kernels
	if kernels == 0 {
		kernels = runtime.NumCPU()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Tests {
		if len(opts.Entries) > 0 {
			return nil, fmt.Errorf("%w: --tests and --entry: run the tests or the entries, not both", ErrUsage)
		}
		if opts.ShowValues {
			// pytest runs the tests: no statement values are recorded
			// (its report of a failure shows the assertion's values).
			return nil, fmt.Errorf("%w: --show-values shows the statements' values of --entry runs; with --tests, pytest's report of a failure shows its values", ErrUsage)
		}
		if opts.Agents != nil && opts.Kernels == 0 {
			kernels = 1 // agent kernels to wait for
		}
		switch opts.Dist {
		case "", DistLoadFile, DistLoadScope, DistLoad:
		default:
			return nil, fmt.Errorf("%w: --dist %q: want %s, %s or %s", ErrUsage, opts.Dist, DistLoadFile, DistLoadScope, DistLoad)
		}
		return runTests(ctx, opts, kernels)
	}
	started := time.Now()
	ecfg := engine.Config{Root: opts.Root, Python: opts.Python, Kernels: kernels,
		ExecuteTimeout: opts.Timeout, Batch: true, Logger: opts.Logger}
	waitAgents := 0
	if opts.Agents != nil {
		if opts.Kernels == 0 {
			kernels = 1
		}
		waitAgents = kernels
		kernels += opts.LocalKernels // the launcher's own kernels run entries too
		ecfg.Launcher, ecfg.Kernels = opts.Agents, opts.Agents.Size()
	}
	e, err := engine.New(ctx, ecfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	// The entries are discovered while the kernels boot (Start returns
	// once every slot has a kernel ready).
	type discovered struct {
		entries []Entry
		err     error
	}
	found := make(chan discovered, 1)
	go func() {
		entries, err := Discover(ctx, e.Python(), e.Root(), DiscoverOptions{Entries: opts.Entries})
		found <- discovered{entries, err}
	}()
	startErr := e.Start(ctx)
	if startErr == nil && opts.Agents != nil {
		opts.Logger.Info("waiting for agent kernels", "kernels", waitAgents)
		if startErr = opts.Agents.WaitKernels(ctx, waitAgents); startErr != nil && ctx.Err() == nil {
			startErr = fmt.Errorf("agents: %w", startErr)
		}
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		timeout := opts.StopTimeout
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return e.Stop(sctx)
	}
	defer stop()
	opts.Logger.Debug("kernels started", "after", time.Since(started), "err", startErr)
	disc := <-found
	opts.Logger.Debug("entries discovered", "after", time.Since(started), "entries", len(disc.entries), "err", disc.err)
	if startErr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: while the kernels started", ErrInterrupted)
		}
		return nil, fmt.Errorf("%w: %w", ErrProject, startErr)
	}
	entries, err := disc.entries, disc.err
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: during discovery", ErrInterrupted)
		}
		return nil, err
	}
	if !opts.Shard.All() {
		entries = slices.DeleteFunc(entries, func(en Entry) bool { return !opts.Shard.Has(en.ID()) })
	}
	report := &Report{Project: e.Root(), Python: e.Python(), Kernels: kernels, Timeout: opts.Timeout, Shard: opts.Shard,
		Started: started, Results: make([]*Result, len(entries))}
	inFlight := kernels * perSlot
	if opts.FailFast {
		inFlight = kernels
	}
	d := &dispatcher{e: e, opts: &opts, inFlight: inFlight, entries: entries, report: report,
		col: newCollector(len(entries), opts.ShowValues), running: make(map[protocol.ContextID]*runRecord),
		sources: newSourceCache(e.Root()), started: started, pick: newPicker(entries)}
	if opts.Observer != nil {
		opts.Observer.Started(entries, kernels)
	}
	if _, err := e.Connect(ctx, clientID, d.col); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	if err := e.Compile(ctx, d.modules()); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	opts.Logger.Debug("modules announced", "after", time.Since(started))
	d.loop(ctx)
	if d.interrupted {
		d.noteBegun()
		// The engine's stop cancels the running entries (no end
		// notification comes for them) before they are marked.
		if err := stop(); err != nil {
			opts.Logger.Warn("stop engine", "err", err)
		}
	}
	d.abandon()
	report.Duration = time.Since(started)
	opts.Logger.Debug("entries ended", "after", report.Duration)
	if err := stop(); err != nil {
		opts.Logger.Warn("stop engine", "err", err)
	}
	opts.Logger.Debug("engine stopped", "after", time.Since(started))
	if d.interrupted {
		report.Interrupted = true
		return report, fmt.Errorf("%w: %d of %d entries ended", ErrInterrupted, d.ended, len(entries))
	}
	return report, nil
}

// dispatcher starts the entries and turns their runs into results. It
// runs on Run's goroutine only, so its fields need no lock.
//
// Scheduling: the queue runs one entry per kernel slot at a time; the
// dispatcher keeps inFlight entries pushed (perSlot per slot). The engine
// puts a new context on the slot with the fewest contexts, and a finished
// entry's context is destroyed before the next one is created, so the next
// entry lands on the slot that just freed a place: a slow entry holds up
// its own slot only (and the one entry queued behind it). What a cancelled
// entry leaves behind: its context is destroyed (the engine aborts its job
// and the kernel forgets its values); module state in the kernel stays, as
// it does between tests in pytest.
type dispatcher struct {
	e    *engine.Engine
	opts *Options
	// inFlight is how many entries are pushed at a time.
	inFlight int
	entries  []Entry
	report   *Report
	col      *collector
	sources  *sourceCache
	started  time.Time

	pick    *picker                           // the entries not started yet
	pushed  []string                          // modules of the pushes that filled the pool
	prefer  []string                          // modules of the ended entries whose places are free
	running map[protocol.ContextID]*runRecord // entries in flight
	emitted int                               // results told to the observer
	ended   int                               // entries with a result
	failing int                               // results that fail the run
	// stopping: no more entries start (--fail-fast or Ctrl-C);
	// interrupted: it was Ctrl-C.
	stopping, interrupted bool
}

// modules lists the modules of the entries that will run, for the engine
// to take as the project's snapshot (engine.Compile in batch mode).
func (d *dispatcher) modules() []string {
	var mods []string
	for i := range d.entries {
		mods = append(mods, d.entries[i].Pointer.Module)
	}
	slices.Sort(mods)
	return slices.Compact(mods)
}

// loop starts entries while fewer than inFlight are pushed and collects their ends, until
// every entry has ended or the run stops.
func (d *dispatcher) loop(ctx context.Context) {
	var tick <-chan time.Time
	if d.opts.Observer != nil {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		for !d.stopping && d.pick.left > 0 && len(d.running) < d.inFlight {
			if d.start(ctx, d.pick.take(d.nextPlace())) && len(d.prefer) > 0 {
				d.prefer = d.prefer[1:] // that place is taken now
			}
		}
		if len(d.running) == 0 && (d.stopping || d.pick.left == 0) {
			return
		}
		select {
		case rec := <-d.col.ended:
			d.finish(ctx, rec)
		case <-ctx.Done():
			d.stopping, d.interrupted = true, true
			return
		case <-tick:
			d.progress()
		}
	}
}

// nextPlace is the module the next push should continue: the next push
// lands where the entry that ended first freed a place, or, while the pool
// fills, on the slot that got the push kernels pushes ago (see picker).
func (d *dispatcher) nextPlace() string {
	if len(d.prefer) > 0 {
		return d.prefer[0]
	}
	if n := len(d.pushed); n >= d.report.Kernels && n < d.inFlight {
		return d.pushed[n-d.report.Kernels]
	}
	return ""
}

// start runs entry i, or gives it its result at once when it cannot run;
// it reports whether the entry was pushed (holds a place on a kernel).
func (d *dispatcher) start(ctx context.Context, i int) bool {
	en := &d.entries[i]
	res, err := d.e.CreateContext(ctx, clientID, protocol.CreateContextParams{})
	if err != nil {
		d.complete(i, &Result{Entry: *en, Status: StatusError, Kind: protocol.ResultFailure,
			Message: "create an execution context: " + err.Error()})
		return false
	}
	rec := d.col.register(i, res.ContextID)
	if err := d.e.Push(ctx, clientID, protocol.PushParams{ContextID: res.ContextID, StackItem: en.StackItem()}); err != nil {
		d.col.forget(res.ContextID)
		d.destroy(ctx, res.ContextID)
		d.complete(i, &Result{Entry: *en, Status: StatusError, Kind: protocol.ResultFailure,
			Message: "push " + en.ID() + ": " + err.Error()})
		return false
	}
	d.running[rec.context] = rec
	d.pick.active[en.Pointer.Module]++
	if len(d.pushed) < d.inFlight {
		d.pushed = append(d.pushed, en.Pointer.Module)
	}
	return true
}

// finish turns an ended run into its result and frees its slot.
func (d *dispatcher) finish(ctx context.Context, rec *runRecord) {
	delete(d.running, rec.context)
	d.destroy(ctx, rec.context)
	module := d.entries[rec.index].Pointer.Module
	d.pick.active[module]--
	d.prefer = append(d.prefer, module)
	r := d.result(rec)
	d.complete(rec.index, r)
	if r.Status.Failing() && d.opts.FailFast && !d.stopping {
		d.failFast(ctx)
	}
	if d.pick.left == 0 && !d.stopping {
		// Nothing is left to start: a kernel with no entry left exits
		// now, while the others run their last ones.
		d.e.RetireIdleKernels()
	}
}

// failFast stops the run after the first failing result: the entries that
// ended meanwhile keep their results, the running ones are interrupted.
func (d *dispatcher) failFast(ctx context.Context) {
	d.stopping = true
	d.report.StoppedEarly = true
	for drained := false; !drained; {
		select {
		case rec := <-d.col.ended:
			delete(d.running, rec.context)
			d.destroy(ctx, rec.context)
			d.complete(rec.index, d.result(rec))
		default:
			drained = true
		}
	}
	d.noteBegun()
	for _, id := range sortedKeys(d.running) {
		rec := d.col.forget(id)
		delete(d.running, id)
		d.destroy(ctx, id)
		if rec != nil {
			d.complete(rec.index, d.interruptedResult(rec, "stopped by --fail-fast after the first failure"))
		}
	}
}

// noteBegun marks the entries in flight whose run the engine has begun
// but whose first notification has not arrived yet (updates are coalesced
// for a few milliseconds), so that cancelling them reports them
// interrupted, not skipped.
func (d *dispatcher) noteBegun() {
	now := time.Now()
	for id := range d.running {
		if st, err := d.e.ContextStatus(id); err == nil && st == contexts.StatusRunning {
			d.col.markRunning(id, now)
		}
	}
}

// abandon gives a result to every entry that has none when the loop ends:
// interrupted if it was running (the engine is stopped by then), skipped
// if it never started.
func (d *dispatcher) abandon() {
	why := "stopped by --fail-fast after the first failure"
	if d.interrupted {
		why = "interrupted (Ctrl-C)"
	}
	for _, id := range sortedKeys(d.running) {
		if rec := d.col.forget(id); rec != nil {
			d.complete(rec.index, d.interruptedResult(rec, why))
		}
		delete(d.running, id)
	}
	for d.pick.left > 0 {
		i := d.pick.take("")
		d.complete(i, &Result{Entry: d.entries[i], Status: StatusSkipped, Message: "not run: " + why})
	}
}

// interruptedResult is the result of an entry cancelled by --fail-fast or
// Ctrl-C: interrupted if its run had begun, skipped if it was still
// queued behind another entry.
func (d *dispatcher) interruptedResult(rec *runRecord, why string) *Result {
	rec.ended = time.Now()
	r := d.result(rec)
	r.Status, r.Message = StatusInterrupted, why
	if rec.running.IsZero() {
		r.Status, r.Message, r.Duration = StatusSkipped, "not run: "+why, 0
	}
	return r
}

// destroy drops a finished entry's context (best effort: the engine may be
// stopping).
func (d *dispatcher) destroy(ctx context.Context, id protocol.ContextID) {
	if err := d.e.DestroyContext(ctx, clientID, id); err != nil && !errors.Is(err, engine.ErrNotStarted) {
		d.opts.Logger.Debug("destroy context", "context", id, "err", err)
	}
}

// complete records a result and tells the observer every result that is
// now next in report order.
func (d *dispatcher) complete(i int, r *Result) {
	d.report.Results[i] = r
	d.ended++
	if r.Status.Failing() {
		d.failing++
	}
	if obs := d.opts.Observer; obs != nil {
		for d.emitted < len(d.report.Results) && d.report.Results[d.emitted] != nil {
			obs.Result(d.report.Results[d.emitted])
			d.emitted++
		}
	}
	d.progress()
}

func (d *dispatcher) progress() {
	if obs := d.opts.Observer; obs != nil {
		obs.Progress(Progress{Done: d.ended, Total: len(d.entries), Failing: d.failing, Elapsed: time.Since(d.started)})
	}
}

func sortedKeys(m map[protocol.ContextID]*runRecord) []protocol.ContextID {
	keys := make([]protocol.ContextID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
