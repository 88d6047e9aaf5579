package queue

import (
	"context"

	"github.com/ripple-run/ripple/jobs"
)

// dispatch is the queue's one goroutine besides the runners': it hands
// ended jobs' records to OnEnd, in order and without the lock, so a slow
// OnEnd never holds up scheduling; it wakes WaitIdle callers; and, once
// Stop has begun and every runner has given its job back, it finishes the
// stop and exits.
func (q *Queue) dispatch() {
	var batch []jobs.Record
	q.mu.Lock()
	for {
		if len(q.events) > 0 {
			// Swap buffers: runners append to the other one meanwhile.
			batch, q.events = q.events, batch[:0]
			q.delivering = true
			q.mu.Unlock()
			for i := range batch {
				if q.opts.OnEnd != nil {
					q.opts.OnEnd(batch[i])
				}
				batch[i] = jobs.Record{} // let the job's request go
			}
			q.mu.Lock()
			q.delivering = false
			continue
		}
		if q.idleLocked() {
			for _, ch := range q.idleWaiters {
				close(ch)
			}
			q.idleWaiters = nil
		}
		if q.phase == phaseStopping && q.compileRunning == nil && q.nRunningExec == 0 && q.nRunningSlotCompiles == 0 {
			break // no job is left to end: every record has been handed over
		}
		q.cond.Wait()
	}
	q.mu.Unlock()
	q.runners.Wait() // runner goroutines only have their return left
	close(q.done)
}

// idleLocked reports whether no job is queued or running and every ended
// job has been handed to OnEnd.
func (q *Queue) idleLocked() bool {
	return q.compileQueued == nil && q.compileRunning == nil &&
		q.nQueuedSlotCompiles == 0 && q.nRunningSlotCompiles == 0 &&
		q.nQueuedExec == 0 && q.nRunningExec == 0 &&
		len(q.events) == 0 && !q.delivering
}

// WaitIdle waits until no job is queued or running and OnEnd has been told
// about every job that ended: a batch run (ripple run) waits for its work
// this way. It returns at once on an idle queue, nil when idle, and the
// cause of ctx if ctx ends first. Jobs enqueued after it returns are not
// its business.
func (q *Queue) WaitIdle(ctx context.Context) error {
	q.mu.Lock()
	if q.phase == phaseNew || q.idleLocked() {
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q.idleWaiters = append(q.idleWaiters, ch)
	q.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
