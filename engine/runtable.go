package engine

import (
	"sync"
	"time"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
)

// runTable records the runs in flight: which context's Execute is on each
// kernel slot, and which runs an edit asked to stop at their next
// statement boundary (softstop.go).
//
// mu guards both maps; only the methods below touch them. An entry of
// running is added by the slot's Execute runner when its run starts and
// removed by that runner when it ends (the queue runs one Execute per
// slot at a time). softStops entries are added by an edit (stopAtBoundary)
// and removed by the run's end (endSoftStop); the escalation timer of an
// entry runs without mu. No other engine lock is taken with mu held.
type runTable struct {
	mu sync.Mutex
	// running is the context whose Execute is in flight on a slot.
	running map[int]protocol.ContextID
	// softStops are the runs an edit asked to stop at their next statement
	// boundary, by context.
	softStops map[protocol.ContextID]*softStop
}

// softStop is one run asked to stop at its next statement boundary.
type softStop struct {
	job   jobs.ID     // the running Execute it is for
	timer *time.Timer // escalates to an interrupt
}

func newRunTable() *runTable {
	return &runTable{running: make(map[int]protocol.ContextID), softStops: make(map[protocol.ContextID]*softStop)}
}

// begin records that context id's Execute runs on slot.
func (t *runTable) begin(slot int, id protocol.ContextID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running[slot] = id
}

// end forgets slot's run of context id (a later run of another context on
// the slot is left alone).
func (t *runTable) end(slot int, id protocol.ContextID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running[slot] == id {
		delete(t.running, slot)
	}
}

// on returns the context whose Execute runs on slot ("" when none).
func (t *runTable) on(slot int) protocol.ContextID {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running[slot]
}

// busy reports whether an Execute runs on slot.
func (t *runTable) busy(slot int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, busy := t.running[slot]
	return busy
}

// armSoftStop records that context id's running Execute (job) is asked to
// stop at its next statement boundary, with escalate called after d if it
// is still running then. again reports that this job was asked already:
// its clock runs on and nothing is armed. A stop recorded for an earlier
// job of the context is replaced (its timer stopped).
func (t *runTable) armSoftStop(id protocol.ContextID, job jobs.ID, d time.Duration, escalate func()) (again bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.softStops[id]; s != nil && s.job == job {
		return true
	}
	s := &softStop{job: job, timer: time.AfterFunc(d, escalate)}
	if old := t.softStops[id]; old != nil {
		old.timer.Stop()
	}
	t.softStops[id] = s
	return false
}

// softStopping reports whether context id's Execute job is still asked to
// stop at its boundary.
func (t *runTable) softStopping(id protocol.ContextID, job jobs.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.softStops[id]
	return s != nil && s.job == job
}

// endSoftStop forgets the stop of context id's run job (it ended); it
// reports whether the run had been asked to stop.
func (t *runTable) endSoftStop(id protocol.ContextID, job jobs.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.softStops[id]
	if s == nil || s.job != job {
		return false
	}
	s.timer.Stop()
	delete(t.softStops, id)
	return true
}
