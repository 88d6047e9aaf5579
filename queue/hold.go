package queue

import "time"

// Collapsing across a running compile.
//
// Rule 3 collapses the EnsureCompiled jobs that are queued together. A
// burst of edits outlasts a compile, though: edits keep arriving while the
// kernel compiles, collapse into the next queued compile, and that one
// starts the moment the kernel is free, to be superseded by the edits that
// arrive while it runs, and so on: a burst of N edits spaced d apart costs
// about N·d / (compile time) compiles, each one's result stale before the
// run that rule 5 keeps waiting behind them could use it. What the queue
// knows is enough to do better: a queued compile that requests joined
// while its kernel was compiling (job.superseding) is superseded work in
// the making as long as they keep coming. It is held until neither a new
// request nor the end of the compile it follows is more recent than that
// compile's duration (job.holdFor), or than twice the longest pause
// between its requests if that is longer (job.longestGap: the burst's own
// rhythm, which a loaded machine or a slow typist stretches). Edits closer
// together than that are one burst, which costs the compile it began with
// and the one after its last edit. A request that finds its kernel idle
// is not held, so a lone edit compiles at once; nor is one that follows a
// failed compile (it may be the fix). Options.MaxCompileHold (counted from
// the job's creation) bounds the wait, so a stream of edits that never
// pauses still gets a compile, and its run, that often.

// heldUntil reports whether the queued EnsureCompiled j of a kernel must
// wait, and until when.
func (q *Queue) heldUntil(j *job, now time.Time) (time.Time, bool) {
	if q.opts.MaxCompileHold <= 0 || !j.superseding {
		return time.Time{}, false
	}
	// Counted from the compile's end at the earliest: the kernel was not
	// free before, and an editor busy while it compiled (the same
	// machine) is often slow to send the next edit right then.
	from := j.lastRequest
	if j.compiledAt.After(from) {
		from = j.compiledAt
	}
	at := from.Add(max(j.holdFor, 2*j.longestGap))
	if limit := j.enqueued.Add(q.opts.MaxCompileHold); limit.Before(at) {
		at = limit
	}
	return at, now.Before(at)
}

// armHoldLocked makes sure the scheduler runs again at at (or earlier).
// One timer serves every held compile: when it fires, scheduleLocked
// starts those whose time has come and arms it for the next.
func (q *Queue) armHoldLocked(at, now time.Time) {
	if q.holdTimer != nil && !at.Before(q.holdAt) {
		return
	}
	q.stopHoldLocked()
	q.holdAt = at
	q.runners.Add(1)
	var t *time.Timer
	t = time.AfterFunc(at.Sub(now), func() {
		defer q.runners.Done()
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.holdTimer == t {
			q.holdTimer = nil
		}
		q.scheduleLocked(time.Now())
	})
	q.holdTimer = t
}

// stopHoldLocked disarms the hold timer. A callback already under way
// finds the timer replaced and only schedules.
func (q *Queue) stopHoldLocked() {
	if q.holdTimer == nil {
		return
	}
	if q.holdTimer.Stop() {
		q.runners.Done() // its callback will not run
	}
	q.holdTimer = nil
}
