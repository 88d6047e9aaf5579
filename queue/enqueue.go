package queue

import (
	"fmt"
	"time"

	"github.com/ripple-run/ripple/jobs"
)

// Apply carries out one API call's plan atomically: no job starts or ends
// between its aborts and its enqueues. The aborts cancel running Executes in
// their scope and dequeue queued ones, except that a queued Execute the
// same plan asks for again is kept and the new request collapses into it:
// dequeuing it and enqueuing a fresh one would be the same work with a new
// id, minus what the old one carried (invalidated expressions, a
// visualization's priority). A plan that is invalid changes nothing.
func (q *Queue) Apply(p jobs.Plan) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("queue apply: %w", err)
	}
	if !p.EnsureCompiled.Modules.IsEmpty() {
		if err := p.EnsureCompiled.Validate(); err != nil {
			return fmt.Errorf("queue apply: %w", err)
		}
	}
	return q.apply(&p, "queue apply")
}

// apply is Apply for a valid plan; op names the caller in errors.
func (q *Queue) apply(p *jobs.Plan, op string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.acceptingLocked(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	now := time.Now()
	q.epoch++
	// Enqueue before aborting so that the aborts can tell which queued jobs
	// this plan asks for again (job.keepEpoch == q.epoch).
	for i := range p.Executes {
		q.enqueueExecuteLocked(&p.Executes[i], now)
	}
	for i := range p.Aborts {
		q.abortLocked(&p.Aborts[i], now)
	}
	if !p.EnsureCompiled.Modules.IsEmpty() {
		q.enqueueCompileLocked(&p.EnsureCompiled, now)
	}
	q.scheduleLocked(now)
	return nil
}

// EnqueueExecute enqueues one Execute, collapsing it into the context's
// queued Execute if there is one (rule 4). It returns the id of the job that
// carries the request. A collapsing enqueue does not allocate unless it adds
// expressions the queued job lacks.
func (q *Queue) EnqueueExecute(e jobs.Execute) (jobs.ID, error) {
	if err := e.Validate(); err != nil {
		return 0, fmt.Errorf("queue enqueue: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.acceptingLocked(); err != nil {
		return 0, fmt.Errorf("queue enqueue: %w", err)
	}
	now := time.Now()
	q.epoch++
	j, startable := q.enqueueExecuteLocked(&e, now)
	if startable {
		q.scheduleLocked(now)
	}
	return j.id, nil
}

// EnqueueEnsureCompiled enqueues one EnsureCompiled, collapsing it into the
// queued one if there is one (rule 3). It returns the id of the job that
// carries the request.
func (q *Queue) EnqueueEnsureCompiled(e jobs.EnsureCompiled) (jobs.ID, error) {
	if err := e.Validate(); err != nil {
		return 0, fmt.Errorf("queue enqueue: %w", err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.acceptingLocked(); err != nil {
		return 0, fmt.Errorf("queue enqueue: %w", err)
	}
	now := time.Now()
	j, created := q.enqueueCompileLocked(&e, now)
	if created {
		q.scheduleLocked(now)
	}
	return j.id, nil
}

// AbortAll aborts every context's Executes with cause (see jobs.Abort):
// queued ones are dequeued, running ones cancelled. EnsureCompiled jobs are
// left alone.
func (q *Queue) AbortAll(cause error) error {
	return q.abort(jobs.AbortAll(cause))
}

// AbortContext aborts one context's Executes with cause (see jobs.Abort).
// Other contexts' jobs are not touched.
func (q *Queue) AbortContext(id jobs.ContextID, cause error) error {
	return q.abort(jobs.AbortContext(id, cause))
}

func (q *Queue) abort(a jobs.Abort) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("queue abort: %w", err)
	}
	return q.apply(&jobs.Plan{Aborts: []jobs.Abort{a}}, "queue abort")
}

// enqueueExecuteLocked adds the request to the context's queued Execute or
// queues a new one. It reports whether a job may have become startable,
// which a collapse that leaves the job on its slot cannot cause (nothing
// queued was startable before, see scheduleLocked).
func (q *Queue) enqueueExecuteLocked(e *jobs.Execute, now time.Time) (j *job, startable bool) {
	if j = q.queuedByCtx[e.Context]; j != nil {
		oldSlot, oldPriority := j.exec.Slot, j.exec.Priority
		j.exec.Collapse(e)
		j.requests++
		j.keepEpoch = q.epoch
		if j.exec.Slot != oldSlot || j.exec.Priority != oldPriority {
			q.unlinkLocked(j, oldSlot)
			q.linkLocked(j)
		}
		return j, j.exec.Slot != oldSlot
	}
	q.nextID++
	j = &job{
		id:        q.nextID,
		kind:      jobs.KindExecute,
		enqueued:  now,
		exec:      *e, // sets are copy-on-write: sharing the caller's is safe
		state:     jobs.StateQueued,
		requests:  1,
		keepEpoch: q.epoch,
	}
	if j.exec.Expressions.IsEmpty() {
		j.exec.Expressions = jobs.All[jobs.ExpressionID]() // DESIGN.md: empty = all
	}
	q.queuedByCtx[e.Context] = j
	q.nQueuedExec++
	q.linkLocked(j)
	return j, true
}

// enqueueCompileLocked adds the request to the queued EnsureCompiled of
// each of its slots (of every kernel when it names none) or queues a new
// one, reporting whether it created one. It returns the job of the first
// slot.
func (q *Queue) enqueueCompileLocked(e *jobs.EnsureCompiled, now time.Time) (first *job, created bool) {
	if len(e.Slots) == 0 {
		return q.enqueueGlobalCompileLocked(e, now)
	}
	for i, slot := range e.Slots {
		one := jobs.EnsureCompiled{Modules: e.Modules, Slots: []jobs.Slot{slot}}
		s := q.slotLocked(slot)
		j := s.compileQueued
		if j != nil {
			j.compile.Collapse(&one)
			j.requests++
		} else {
			q.nextID++
			j = &job{
				id:       q.nextID,
				kind:     jobs.KindEnsureCompiled,
				enqueued: now,
				compile:  one,
				state:    jobs.StateQueued,
				requests: 1,
			}
			s.compileQueued = j
			q.nQueuedSlotCompiles++
			q.tidySlotLocked(s)
			created = true
		}
		if !j.lastRequest.IsZero() {
			j.longestGap = max(j.longestGap, now.Sub(j.lastRequest))
		}
		j.lastRequest = now
		if s.compileRunning != nil {
			j.superseding = true
		}
		if i == 0 {
			first = j
		}
	}
	return first, created
}

// enqueueGlobalCompileLocked adds the request to the queued EnsureCompiled
// of every kernel or queues a new one, reporting whether it created one.
func (q *Queue) enqueueGlobalCompileLocked(e *jobs.EnsureCompiled, now time.Time) (j *job, created bool) {
	if j = q.compileQueued; j != nil {
		j.compile.Collapse(e)
		j.requests++
		return j, false
	}
	q.nextID++
	j = &job{
		id:       q.nextID,
		kind:     jobs.KindEnsureCompiled,
		enqueued: now,
		compile:  *e,
		state:    jobs.StateQueued,
		requests: 1,
	}
	q.compileQueued = j
	return j, true
}

// linkLocked puts a queued Execute at the back of its slot's list for its
// priority, with a fresh seq.
func (q *Queue) linkLocked(j *job) {
	s := q.slotLocked(j.exec.Slot)
	q.nextSeq++
	j.seq = q.nextSeq
	s.queued[j.exec.Priority].pushBack(j)
	s.nQueued++
	q.tidySlotLocked(s)
}

// unlinkLocked takes a queued Execute out of the list it is in on slot.
func (q *Queue) unlinkLocked(j *job, slot jobs.Slot) {
	s := q.slots[slot]
	j.list.remove(j)
	s.nQueued--
	q.tidySlotLocked(s)
}

// slotLocked returns the slot's queue, creating it if needed.
func (q *Queue) slotLocked(slot jobs.Slot) *slotQueue {
	s := q.slots[slot]
	if s == nil {
		s = &slotQueue{slot: slot, readyAt: -1}
		q.slots[slot] = s
	}
	return s
}

// tidySlotLocked keeps a slot's membership of q.ready and q.slots true to
// its state after a change.
func (q *Queue) tidySlotLocked(s *slotQueue) {
	ready := s.running == nil && s.nQueued > 0 && s.compileQueued == nil && s.compileRunning == nil
	switch {
	case ready && s.readyAt < 0:
		s.readyAt = len(q.ready)
		q.ready = append(q.ready, s)
	case !ready && s.readyAt >= 0:
		last := q.ready[len(q.ready)-1]
		q.ready[s.readyAt], last.readyAt = last, s.readyAt
		q.ready[len(q.ready)-1] = nil
		q.ready = q.ready[:len(q.ready)-1]
		s.readyAt = -1
	}
	if s.running == nil && s.nQueued == 0 && s.compileQueued == nil && s.compileRunning == nil {
		delete(q.slots, s.slot)
	}
}

// abortLocked applies one abort: queued Executes in its scope that the
// current Apply did not ask for are dequeued with its cause; running ones
// in its scope are cancelled with it (they end when their runner returns).
// EnsureCompiled jobs are never touched (see jobs.Abort).
func (q *Queue) abortLocked(a *jobs.Abort, now time.Time) {
	if !a.All {
		if j := q.queuedByCtx[a.Context]; j != nil && j.keepEpoch != q.epoch {
			q.dequeueLocked(j, a.Cause, now)
		}
		if j := q.runningByCtx[a.Context]; j != nil {
			cancelLocked(j, a.Cause)
		}
		return
	}
	for _, s := range q.slots {
		for p := range s.queued {
			for j := s.queued[p].head; j != nil; {
				next := j.next
				if j.keepEpoch != q.epoch {
					q.dequeueLocked(j, a.Cause, now)
				}
				j = next
			}
		}
	}
	for _, j := range q.runningByCtx {
		cancelLocked(j, a.Cause)
	}
}

// cancelLocked asks a running job to stop. The first cause wins, as in its
// context; the job stays Running until its runner returns.
func cancelLocked(j *job, cause error) {
	if j.cause == nil {
		j.cause = cause
		j.cancel(cause)
	}
}

// dequeueLocked ends a queued Execute that never ran.
func (q *Queue) dequeueLocked(j *job, cause error, now time.Time) {
	q.unlinkLocked(j, j.exec.Slot)
	delete(q.queuedByCtx, j.exec.Context)
	q.nQueuedExec--
	q.endLocked(j, jobs.StateForCause(cause), cause, nil, now)
}

// shutdownLocked ends every queued job and cancels every running one with
// jobs.ErrShutdown (Stop).
func (q *Queue) shutdownLocked(now time.Time) {
	q.epoch++
	q.abortLocked(&jobs.Abort{All: true, Cause: jobs.ErrShutdown}, now)
	q.stopHoldLocked()
	if j := q.compileQueued; j != nil {
		q.compileQueued = nil
		q.endLocked(j, jobs.StateCancelled, jobs.ErrShutdown, nil, now)
	}
	if j := q.compileRunning; j != nil {
		cancelLocked(j, jobs.ErrShutdown)
	}
	for _, s := range q.slots {
		if j := s.compileQueued; j != nil {
			s.compileQueued = nil
			q.nQueuedSlotCompiles--
			q.endLocked(j, jobs.StateCancelled, jobs.ErrShutdown, nil, now)
		}
		if j := s.compileRunning; j != nil {
			cancelLocked(j, jobs.ErrShutdown)
		}
	}
	for _, s := range q.slots {
		q.tidySlotLocked(s)
	}
}
