package queuetest

import (
	"context"
	"fmt"
	"sync"

	"github.com/ripple-run/ripple/jobs"
)

// Recorder collects the records a queue reports to Options.OnEnd and notes
// a job reported twice. The zero value is ready to use; pass its OnEnd
// method to the queue.
type Recorder struct {
	mu sync.Mutex
	// Guarded by mu.
	records    []jobs.Record
	byID       map[jobs.ID]int // index in records
	duplicates []jobs.ID
	changed    chan struct{} // closed and replaced on every report
}

// OnEnd records r; it is a queue.Options.OnEnd.
func (e *Recorder) OnEnd(r jobs.Record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = make(map[jobs.ID]int)
	}
	if _, dup := e.byID[r.ID]; dup {
		e.duplicates = append(e.duplicates, r.ID)
	}
	e.byID[r.ID] = len(e.records)
	e.records = append(e.records, r)
	if e.changed != nil {
		close(e.changed)
		e.changed = nil
	}
}

// Wait returns the record of job id, waiting for it.
func (e *Recorder) Wait(ctx context.Context, id jobs.ID) (jobs.Record, error) {
	for {
		e.mu.Lock()
		if i, ok := e.byID[id]; ok {
			r := e.records[i]
			e.mu.Unlock()
			return r, nil
		}
		if e.changed == nil {
			e.changed = make(chan struct{})
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return jobs.Record{}, fmt.Errorf("queuetest: waiting for the end of job %d: %w", id, context.Cause(ctx))
		}
	}
}

// Get returns the record of job id if it was reported.
func (e *Recorder) Get(id jobs.ID) (jobs.Record, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	i, ok := e.byID[id]
	if !ok {
		return jobs.Record{}, false
	}
	return e.records[i], true
}

// Records returns every record so far, in report order.
func (e *Recorder) Records() []jobs.Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]jobs.Record(nil), e.records...)
}

// Duplicates returns the ids reported more than once (each report after the
// first adds one entry).
func (e *Recorder) Duplicates() []jobs.ID {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]jobs.ID(nil), e.duplicates...)
}
