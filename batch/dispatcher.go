package batch

// dispatcher: a run of entries (ripple run without --tests) on the
// engine: it pushes the entries, turns their runs into results and gives
// those that did not run theirs.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

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

// newDispatcher is the dispatcher of entries on e's kernels, with the
// run's report.
func newDispatcher(e *engine.Engine, opts *Options, kernels int, entries []Entry, started time.Time) *dispatcher {
	report := &Report{Project: e.Root(), Python: e.Python(), Kernels: kernels, Timeout: opts.Timeout, Shard: opts.Shard,
		Started: started, Results: make([]*Result, len(entries))}
	inFlight := kernels * perSlot
	if opts.FailFast {
		inFlight = kernels
	}
	return &dispatcher{e: e, opts: opts, inFlight: inFlight, entries: entries, report: report,
		col: newCollector(len(entries), opts.ShowValues), running: make(map[protocol.ContextID]*runRecord),
		sources: newSourceCache(e.Root()), started: started, pick: newPicker(entries)}
}

// begin connects the run's client to the engine and announces the
// modules of the entries.
func (d *dispatcher) begin(ctx context.Context) error {
	if _, err := d.e.Connect(ctx, clientID, d.col); err != nil {
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	if err := d.e.Compile(ctx, d.modules()); err != nil {
		return fmt.Errorf("%w: %w", ErrProject, err)
	}
	d.opts.Logger.Debug("modules announced", "after", time.Since(d.started))
	return nil
}

// end gives every entry without a result its result once the loop ended
// and stops the engine (stop): after Ctrl-C the engine is stopped first,
// which cancels the running entries (no end notification comes for them)
// before they are marked interrupted.
func (d *dispatcher) end(stop func() error) (*Report, error) {
	if d.interrupted {
		d.noteBegun()
		if err := stop(); err != nil {
			d.opts.Logger.Warn("stop engine", "err", err)
		}
	}
	d.abandon()
	d.report.Duration = time.Since(d.started)
	d.opts.Logger.Debug("entries ended", "after", d.report.Duration)
	if err := stop(); err != nil {
		d.opts.Logger.Warn("stop engine", "err", err)
	}
	d.opts.Logger.Debug("engine stopped", "after", time.Since(d.started))
	if d.interrupted {
		d.report.Interrupted = true
		return d.report, fmt.Errorf("%w: %d of %d entries ended", ErrInterrupted, d.ended, len(d.entries))
	}
	return d.report, nil
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
		d.complete(i, &Result{Entry: d.entries[i], Status: StatusSkipped, Message: notRunPrefix + why})
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
		r.Status, r.Message, r.Duration = StatusSkipped, notRunPrefix+why, 0
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
