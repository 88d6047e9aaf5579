package jobs

import (
	"errors"
	"strconv"
)

// State is where a job is in its life. A job is Queued, then usually
// Running, and ends in exactly one final state (Done, Failed, Cancelled or
// Superseded), which never changes again. Only the queue moves jobs between
// states, under its lock.
type State uint8

const (
	// StateQueued: the job waits in the queue. Entered when the queue
	// accepts a request that does not collapse into an already queued job.
	// Left when the scheduler starts the job (Running) or an abort or Stop
	// dequeues it (Cancelled or Superseded, after its cause). While Queued,
	// later requests may collapse into it.
	StateQueued State = iota + 1
	// StateRunning: the runner has the job. Entered when the scheduler calls
	// the runner. Left only when the runner returns (see FinalState):
	// cancelling a running job's context does not move it, it waits for
	// the runner to give up.
	StateRunning
	// StateDone: the runner returned nil. Final.
	StateDone
	// StateFailed: the runner returned an error (or panicked) and the job's
	// context was not cancelled. Final.
	StateFailed
	// StateCancelled: the job was dequeued, or its runner returned an error
	// after its context was cancelled, with a cause outside the superseded
	// class: ErrInterrupted, ErrContextDestroyed, ErrShutdown, ErrTimeout.
	// Final.
	StateCancelled
	// StateSuperseded: like StateCancelled, with a cause of the ErrSuperseded
	// class (ErrEdited, ErrStackChanged, ErrRecomputed): newer work replaces
	// this job. Final.
	StateSuperseded
)

// IsFinal reports whether s is one of the four final states.
func (s State) IsFinal() bool { return s >= StateDone && s <= StateSuperseded }

func (s State) String() string {
	switch s {
	case StateQueued:
		return "queued"
	case StateRunning:
		return "running"
	case StateDone:
		return "done"
	case StateFailed:
		return "failed"
	case StateCancelled:
		return "cancelled"
	case StateSuperseded:
		return "superseded"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// StateForCause is the final state of a job ended by cause: Superseded for
// the ErrSuperseded class, Cancelled for any other cause.
func StateForCause(cause error) State {
	if errors.Is(cause, ErrSuperseded) {
		return StateSuperseded
	}
	return StateCancelled
}

// FinalState decides how a job that ran ends, from what its runner returned
// and the cause its context was cancelled with (nil if it was not):
//   - the runner returned nil: Done, even if cancellation came too late to
//     stop it (its work is complete);
//   - the runner returned an error after cancellation: StateForCause(cause),
//     since the error is most likely the runner giving up;
//   - otherwise: Failed.
func FinalState(runErr, cause error) State {
	switch {
	case runErr == nil:
		return StateDone
	case cause != nil:
		return StateForCause(cause)
	}
	return StateFailed
}
