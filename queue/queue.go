package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ripple-run/ripple/jobs"
)

// Runner runs jobs; the engine implements it on the kernel pool.
//
// The queue calls EnsureCompiled alone: never beside another call. It calls
// Execute concurrently for different slots, at most once per slot and once
// per execution context at a time. The job pointer stays valid and
// unchanged until the call returns (and after; the runner must not modify
// it).
//
// ctx is the job's own context. It is cancelled with a jobs.Err cause when
// the job is aborted, when the queue stops (jobs.ErrShutdown) or when an
// Execute runs longer than Options.ExecuteTimeout (jobs.ErrTimeout);
// context.Cause(ctx) says which. A runner should give up promptly and
// return an error when it is cancelled. What it returns and the cause decide
// the job's final state (jobs.FinalState). A panic in a runner is recovered
// and fails the job with ErrRunnerPanicked.
type Runner interface {
	EnsureCompiled(ctx context.Context, job *jobs.EnsureCompiled) error
	Execute(ctx context.Context, job *jobs.Execute) error
}

// Options configure a Queue. The zero value is usable.
type Options struct {
	// MaxRunning limits how many Executes run at once over all slots;
	// 0 means one per slot and no other limit.
	MaxRunning int
	// ExecuteTimeout limits each Execute run: its context is cancelled with
	// jobs.ErrTimeout after that long. 0 means no limit.
	ExecuteTimeout time.Duration
	// OnEnd, if set, is told about every job once, when it reaches its final
	// state. It is called from one goroutine of the queue, in the order the
	// jobs ended, never with the queue's lock held, so it may call the
	// queue's methods (except Stop, which waits for it). A slow OnEnd
	// delays later OnEnd calls, WaitIdle and Stop; it never delays
	// scheduling.
	OnEnd func(jobs.Record)
	// MaxCompileHold turns on the collapsing of EnsureCompiled jobs across
	// a running compile (see compileHold in hold.go) and bounds how long a
	// held one waits for its requests to stop coming. 0 means compiles are
	// never held: a queued one starts as soon as its kernel is free.
	MaxCompileHold time.Duration
}

// Errors of the queue's life cycle.
var (
	// ErrNotStarted: the queue accepts work only after Start.
	ErrNotStarted = errors.New("queue not started")
	// ErrAlreadyStarted: Start was called twice.
	ErrAlreadyStarted = errors.New("queue already started")
	// ErrStopped: the queue was stopped; it accepts no more work. It wraps
	// jobs.ErrShutdown.
	ErrStopped = fmt.Errorf("queue stopped: %w", jobs.ErrShutdown)
	// ErrRunnerPanicked: a runner call panicked; the job failed with this
	// error, the panic value and a trimmed stack.
	ErrRunnerPanicked = errors.New("runner panicked")
)

type phase uint8

const (
	phaseNew      phase = iota // before Start
	phaseStarted               // accepting and scheduling
	phaseStopping              // Stop called: no new work, waiting for runners
)

// Queue is ripple's job scheduler: it holds EnsureCompiled and Execute jobs,
// collapses redundant ones, and calls its Runner under the scheduling rules
// (see schedule.go, where they are written down and implemented).
//
// Create one with New, Start it, feed it with Apply (or the Enqueue and
// Abort methods), and Stop it. All methods are safe for concurrent use.
type Queue struct {
	runner Runner
	opts   Options

	mu sync.Mutex
	// cond (on mu) wakes the dispatcher goroutine: a job ended, or Stop
	// began.
	cond *sync.Cond

	// Guarded by mu.
	phase phase
	// base is the queue's per-owner context: the values of Start's ctx
	// without its cancellation, the parent of every job's context. Set by
	// Start; jobs are cancelled one by one through their own contexts.
	base           context.Context
	nextID         jobs.ID
	nextSeq        uint64
	epoch          uint64 // counts Apply calls; see job.keepEpoch
	compileQueued  *job   // the one queued EnsureCompiled of every kernel (rule 3)
	compileRunning *job
	// Per-slot EnsureCompiled jobs live on their slotQueue; these count
	// them.
	nQueuedSlotCompiles  int
	nRunningSlotCompiles int
	slots                map[jobs.Slot]*slotQueue
	ready                []*slotQueue            // slots with nothing running and something queued
	queuedByCtx          map[jobs.ContextID]*job // the one queued Execute of a context (rule 4)
	runningByCtx         map[jobs.ContextID]*job
	nQueuedExec          int
	nRunningExec         int
	// events are ended jobs not yet handed to OnEnd; delivering is set
	// while the dispatcher hands a batch over (without the lock).
	events      []jobs.Record
	delivering  bool
	idleWaiters []chan struct{}
	// holdTimer wakes the scheduler when the earliest held EnsureCompiled
	// may start (holdAt); nil when none is armed. Its callback counts in
	// runners, so Stop waits for it.
	holdTimer *time.Timer
	holdAt    time.Time

	// runners counts runner goroutines; the dispatcher waits for it before
	// closing done.
	runners sync.WaitGroup
	// done is closed once the queue has stopped: every runner goroutine
	// returned and every OnEnd call was made.
	done chan struct{}
}

// New returns a queue that will run jobs with runner. It does nothing until
// Start.
func New(runner Runner, opts Options) *Queue {
	q := &Queue{
		runner:       runner,
		opts:         opts,
		slots:        make(map[jobs.Slot]*slotQueue),
		queuedByCtx:  make(map[jobs.ContextID]*job),
		runningByCtx: make(map[jobs.ContextID]*job),
		done:         make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Start starts the queue's goroutine; from then on it accepts and runs
// jobs. ctx gives jobs' contexts their values (loggers, traces); its
// cancellation is not passed on: stop the queue with Stop.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch q.phase {
	case phaseStarted:
		return ErrAlreadyStarted
	case phaseStopping:
		return ErrStopped
	}
	q.phase = phaseStarted
	q.base = context.WithoutCancel(ctx)
	go q.dispatch()
	return nil
}

// Stop stops the queue: it accepts no more work, dequeues every queued job
// (they end Cancelled with jobs.ErrShutdown), cancels every running job's
// context with jobs.ErrShutdown (the running EnsureCompiled too: nothing
// will run after it), and waits until every runner call has returned and
// every OnEnd call has been made.
//
// If ctx ends first, Stop returns its cause and the queue goes on stopping;
// call Stop again to wait more. Stop is idempotent; it must not be called
// from a runner or from OnEnd (it would wait for itself).
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	switch q.phase {
	case phaseNew:
		q.phase = phaseStopping
		close(q.done) // no goroutine was ever started
	case phaseStarted:
		q.phase = phaseStopping
		q.shutdownLocked(time.Now())
		q.cond.Signal()
	}
	q.mu.Unlock()
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("queue stop: %w (runners still running)", context.Cause(ctx))
	}
}

// acceptingLocked reports whether the queue takes new work.
func (q *Queue) acceptingLocked() error {
	switch q.phase {
	case phaseNew:
		return ErrNotStarted
	case phaseStopping:
		return ErrStopped
	}
	return nil
}

type jobIDKey struct{}

// JobID returns the id of the job whose context ctx is (or derives from),
// for the runner's logs and notifications.
func JobID(ctx context.Context) (jobs.ID, bool) {
	id, ok := ctx.Value(jobIDKey{}).(jobs.ID)
	return id, ok
}
