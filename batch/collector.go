package batch

import (
	"strconv"
	"sync"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// collector is the engine.Client of a batch run: it files every
// notification under the run of its context and tells the dispatcher when
// a run ends. Notify never blocks: it takes mu briefly and sends on ended,
// whose buffer holds one slot per entry, and each run ends at most once.
//
// A run belongs to the collector from register until its end
// notification; after that the collector ignores its context and the
// dispatcher owns the record (it reads it without the lock).
type collector struct {
	mu    sync.Mutex
	runs  map[protocol.ContextID]*runRecord // guarded by mu: runs that have not ended
	ended chan *runRecord                   // buffered: one slot per entry
	// keepValues records every statement's latest update (--show-values);
	// without it only Panics are kept.
	keepValues bool
}

func newCollector(entries int, keepValues bool) *collector {
	return &collector{runs: make(map[protocol.ContextID]*runRecord), ended: make(chan *runRecord, entries), keepValues: keepValues}
}

// runRecord is what the engine reported for one entry's run.
type runRecord struct {
	index   int // the entry's position in report order
	context protocol.ContextID
	started time.Time // the push
	running time.Time // the first notification: the run has begun on its kernel
	ended   time.Time

	updates     map[protocol.ExpressionID]protocol.ExpressionUpdate // latest of each statement
	diagnostics []protocol.Diagnostic
	stdout      capture
	stderr      capture
	output      capture // stdout and stderr interleaved, for the console
	failed      *protocol.ExecutionResult
}

// register starts filing the notifications of a context under a new run.
func (c *collector) register(index int, id protocol.ContextID) *runRecord {
	r := &runRecord{index: index, context: id, started: time.Now(), updates: make(map[protocol.ExpressionID]protocol.ExpressionUpdate)}
	c.mu.Lock()
	c.runs[id] = r
	c.mu.Unlock()
	return r
}

// markRunning records that a context's run has begun, if no notification
// said so yet.
func (c *collector) markRunning(id protocol.ContextID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.runs[id]; r != nil && r.running.IsZero() {
		r.running = at
	}
}

// forget stops filing a context's notifications (its run was cancelled:
// no end notification will come).
func (c *collector) forget(id protocol.ContextID) *runRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[id]
	delete(c.runs, id)
	return r
}

// Notify implements engine.Client.
func (c *collector) Notify(method string, params any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id := contextOf(params); id != "" {
		if r := c.runs[id]; r != nil && r.running.IsZero() {
			r.running = time.Now()
		}
	}
	switch p := params.(type) {
	case protocol.ExpressionUpdatesParams:
		if r := c.runs[p.ContextID]; r != nil {
			for _, u := range p.Updates {
				if c.keepValues || u.Payload.Type == protocol.PayloadPanic {
					r.updates[u.ExpressionID] = u
				}
			}
		}
	case protocol.ExecutionStatusParams:
		if r := c.runs[p.ContextID]; r != nil {
			r.diagnostics = append(r.diagnostics, p.Diagnostics...)
		}
	case protocol.OutputParams:
		if r := c.runs[p.ContextID]; r != nil {
			if p.Stream == protocol.Stderr {
				r.stderr.write(p.Text)
			} else {
				r.stdout.write(p.Text)
			}
			r.output.write(p.Text)
		}
	case protocol.ExecutionCompleteParams:
		c.endLocked(p.ContextID, nil)
	case protocol.ExecutionFailedParams:
		res := p.Result
		c.endLocked(p.ContextID, &res)
	}
}

// contextOf is the context a notification is about ("" for others).
func contextOf(params any) protocol.ContextID {
	switch p := params.(type) {
	case protocol.ExpressionUpdatesParams:
		return p.ContextID
	case protocol.ExecutionStatusParams:
		return p.ContextID
	case protocol.OutputParams:
		return p.ContextID
	case protocol.ExecutionCompleteParams:
		return p.ContextID
	case protocol.ExecutionFailedParams:
		return p.ContextID
	}
	return ""
}

func (c *collector) endLocked(id protocol.ContextID, failed *protocol.ExecutionResult) {
	r := c.runs[id]
	if r == nil {
		return
	}
	delete(c.runs, id)
	r.ended = time.Now()
	r.failed = failed
	c.ended <- r // never blocks: one slot per entry, one end per run
}

// captureLimit bounds the output kept per stream of one entry: the first
// and the last half of it are kept, the middle is replaced by a marker.
const captureLimit = 1 << 20

// capture keeps a run's output, up to captureLimit bytes.
type capture struct {
	head    []byte
	tail    []byte // a ring of the last captureLimit/2 bytes once head is full
	start   int    // where the ring begins in tail
	dropped int64
}

func (c *capture) write(s string) {
	if room := captureLimit/2 - len(c.head); room > 0 {
		n := min(room, len(s))
		c.head = append(c.head, s[:n]...)
		s = s[n:]
	}
	for len(s) > 0 {
		if len(c.tail) < captureLimit/2 {
			n := min(captureLimit/2-len(c.tail), len(s))
			c.tail = append(c.tail, s[:n]...)
			s = s[n:]
			continue
		}
		n := copy(c.tail[c.start:], s)
		c.dropped += int64(n)
		c.start = (c.start + n) % len(c.tail)
		s = s[n:]
	}
}

// String is the captured text; when output was dropped, a marker says how
// much.
func (c *capture) String() string {
	if c.dropped == 0 {
		return string(c.head) + string(c.tail)
	}
	return string(c.head) + "\n[ripple: " + strconv.FormatInt(c.dropped, 10) + " bytes of output dropped]\n" +
		string(c.tail[c.start:]) + string(c.tail[:c.start])
}
