// Package queuetest has test doubles for package queue: Runner, a fake
// queue.Runner whose calls end when the test says so and which checks the
// rules the queue promises its runner, and Recorder, which collects the
// queue's OnEnd reports.
//
//	runner := &queuetest.Runner{}
//	ended := &queuetest.Recorder{}
//	q := queue.New(runner, queue.Options{OnEnd: ended.OnEnd})
//	...
//	call, err := runner.Next(ctx) // the next runner call, in start order
//	call.Finish(nil)              // the runner returns nil
//	rec, err := ended.Wait(ctx, call.ID)
package queuetest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
)

// Runner is a fake queue.Runner. Each call blocks until the test ends it
// with Call.Finish (or, with ReturnOnCancel, until its context is
// cancelled). It records every call in start order, with its time, and
// checks the rules the queue promises a runner as it sees them: an
// EnsureCompiled of one slot alone on its slot (no Execute, no other
// compile there), one of every kernel (no Slots) alone, one Execute per
// slot and per context at a time, and at most MaxRunning Executes; a
// breach is recorded in Violations.
//
// The zero value is ready to use; set the options before the queue starts.
type Runner struct {
	// ReturnOnCancel makes a call return context.Cause(ctx) as soon as its
	// context is cancelled, like a kernel that honours interrupts.
	ReturnOnCancel bool
	// MaxRunning, if > 0, is the most Executes that may run at once.
	MaxRunning int

	mu sync.Mutex
	// Guarded by mu.
	calls        []*Call
	seen         int // calls already returned by Next
	active       map[*Call]struct{}
	activeEC     *Call // a running EnsureCompiled of every kernel
	activeSlotEC map[jobs.Slot]*Call
	activeSlot   map[jobs.Slot]*Call
	activeCtx    map[jobs.ContextID]*Call
	activeExecs  int
	violations   []string
	// changed is closed and replaced whenever a call starts or returns.
	changed chan struct{}
}

// Call is one runner call.
type Call struct {
	Seq            int     // start order, from 1
	ID             jobs.ID // the job's id (queue.JobID)
	Kind           jobs.Kind
	EnsureCompiled *jobs.EnsureCompiled // for KindEnsureCompiled
	Execute        *jobs.Execute        // for KindExecute
	Ctx            context.Context      // the job's context
	Started        time.Time

	finish chan error    // capacity 1: the first Finish wins
	done   chan struct{} // closed once the call returned
	// Set before done is closed.
	err   error
	ended time.Time
}

// Finish makes the call return err. It reports false if the call was
// already told to finish or has returned (cancelled, with ReturnOnCancel).
func (c *Call) Finish(err error) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.finish <- err:
		return true
	default:
		return false
	}
}

// Done is closed once the call has returned.
func (c *Call) Done() <-chan struct{} { return c.done }

// Err is what the call returned; valid once Done is closed.
func (c *Call) Err() error { return c.err }

// Ended is when the call returned; valid once Done is closed.
func (c *Call) Ended() time.Time { return c.ended }

func (c *Call) String() string {
	if c.Kind == jobs.KindEnsureCompiled {
		return fmt.Sprintf("call %d: job %d %v", c.Seq, c.ID, c.EnsureCompiled)
	}
	return fmt.Sprintf("call %d: job %d %v", c.Seq, c.ID, c.Execute)
}

// EnsureCompiled implements queue.Runner.
func (r *Runner) EnsureCompiled(ctx context.Context, job *jobs.EnsureCompiled) error {
	return r.run(ctx, &Call{Kind: jobs.KindEnsureCompiled, EnsureCompiled: job})
}

// Execute implements queue.Runner.
func (r *Runner) Execute(ctx context.Context, job *jobs.Execute) error {
	return r.run(ctx, &Call{Kind: jobs.KindExecute, Execute: job})
}

