package queue

import (
	"context"
	"time"

	"github.com/ripple-run/ripple/jobs"
)

// job is the queue's record of one job.
//
// Ownership: every field is guarded by Queue.mu, with two exceptions that
// let the runner work without the lock. The request (compile or exec) is
// written only while the job is queued (collapsing); once the job is
// running it is frozen, so the runner reads it through the pointer it was
// given. cancel is set once, before the runner goroutine starts, and
// CancelCauseFunc is safe to call from any goroutine.
type job struct {
	id       jobs.ID
	kind     jobs.Kind
	enqueued time.Time

	compile jobs.EnsureCompiled // when kind is KindEnsureCompiled
	exec    jobs.Execute        // when kind is KindExecute

	state    jobs.State
	requests int // enqueue requests carried: 1 + collapsed ones
	started  time.Time
	// cause is the first cancellation cause asked for while the job runs
	// (nil if none). The cause the job ends with is read from its context,
	// which also knows about timeouts.
	cause  error
	cancel context.CancelCauseFunc // set when the job starts

	// Queued Executes only: the job's place in its slot's list for its
	// priority. seq orders jobs FIFO across slots; a job gets a new seq
	// (goes to the back) when it is created, when a collapse raises its
	// priority and when a collapse moves it to another slot.
	seq        uint64
	prev, next *job
	list       *jobList
	// keepEpoch is the Apply call that last enqueued or collapsed into this
	// job: that call's aborts spare it (see Queue.Apply).
	keepEpoch uint64
	// EnsureCompiled jobs of one kernel only (hold.go): lastRequest is when
	// the last request joined the job and longestGap the longest time
	// between two that did; superseding says a request joined while a
	// compile of its kernel ran, whose duration is holdFor once it has
	// ended (at compiledAt).
	lastRequest time.Time
	compiledAt  time.Time
	longestGap  time.Duration
	superseding bool
	holdFor     time.Duration
}

// record is the job as a jobs.Record. Requests are values with
// copy-on-write sets, so the record stays valid whatever happens to the
// job later.
func (j *job) record() jobs.Record {
	r := jobs.Record{
		ID:       j.id,
		Kind:     j.kind,
		State:    j.state,
		Requests: j.requests,
		Enqueued: j.enqueued,
		Started:  j.started,
		Cause:    j.cause,
	}
	if j.kind == jobs.KindEnsureCompiled {
		r.EnsureCompiled = j.compile
	} else {
		r.Execute = j.exec
	}
	return r
}

// jobList is an intrusive doubly linked FIFO of queued Executes, ordered by
// seq (new and moved jobs go to the back with a fresh seq).
type jobList struct {
	head, tail *job
	len        int
}

func (l *jobList) pushBack(j *job) {
	j.list, j.prev, j.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = j
	} else {
		l.head = j
	}
	l.tail = j
	l.len++
}

func (l *jobList) remove(j *job) {
	if j.prev != nil {
		j.prev.next = j.next
	} else {
		l.head = j.next
	}
	if j.next != nil {
		j.next.prev = j.prev
	} else {
		l.tail = j.prev
	}
	j.list, j.prev, j.next = nil, nil, nil
	l.len--
}

// slotQueue is one kernel slot: the Execute running on it and the Executes
// waiting for it, one FIFO per priority. A slot with nothing running and
// something queued is "ready" and listed in Queue.ready, so the scheduler
// looks at those only, not at every slot. A slotQueue with nothing running
// and nothing queued is deleted, so slots that come and go leave nothing
// behind. Queue.tidySlotLocked keeps both after every change.
type slotQueue struct {
	slot    jobs.Slot
	running *job
	// compileQueued and compileRunning are the slot's own EnsureCompiled
	// jobs (rules 1, 3 and 5 per kernel): while either is set no Execute
	// starts on the slot.
	compileQueued, compileRunning *job
	queued                        [jobs.NumPriorities]jobList
	nQueued                       int
	// readyAt is the slot's index in Queue.ready, -1 when not there.
	readyAt int
}
