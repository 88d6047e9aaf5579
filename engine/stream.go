package engine

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ripple-run/ripple/protocol"
)

// stream is the notification stream of one execution context. It coalesces
// expression updates (PROTOCOL.md 4: flushed at most every FlushInterval,
// one flush names an expression at most once, in its latest state) and
// orders everything a context sends: pending updates are flushed before
// output, before a visualization update and before the end of a run, so a
// client never sees executionComplete before the updates of that run.
//
// mu guards every field; notifications are sent with mu held, which is what
// orders them (Client.Notify never blocks).
type stream struct {
	e  *Engine
	id protocol.ContextID

	mu      sync.Mutex
	pending []protocol.ExpressionUpdate   // guarded by mu: in arrival order, one per expression
	kernel  int                           // guarded by mu: the kernel pending came from (their kernelId)
	index   map[protocol.ExpressionID]int // guarded by mu: position in pending
	timer   *time.Timer                   // guarded by mu: the scheduled flush, nil when none
	carry   [3][]byte                     // guarded by mu: incomplete UTF-8 tail per output stream
	closed  bool                          // guarded by mu
	// out is output held to coalesce (PROTOCOL.md 8.3: one statement's
	// text on one stream, up to outputHold or outputHoldMax bytes, is one
	// notification); outTimer sends it (guarded by mu).
	out      *protocol.OutputParams
	outTimer *time.Timer
	// diagnosed: the run in progress sent diagnostics; diagnosedLast: the
	// client still shows some from an earlier run (guarded by mu). A run
	// that ends clean while the client shows some clears them
	// (PROTOCOL.md 7.6).
	diagnosed, diagnosedLast bool
}

// stream returns the context's stream, creating it on first use.
func (e *Engine) stream(id protocol.ContextID) *stream {
	e.streamsMu.Lock()
	defer e.streamsMu.Unlock()
	s, ok := e.streams[id]
	if !ok {
		s = &stream{e: e, id: id, index: make(map[protocol.ExpressionID]int)}
		e.streams[id] = s
	}
	return s
}

// dropStream forgets a destroyed context's stream.
func (e *Engine) dropStream(id protocol.ContextID) {
	e.streamsMu.Lock()
	s := e.streams[id]
	delete(e.streams, id)
	e.streamsMu.Unlock()
	e.kept.forget(id) // (replay.go, reads.go)
	e.reads.set(id, nil)
	if s != nil {
		s.close()
	}
}

// updates queues expression updates of a kernel for the next flush. The
// updates of another kernel than the pending ones' (the context moved)
// flush those first: one notification carries one kernelId.
func (s *stream) updates(kernelID int, us []protocol.ExpressionUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if kernelID != s.kernel {
		s.flushLocked()
		s.kernel = kernelID
	}
	for i := range us {
		if at, ok := s.index[us[i].ExpressionID]; ok {
			s.pending[at] = us[i]
			continue
		}
		s.index[us[i].ExpressionID] = len(s.pending)
		s.pending = append(s.pending, us[i])
	}
	if s.timer == nil && len(s.pending) > 0 {
		s.timer = time.AfterFunc(s.e.cfg.FlushInterval, s.flush)
	}
}

// flush sends the pending updates now.
func (s *stream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *stream) flushLocked() {
	s.flushOutputLocked()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if len(s.pending) == 0 || s.closed {
		return
	}
	params := protocol.ExpressionUpdatesParams{ContextID: s.id, KernelID: s.kernel, Updates: s.pending}
	s.pending = nil
	clear(s.index)
	s.e.notifyContext(s.id, protocol.NotifyExpressionUpdates, params)
}

// send flushes pending updates, then sends one notification of the context.
func (s *stream) send(method string, params any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	if p, ok := params.(protocol.ExecutionStatusParams); ok && len(p.Diagnostics) > 0 {
		s.diagnosed = true
	}
	if !s.closed {
		s.e.notifyContext(s.id, method, params)
	}
}

// beginRun starts a run's count of diagnostics. A run that did not end
// through endRun (superseded by an edit, soft-stopped, moved to another
// kernel) may have sent diagnostics the clients still show: they count as
// the previous run's, so a clean run next clears them.
func (s *stream) beginRun() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.diagnosed {
		s.diagnosedLast, s.diagnosed = true, false
	}
}