func (r *Runner) run(ctx context.Context, c *Call) error {
	c.Ctx, c.Started = ctx, time.Now()
	c.ID, _ = queue.JobID(ctx)
	c.finish, c.done = make(chan error, 1), make(chan struct{})
	r.begin(c)
	var err error
	if r.ReturnOnCancel {
		select {
		case err = <-c.finish:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	} else {
		err = <-c.finish
	}
	c.err, c.ended = err, time.Now()
	r.end(c)
	return err
}

// begin records a call and checks the rules against the calls running.
func (r *Runner) begin(c *Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.initLocked()
	c.Seq = len(r.calls) + 1
	r.calls = append(r.calls, c)
	violate := func(format string, args ...any) {
		r.violations = append(r.violations, c.String()+": "+fmt.Sprintf(format, args...))
	}
	if c.Kind == jobs.KindEnsureCompiled && len(c.EnsureCompiled.Slots) > 0 {
		if len(c.EnsureCompiled.Slots) != 1 {
			violate("EnsureCompiled handed over with %d slots, want 1", len(c.EnsureCompiled.Slots))
		}
		slot := c.EnsureCompiled.Slots[0]
		if r.activeEC != nil {
			violate("EnsureCompiled started beside EnsureCompiled %v", r.activeEC)
		}
		if other := r.activeSlotEC[slot]; other != nil {
			violate("slot %d already compiles %v", slot, other)
		}
		if other := r.activeSlot[slot]; other != nil {
			violate("EnsureCompiled started beside %v on its slot", other)
		}
		r.activeSlotEC[slot] = c
	} else if c.Kind == jobs.KindEnsureCompiled {
		if len(r.active) > 0 {
			violate("EnsureCompiled started beside %d running calls", len(r.active))
		}
		r.activeEC = c
	} else {
		e := c.Execute
		if r.activeEC != nil {
			violate("Execute started beside EnsureCompiled %v", r.activeEC)
		}
		if other := r.activeSlotEC[e.Slot]; other != nil {
			violate("Execute started beside EnsureCompiled %v on its slot", other)
		}
		if other := r.activeSlot[e.Slot]; other != nil {
			violate("slot %d already runs %v", e.Slot, other)
		}
		if other := r.activeCtx[e.Context]; other != nil {
			violate("context %s already runs %v", e.Context, other)
		}
		r.activeExecs++
		if r.MaxRunning > 0 && r.activeExecs > r.MaxRunning {
			violate("%d Executes running, limit %d", r.activeExecs, r.MaxRunning)
		}
		r.activeSlot[e.Slot], r.activeCtx[e.Context] = c, c
	}
	r.active[c] = struct{}{}
	r.notifyLocked()
}

// end forgets a call that is about to return. It runs before the queue can
// learn of the return, so the queue's next start never sees it as running.
func (r *Runner) end(c *Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, c)
	if c.Kind == jobs.KindEnsureCompiled && len(c.EnsureCompiled.Slots) > 0 {
		delete(r.activeSlotEC, c.EnsureCompiled.Slots[0])
	} else if c.Kind == jobs.KindEnsureCompiled {
		r.activeEC = nil
	} else {
		r.activeExecs--
		delete(r.activeSlot, c.Execute.Slot)
		delete(r.activeCtx, c.Execute.Context)
	}
	close(c.done)
	r.notifyLocked()
}

func (r *Runner) initLocked() {
	if r.active == nil {
		r.active = make(map[*Call]struct{})
		r.activeSlot = make(map[jobs.Slot]*Call)
		r.activeSlotEC = make(map[jobs.Slot]*Call)
		r.activeCtx = make(map[jobs.ContextID]*Call)
	}
}

func (r *Runner) notifyLocked() {
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
}

// waitFor polls cond under the lock each time a call starts or returns,
// until it reports true or ctx ends.
func (r *Runner) waitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		r.mu.Lock()
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ok, ch := cond(), r.changed
		r.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("queuetest: waiting for %s: %w", what, context.Cause(ctx))
		}
	}
}

// Next returns the first call not yet returned by Next, waiting for it to
// start.
func (r *Runner) Next(ctx context.Context) (*Call, error) {
	var c *Call
	err := r.waitFor(ctx, "the next runner call", func() bool {
		if r.seen < len(r.calls) {
			c = r.calls[r.seen]
			r.seen++
			return true
		}
		return false
	})
	return c, err
}

// CallFor returns the (last) call for job id, waiting for it to start.
func (r *Runner) CallFor(ctx context.Context, id jobs.ID) (*Call, error) {
	var c *Call
	err := r.waitFor(ctx, fmt.Sprintf("the runner call of job %d", id), func() bool {
		for i := len(r.calls) - 1; i >= 0; i-- {
			if r.calls[i].ID == id {
				c = r.calls[i]
				return true
			}
		}
		return false
	})
	return c, err
}

// Calls returns every call so far, in start order.
func (r *Runner) Calls() []*Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Call(nil), r.calls...)
}

// Active returns the calls that have started and not returned, in start
// order.
func (r *Runner) Active() []*Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var active []*Call
	for _, c := range r.calls {
		if _, ok := r.active[c]; ok {
			active = append(active, c)
		}
	}
	return active
}

// Violations returns the rule breaches seen so far.
func (r *Runner) Violations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.violations...)
}
