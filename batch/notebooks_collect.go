package batch

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// notebookCollector is the engine client of RunNotebooks: it keeps, per
// context, every statement's latest update and the output and displays in
// the order they came (the order the cells' outputs are written in).
// Notify never blocks; a record belongs to the collector until its done
// channel is closed or forget returns it, then to its runner.
type notebookCollector struct {
	mu   sync.Mutex
	runs map[protocol.ContextID]*notebookRecord // guarded by mu: runs not ended
}

func newNotebookCollector() *notebookCollector {
	return &notebookCollector{runs: make(map[protocol.ContextID]*notebookRecord)}
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
	delete(c.runs, id)
	r.ended, r.failed = time.Now(), failed
	close(r.done)
}