// endRun sends, before the end of a run, the empty executionStatus that
// clears the previous run's diagnostics when this run had none
// (PROTOCOL.md 7.6), then notes what this run had.
func (s *stream) endRun() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.diagnosed && s.diagnosedLast && !s.closed {
		s.flushLocked()
		s.e.notifyContext(s.id, protocol.NotifyExecutionStatus, protocol.ExecutionStatusParams{ContextID: s.id, Diagnostics: []protocol.Diagnostic{}})
	}
	s.diagnosedLast, s.diagnosed = s.diagnosed, false
}

// output sends bytes a run on a kernel wrote to stdout or stderr as text. A UTF-8
// sequence split across chunks is held back until its end arrives; invalid
// bytes become U+FFFD when encoded.
func (s *stream) output(kernelID int, stream protocol.OutputStream, data []byte, expr protocol.ExpressionID) {
	i := 1
	if stream == protocol.Stderr {
		i = 2
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	buf := append(s.carry[i], data...)
	cut := completeUTF8(buf)
	s.carry[i] = append(s.carry[i][:0:0], buf[cut:]...)
	if cut == 0 {
		return
	}
	if o := s.out; o != nil && o.KernelID == kernelID && o.Stream == stream && o.ExpressionID == expr && len(s.pending) == 0 {
		o.Text += string(buf[:cut])
		if len(o.Text) >= outputHoldMax {
			s.flushOutputLocked()
		}
		return
	}
	s.flushLocked()
	s.out = &protocol.OutputParams{ContextID: s.id, KernelID: kernelID, Stream: stream, Text: string(buf[:cut]), ExpressionID: expr}
	if len(s.out.Text) >= outputHoldMax {
		s.flushOutputLocked()
		return
	}
	s.outTimer = time.AfterFunc(outputHold, s.flushOutput)
}

// Output coalescing (PROTOCOL.md 8.3): the text of one statement on one
// stream is held up to outputHold after its first byte, or until
// outputHoldMax bytes, and sent as one notification; anything else the
// context sends sends it first, so the order stays the kernel's.
const (
	outputHold    = 20 * time.Millisecond
	outputHoldMax = 64 << 10
)

// flushOutput sends the held output now (outTimer).
func (s *stream) flushOutput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutputLocked()
}

func (s *stream) flushOutputLocked() {
	if s.outTimer != nil {
		s.outTimer.Stop()
		s.outTimer = nil
	}
	o := s.out
	s.out = nil
	if o == nil || s.closed {
		return
	}
	s.e.notifyContext(s.id, protocol.NotifyOutput, *o)
}

// endOutput sends whatever incomplete UTF-8 tail is left at the end of a
// run on a kernel.
func (s *stream) endOutput(kernelID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushOutputLocked()
	for i, stream := range [...]protocol.OutputStream{1: protocol.Stdout, 2: protocol.Stderr} {
		if len(s.carry[i]) == 0 || s.closed {
			continue
		}
		text := string(s.carry[i])
		s.carry[i] = nil
		s.e.notifyContext(s.id, protocol.NotifyOutput, protocol.OutputParams{ContextID: s.id, KernelID: kernelID, Stream: stream, Text: text})
	}
}

func (s *stream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.outTimer != nil {
		s.outTimer.Stop()
		s.outTimer = nil
	}
	s.out = nil
}

// completeUTF8 returns the length of the longest prefix of b that does not
// end in the middle of a UTF-8 sequence (an invalid sequence counts as
// complete: more bytes will not make it valid).
func completeUTF8(b []byte) int {
	n := len(b)
	for back := 1; back <= utf8.UTFMax-1 && back <= n; back++ {
		if c := b[n-back]; !utf8.RuneStart(c) {
			continue // a continuation byte: its start is further back
		}
		if !utf8.FullRune(b[n-back:]) {
			return n - back
		}
		return n
	}
	return n
}

// notifyContext sends a notification to every connected owner of a context.
func (e *Engine) notifyContext(id protocol.ContextID, method string, params any) {
	owners, err := e.store.Owners(nil, id)
	if err != nil {
		return
	}
	ids := make([]string, len(owners))
	for i, o := range owners {
		ids[i] = o.ClientID
	}
	e.clients.notify(ids, method, params)
}

// notifyClients sends a notification to the given clients, if connected.
func (e *Engine) notifyClients(ids []string, method string, params any) {
	e.clients.notify(ids, method, params)
}

// broadcast sends a notification to every connected client.
func (e *Engine) broadcast(method string, params any) {
	e.clients.broadcast(method, params)
}
