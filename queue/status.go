package queue

import (
	"cmp"
	"maps"
	"slices"

	"github.com/ripple-run/ripple/jobs"
)

// Status is a snapshot of the queue for runtime/status.
type Status struct {
	QueuedEnsureCompiled  int // at most 1 per kernel, or 1 for every kernel (rule 3)
	RunningEnsureCompiled int // at most 1 per kernel (rule 1)
	QueuedExecutes        int
	RunningExecutes       int
	// Contexts are the contexts with a queued or running Execute, by id.
	Contexts []ContextStatus
}

// Pending is the number of queued jobs of both kinds.
func (s *Status) Pending() int { return s.QueuedEnsureCompiled + s.QueuedExecutes }

// Running is the number of running jobs of both kinds.
func (s *Status) Running() int { return s.RunningEnsureCompiled + s.RunningExecutes }

// ContextStatus is one context's share of the queue.
type ContextStatus struct {
	Context jobs.ContextID
	// Queued and Running are the ids of the context's queued and running
	// Execute (0: none).
	Queued, Running jobs.ID
	// Priority is the queued Execute's priority.
	Priority jobs.Priority
	// Stopping is the cause the running Execute has been asked to stop with
	// (nil: none); it is still running until its runner gives up.
	Stopping error
}

// Status returns a snapshot of the queue.
func (q *Queue) Status() Status {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := Status{QueuedExecutes: q.nQueuedExec, RunningExecutes: q.nRunningExec,
		QueuedEnsureCompiled: q.nQueuedSlotCompiles, RunningEnsureCompiled: q.nRunningSlotCompiles}
	if q.compileQueued != nil {
		st.QueuedEnsureCompiled++
	}
	if q.compileRunning != nil {
		st.RunningEnsureCompiled++
	}
	byCtx := make(map[jobs.ContextID]*ContextStatus, len(q.queuedByCtx)+len(q.runningByCtx))
	entry := func(id jobs.ContextID) *ContextStatus {
		c := byCtx[id]
		if c == nil {
			c = &ContextStatus{Context: id}
			byCtx[id] = c
		}
		return c
	}
	for id, j := range q.queuedByCtx {
		c := entry(id)
		c.Queued, c.Priority = j.id, j.exec.Priority
	}
	for id, j := range q.runningByCtx {
		c := entry(id)
		c.Running, c.Stopping = j.id, j.cause
	}
	st.Contexts = make([]ContextStatus, 0, len(byCtx))
	for _, c := range byCtx {
		st.Contexts = append(st.Contexts, *c)
	}
	slices.SortFunc(st.Contexts, func(a, b ContextStatus) int { return cmp.Compare(a.Context, b.Context) })
	return st
}

// Work reports whether context id has an Execute queued, and one running.
func (q *Queue) Work(id jobs.ContextID) (queued, running bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queuedByCtx[id] != nil, q.runningByCtx[id] != nil
}

// RunningJob returns the id of context id's running Execute, if any.
func (q *Queue) RunningJob(id jobs.ContextID) (jobs.ID, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if j := q.runningByCtx[id]; j != nil {
		return j.id, true
	}
	return 0, false
}

// CancelRunning cancels context id's running Execute with cause if it is
// still job, leaving its queued Execute alone (unlike an abort). It
// reports whether it did.
func (q *Queue) CancelRunning(id jobs.ContextID, job jobs.ID, cause error) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	j := q.runningByCtx[id]
	if j == nil || j.id != job {
		return false
	}
	cancelLocked(j, cause)
	return true
}

// Jobs returns the records of the live jobs: the running ones first (the
// EnsureCompiled, then Executes by id), then the queued ones in the order
// the scheduler prefers them (the EnsureCompiled, then Executes by priority
// and FIFO order; which of them can start also depends on their slots).
func (q *Queue) Jobs() []jobs.Record {
	q.mu.Lock()
	defer q.mu.Unlock()
	running := slices.SortedFunc(maps.Values(q.runningByCtx), func(a, b *job) int {
		return cmp.Compare(a.id, b.id)
	})
	queued := slices.SortedFunc(maps.Values(q.queuedByCtx), func(a, b *job) int {
		if a.exec.Priority != b.exec.Priority {
			return cmp.Compare(b.exec.Priority, a.exec.Priority)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	var slotRunning, slotQueued []*job
	for _, s := range q.slots {
		if s.compileRunning != nil {
			slotRunning = append(slotRunning, s.compileRunning)
		}
		if s.compileQueued != nil {
			slotQueued = append(slotQueued, s.compileQueued)
		}
	}
	byID := func(a, b *job) int { return cmp.Compare(a.id, b.id) }
	slices.SortFunc(slotRunning, byID)
	slices.SortFunc(slotQueued, byID)
	records := make([]jobs.Record, 0, len(running)+len(queued)+len(slotRunning)+len(slotQueued)+2)
	for _, group := range [][]*job{{q.compileRunning}, slotRunning, running, {q.compileQueued}, slotQueued, queued} {
		for _, j := range group {
			if j != nil {
				records = append(records, j.record())
			}
		}
	}
	return records
}
