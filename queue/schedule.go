package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ripple-run/ripple/jobs"
)

// The scheduling rules (DESIGN.md, "Jobs and scheduling"), and where each
// one is kept:
//
//  1. An EnsureCompiled of one kernel (slotQueue.compileQueued/Running)
//     runs exclusively on its kernel: it starts only when nothing runs on
//     the slot, and nothing starts there while it runs. An EnsureCompiled
//     of every kernel (no Slots: Queue.compileQueued/Running) is a
//     barrier: it starts when nothing runs anywhere and nothing starts
//     while it is queued or runs.
//  2. Executes run in parallel with each other, one per slot (slotQueue.
//     running) and one per context (runningByCtx) at a time, at most
//     Options.MaxRunning in all, never beside an EnsureCompiled (rule 1).
//  3. Queued EnsureCompiled jobs collapse into one (compileQueued,
//     enqueueCompileLocked).
//  4. Queued Executes of one context collapse into one (queuedByCtx,
//     enqueueExecuteLocked, jobs.Execute.Collapse).
//  5. Every queued EnsureCompiled of a kernel runs before any queued
//     Execute starts on that kernel: a slot with one queued or running is
//     not ready (tidySlotLocked); a queued one waits for the slot's running
//     Execute to end (an edit that affects it cancels it, so that is quick;
//     an unaffected run is let finish). Other slots go on running.
//  6. The order of EnsureCompiled jobs is free: with rule 3 there is never
//     more than one queued.
//
// Rule 3 across a running compile (hold.go, with Options.MaxCompileHold):
// a queued EnsureCompiled of a kernel that requests joined while that
// kernel compiled waits until they stop coming for as long as that
// compile took, so a burst of edits costs the compile it began with and
// one more, not one per compile time of the burst.
//
// Among startable Executes the highest priority goes first, then the
// lowest seq: FIFO within a priority, and round-robin across contexts, since
// a context that runs and asks again queues behind the others.
//
// Locking: Queue.mu guards all of the above. The runner and OnEnd are
// always called without it, so they may call back into the queue.
//
// Cancellation: an aborted queued job is removed at once and ends with the
// abort's cause. An aborted running job only has its context cancelled: it
// keeps its slot (and, for an EnsureCompiled, its exclusivity) until its
// runner returns, because the kernel is busy until then; that is also why
// the next job of its context or slot waits for it. A running EnsureCompiled
// is never aborted, only cancelled by Stop.
//
// The queue is work-conserving: scheduleLocked runs after every change that
// can make a job startable (an enqueue that is not a plain collapse, the end
// of a job), so when the lock is free no queued job could start. A collapse
// that keeps the job on its slot therefore needs no scheduling pass.

// scheduleLocked starts every job the rules allow, best first.
func (q *Queue) scheduleLocked(now time.Time) {
	if q.phase != phaseStarted || q.compileRunning != nil {
		return
	}
	if q.compileQueued != nil {
		if q.nRunningExec == 0 && q.nRunningSlotCompiles == 0 {
			q.startLocked(q.compileQueued, now)
		}
		return
	}
	if q.nQueuedSlotCompiles > 0 {
		for _, s := range q.slots {
			if j := s.compileQueued; j != nil && s.running == nil && s.compileRunning == nil {
				if at, held := q.heldUntil(j, now); held {
					q.armHoldLocked(at, now)
					continue
				}
				q.startLocked(j, now)
			}
		}
	}
	for q.opts.MaxRunning <= 0 || q.nRunningExec < q.opts.MaxRunning {
		j := q.nextExecuteLocked()
		if j == nil {
			return
		}
		q.startLocked(j, now)
	}
}

// nextExecuteLocked returns the best startable queued Execute, or nil: the
// highest priority, then the lowest seq, among the jobs on ready slots
// whose context is not running elsewhere (it may have moved slots). It
// looks at the head of each ready slot's lists, so its cost grows with the
// number of free kernels, not of queued jobs.
func (q *Queue) nextExecuteLocked() *job {
	var best *job
	for _, s := range q.ready {
	levels:
		for p := jobs.NumPriorities - 1; p >= 0; p-- {
			for j := s.queued[p].head; j != nil; j = j.next {
				if q.runningByCtx[j.exec.Context] != nil {
					continue
				}
				if best == nil || j.exec.Priority > best.exec.Priority ||
					(j.exec.Priority == best.exec.Priority && j.seq < best.seq) {
					best = j
				}
				break levels
			}
		}
	}
	return best
}

