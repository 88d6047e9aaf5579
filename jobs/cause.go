package jobs

import (
	"errors"
	"fmt"
)

// Cancellation causes. The queue cancels a job's context with one of these
// (context.WithCancelCause), and a job dequeued before it ran ends with one;
// the job's final State and its Record.Cause say which. Use errors.Is.
//
// The first three are the "superseded" class (errors.Is(err, ErrSuperseded)):
// newer work replaces the job and is already queued. The others end the job
// for good (state Cancelled).
var (
	// ErrSuperseded is the class of causes for work replaced by newer work.
	ErrSuperseded = errors.New("superseded")
	// ErrEdited: a project file was edited (by a client or on disk).
	ErrEdited = fmt.Errorf("%w by a file edit", ErrSuperseded)
	// ErrStackChanged: the context's stack was pushed or popped.
	ErrStackChanged = fmt.Errorf("%w by a stack change", ErrSuperseded)
	// ErrRecomputed: the context was asked to recompute.
	ErrRecomputed = fmt.Errorf("%w by a recompute", ErrSuperseded)

	// ErrInterrupted: the user interrupted the context.
	ErrInterrupted = errors.New("interrupted by the user")
	// ErrContextDestroyed: the execution context was destroyed.
	ErrContextDestroyed = errors.New("execution context destroyed")
	// ErrShutdown: the queue is stopping.
	ErrShutdown = errors.New("shutting down")
	// ErrTimeout: the job ran longer than its time limit.
	ErrTimeout = errors.New("timed out")
)

// Errors of bad input.
var (
	// ErrInvalidJob: a job request, abort or plan is malformed; the wrapped
	// message names the field at fault.
	ErrInvalidJob = errors.New("invalid job")
	// ErrUnknownContext: a call names an execution context the state does
	// not hold.
	ErrUnknownContext = errors.New("unknown execution context")
)
