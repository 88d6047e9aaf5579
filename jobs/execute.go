package jobs

import "fmt"

// Execute asks for an execution context's stack to be run, recomputing what
// is invalid.
//
// Executes run in parallel with each other, one per kernel slot at a time,
// never beside an EnsureCompiled (rules 1, 2). A running Execute is
// interruptible through its context.Context. Queued Executes of one context
// collapse into one (rule 4, see Collapse).
type Execute struct {
	// Context is the execution context to run. Required.
	Context ContextID
	// Slot is the kernel slot the context lives on (>= 0).
	Slot Slot
	// Expressions is the minimal set of expressions the run must bring up
	// to date; empty means all (DESIGN.md), and so does All().
	Expressions ExpressionSet
	// Invalidate names expressions whose cached values must not be used:
	// they and their dependents run again (recompute's
	// invalidatedExpressions). Empty: none; All(): every one.
	//
	// Invalidation is a request like the others: if the job is dequeued or
	// cancelled before it ran to completion, the invalidation did not
	// happen, and whoever still wants it (the engine, from the job's final
	// Record) must ask again. A queued job that the next plan re-requests
	// keeps it (see queue.Queue.Apply).
	Invalidate ExpressionSet
	// Priority orders queued Executes.
	Priority Priority
	// Reason says why the run was asked for (a set after collapsing).
	Reason Reason
}

// WantsAll reports whether the run must bring every expression up to date.
func (e *Execute) WantsAll() bool {
	return e.Expressions.IsAll() || e.Expressions.IsEmpty()
}

// Validate reports a malformed request, naming the field at fault.
func (e *Execute) Validate() error {
	switch {
	case e.Context == "":
		return fmt.Errorf("%w: Execute names no execution context", ErrInvalidJob)
	case e.Slot < 0:
		return fmt.Errorf("%w: Execute of context %s: slot %d is negative", ErrInvalidJob, e.Context, e.Slot)
	case int(e.Priority) >= NumPriorities:
		return fmt.Errorf("%w: Execute of context %s: unknown priority %d", ErrInvalidJob, e.Context, e.Priority)
	case e.Reason&^reasonAll != 0:
		return fmt.Errorf("%w: Execute of context %s: unknown reason %s", ErrInvalidJob, e.Context, e.Reason)
	}
	return nil
}

// Collapse merges a later request o for the same context into the queued
// job e (rule 4): the union of their expressions ("all" wins), the union of
// their invalidations, the higher priority, both reasons, and o's slot (the
// newer placement of the context). It does not allocate when e already
// holds every expression of o.
func (e *Execute) Collapse(o *Execute) {
	if e.WantsAll() || o.WantsAll() {
		e.Expressions = All[ExpressionID]()
	} else {
		e.Expressions.Union(o.Expressions)
	}
	e.Invalidate.Union(o.Invalidate)
	e.Priority = max(e.Priority, o.Priority)
	e.Reason |= o.Reason
	e.Slot = o.Slot
}

func (e *Execute) String() string {
	s := fmt.Sprintf("Execute(%s, slot %d, %s, %s, %s", e.Context, e.Slot, e.Expressions, e.Priority, e.Reason)
	if !e.Invalidate.IsEmpty() {
		s += ", invalidate " + e.Invalidate.String()
	}
	return s + ")"
}
