package batch

import (
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// notebookCollector is the engine client of RunNotebooks: it keeps, per
// context, every statement's latest update and the output and displays in
// the order they came (the order the cells' outputs are written in).
// Notify never blocks. Without keep, a record belongs to the collector
// until its done channel is closed or forget returns it, then to its
// runner. With keep (--watch), records stay filed across runs (each
// statement keeps the output of its latest run) and every run's end is
// sent on ends (dropped when its buffer is full: the watcher reads every
// record then anyway); readers take a snapshot.
type notebookCollector struct {
	mu   sync.Mutex
	runs map[protocol.ContextID]*notebookRecord // guarded by mu
	keep bool
	ends chan protocol.ContextID // with keep: the contexts whose run ended
}

func newNotebookCollector() *notebookCollector {
	return &notebookCollector{runs: make(map[protocol.ContextID]*notebookRecord)}
}

// newWatchCollector is the collector of WatchNotebooks (keep).
func newWatchCollector() *notebookCollector {
	return &notebookCollector{runs: make(map[protocol.ContextID]*notebookRecord), keep: true,
		ends: make(chan protocol.ContextID, 64)}
}

// snapshot copies a kept record (the fields notebookResult reads).
func (c *notebookCollector) snapshot(id protocol.ContextID) *notebookRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[id]
	if r == nil {
		return nil
	}
	cp := &notebookRecord{ended: r.ended, failed: r.failed, events: slices.Clone(r.events),
		diagnostics: slices.Clone(r.diagnostics), updates: maps.Clone(r.updates)}
	return cp
}

// notebookRecord is what the engine reported for one notebook's run.
type notebookRecord struct {
	done        chan struct{} // closed at the run's end
	ended       time.Time
	updates     map[protocol.ExpressionID]protocol.ExpressionUpdate
	events      []notebookEvent
	diagnostics []protocol.Diagnostic
	failed      *protocol.ExecutionResult
}

// notebookEvent is one piece of output: a stream's text or a display.
type notebookEvent struct {
	expr    protocol.ExpressionID
	stream  protocol.OutputStream // "" for a display
	text    string
	display json.RawMessage
}

func (c *notebookCollector) register(id protocol.ContextID) *notebookRecord {
	r := &notebookRecord{done: make(chan struct{}), updates: make(map[protocol.ExpressionID]protocol.ExpressionUpdate)}
	c.mu.Lock()
	c.runs[id] = r
	c.mu.Unlock()
	return r
}

func (c *notebookCollector) forget(id protocol.ContextID) {
	c.mu.Lock()
	delete(c.runs, id)
	c.mu.Unlock()
}

// Notify implements engine.Client.
func (c *notebookCollector) Notify(method string, params any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p := params.(type) {
	case protocol.ExpressionUpdatesParams:
		if r := c.runs[p.ContextID]; r != nil {
			for _, u := range p.Updates {
				r.updates[u.ExpressionID] = u
				if u.Payload.Type == protocol.PayloadPending && u.Payload.Message == "running" {
					// The statement runs again: its earlier output goes.
					r.events = slices.DeleteFunc(r.events, func(ev notebookEvent) bool { return ev.expr == u.ExpressionID })
				}
			}
		}
	case protocol.OutputParams:
		if r := c.runs[p.ContextID]; r != nil {
			r.events = append(r.events, notebookEvent{expr: p.ExpressionID, stream: p.Stream, text: p.Text})
		}
	case protocol.DisplayDataParams:
		if r := c.runs[p.ContextID]; r != nil {
			r.events = append(r.events, notebookEvent{expr: p.ExpressionID, display: append(json.RawMessage(nil), p.Data...)})
		}
	case protocol.ExecutionStatusParams:
		if r := c.runs[p.ContextID]; r != nil {
			r.diagnostics = append(r.diagnostics, p.Diagnostics...)
		}
	case protocol.ExecutionCompleteParams:
		c.endLocked(p.ContextID, nil)
	case protocol.ExecutionFailedParams:
		res := p.Result
		c.endLocked(p.ContextID, &res)
	}
}

func (c *notebookCollector) endLocked(id protocol.ContextID, failed *protocol.ExecutionResult) {
	r := c.runs[id]
	if r == nil {
		return
	}
	r.ended, r.failed = time.Now(), failed
	if c.keep {
		select {
		case c.ends <- id:
		default:
		}
		return
	}
	delete(c.runs, id)
	close(r.done)
}
