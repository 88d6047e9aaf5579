package jobs

import "fmt"

// Plan is what one API call asks of the queue: jobs to abort, then jobs to
// enqueue. The translations (Edit.Plan, Push.Plan, ...) build plans; the
// queue applies one atomically (queue.Queue.Apply).
type Plan struct {
	// Aborts are applied first.
	Aborts []Abort
	// EnsureCompiled is enqueued when it names modules; its zero value
	// means "no EnsureCompiled".
	EnsureCompiled EnsureCompiled
	// Executes are enqueued in order.
	Executes []Execute
}

// IsEmpty reports whether the plan asks for nothing.
func (p *Plan) IsEmpty() bool {
	return len(p.Aborts) == 0 && p.EnsureCompiled.Modules.IsEmpty() && len(p.Executes) == 0
}

// Validate reports the first malformed abort or job of the plan.
func (p *Plan) Validate() error {
	for i := range p.Aborts {
		if err := p.Aborts[i].Validate(); err != nil {
			return fmt.Errorf("plan abort %d: %w", i, err)
		}
	}
	for i := range p.Executes {
		if err := p.Executes[i].Validate(); err != nil {
			return fmt.Errorf("plan execute %d: %w", i, err)
		}
	}
	return nil
}

// Abort asks the queue to abort Executes: dequeue the queued ones (they end
// with Cause) and cancel the running ones' contexts with Cause. An abort
// never touches EnsureCompiled jobs: a running one is not interruptible, and
// a queued one still has its modules to compile (a later EnsureCompiled
// collapses into it). Only Stop dequeues those.
type Abort struct {
	// All selects every context's Executes; otherwise only Context's.
	All     bool
	Context ContextID
	// Cause is the cancellation cause, one of this package's Err causes.
	Cause error
}

// AbortAll aborts every context's Executes with cause.
func AbortAll(cause error) Abort { return Abort{All: true, Cause: cause} }

// AbortContext aborts the Executes of one context with cause.
func AbortContext(id ContextID, cause error) Abort { return Abort{Context: id, Cause: cause} }

// Covers reports whether the abort selects the Executes of context id.
func (a *Abort) Covers(id ContextID) bool { return a.All || a.Context == id }

// Validate reports a malformed abort.
func (a *Abort) Validate() error {
	switch {
	case a.Cause == nil:
		return fmt.Errorf("%w: abort has no cause", ErrInvalidJob)
	case !a.All && a.Context == "":
		return fmt.Errorf("%w: abort names no execution context (set All to abort every one)", ErrInvalidJob)
	case a.All && a.Context != "":
		return fmt.Errorf("%w: abort of all contexts also names context %s", ErrInvalidJob, a.Context)
	}
	return nil
}