// startLocked moves a queued job to Running and calls the runner on a new
// goroutine. The job's context is created here, under the lock, so that an
// abort that comes before the goroutine runs still reaches it.
func (q *Queue) startLocked(j *job, now time.Time) {
	if j.kind == jobs.KindEnsureCompiled && len(j.compile.Slots) == 1 {
		s := q.slots[j.compile.Slots[0]]
		s.compileQueued, s.compileRunning = nil, j
		q.nQueuedSlotCompiles--
		q.nRunningSlotCompiles++
		q.tidySlotLocked(s)
	} else if j.kind == jobs.KindEnsureCompiled {
		q.compileQueued, q.compileRunning = nil, j
	} else {
		q.unlinkLocked(j, j.exec.Slot)
		delete(q.queuedByCtx, j.exec.Context)
		q.nQueuedExec--
		s := q.slotLocked(j.exec.Slot)
		s.running = j
		q.tidySlotLocked(s)
		q.runningByCtx[j.exec.Context] = j
		q.nRunningExec++
	}
	j.state, j.started = jobs.StateRunning, now

	ctx, cancel := context.WithCancelCause(context.WithValue(q.base, jobIDKey{}, j.id))
	j.cancel = cancel
	var stopTimer context.CancelFunc
	if j.kind == jobs.KindExecute && q.opts.ExecuteTimeout > 0 {
		ctx, stopTimer = context.WithTimeoutCause(ctx, q.opts.ExecuteTimeout, jobs.ErrTimeout)
	}
	q.runners.Add(1)
	go q.run(ctx, j, stopTimer)
}

// run is a job's goroutine: it calls the runner, then ends the job and
// schedules what its end made startable.
func (q *Queue) run(ctx context.Context, j *job, stopTimer context.CancelFunc) {
	defer q.runners.Done()
	err := q.call(ctx, j)
	// The cause counts if the cancellation came before the runner returned;
	// reading it right away keeps a later abort from rewriting history.
	var cause error
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
	}
	if stopTimer != nil {
		stopTimer()
	}
	j.cancel(errJobEnded)

	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	if j.kind == jobs.KindEnsureCompiled && len(j.compile.Slots) == 1 {
		s := q.slots[j.compile.Slots[0]]
		s.compileRunning = nil
		q.nRunningSlotCompiles--
		if next := s.compileQueued; next != nil && next.superseding {
			// A compile that failed or was cut short says nothing about
			// how long one takes, and what follows it may be the fix.
			next.holdFor, next.compiledAt = now.Sub(j.started), now
			next.superseding = err == nil && cause == nil
		}
		q.tidySlotLocked(s)
	} else if j.kind == jobs.KindEnsureCompiled {
		q.compileRunning = nil
	} else {
		s := q.slots[j.exec.Slot]
		s.running = nil
		q.tidySlotLocked(s)
		delete(q.runningByCtx, j.exec.Context)
		q.nRunningExec--
	}
	state := jobs.FinalState(err, cause)
	if state == jobs.StateDone || state == jobs.StateFailed {
		cause = nil
	}
	q.endLocked(j, state, cause, err, now)
	q.scheduleLocked(now)
}

// errJobEnded releases a finished job's context; nothing observes it.
var errJobEnded = errors.New("job ended")

// call calls the runner, turning a panic into ErrRunnerPanicked.
func (q *Queue) call(ctx context.Context, j *job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: job %d %s: %v\n%s", ErrRunnerPanicked, j.id, j.kind, r, panicStack())
		}
	}()
	if j.kind == jobs.KindEnsureCompiled {
		return q.runner.EnsureCompiled(ctx, &j.compile)
	}
	return q.runner.Execute(ctx, &j.exec)
}

// panicStack is the stack of the panicking goroutine from the frame that
// panicked, capped: enough to find the bug, not a page of runtime frames.
func panicStack() []byte {
	const maxLen = 4 << 10
	stack := debug.Stack()
	// Skip the goroutine header, debug.Stack, the deferred function and
	// the runtime's panic frames: the panicking frame follows "panic(".
	if i := bytes.Index(stack, []byte("\npanic(")); i >= 0 {
		rest := stack[i+1:]
		for range 2 { // the panic( line and its file:line
			if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
				rest = rest[nl+1:]
			}
		}
		stack = rest
	}
	if len(stack) > maxLen {
		stack = append(stack[:maxLen:maxLen], "\n..."...)
	}
	return bytes.TrimRight(stack, "\n")
}

// endLocked moves a job to its final state and queues its record for OnEnd.
func (q *Queue) endLocked(j *job, state jobs.State, cause, err error, now time.Time) {
	j.state, j.cause = state, cause
	r := j.record()
	r.Ended, r.Err = now, err
	q.events = append(q.events, r)
	q.cond.Signal()
}
