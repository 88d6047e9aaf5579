package jobs

import (
	"fmt"
	"time"
)

// Record is what the queue tells about one job: its identity, request,
// state, timestamps and result. The queue reports a Record when the job
// ends, and for live jobs when asked (queue.Queue.Jobs).
type Record struct {
	ID    ID
	Kind  Kind
	State State
	// EnsureCompiled is the request when Kind is KindEnsureCompiled, with
	// every collapsed request merged in.
	EnsureCompiled EnsureCompiled
	// Execute is the request when Kind is KindExecute, likewise.
	Execute Execute
	// Requests counts the enqueue requests this job carries: 1 plus the
	// number collapsed into it. No request is ever lost: each one is
	// carried by exactly one job.
	Requests int

	Enqueued time.Time // when the first request arrived
	Started  time.Time // when the runner was called; zero if it never ran
	Ended    time.Time // when the job reached its final state; zero if live

	// Cause is the cancellation cause: for a live running job, the cause it
	// has been asked to stop with (nil if none); for an ended job, what
	// cancelled or superseded it (nil if Done or Failed).
	Cause error
	// Err is what the runner returned (nil if it never ran or succeeded).
	Err error
}

func (r *Record) String() string {
	var req fmt.Stringer = &r.Execute
	if r.Kind == KindEnsureCompiled {
		req = &r.EnsureCompiled
	}
	s := fmt.Sprintf("job %d %s %s", r.ID, req, r.State)
	if r.Cause != nil {
		s += " (" + r.Cause.Error() + ")"
	}
	if r.Err != nil {
		s += ": " + r.Err.Error()
	}
	return s
}
