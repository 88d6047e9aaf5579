package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// outbox is one client's outbound queue: replies and notifications, encoded,
// waiting for the connection's writer goroutine. Producers (the engine's
// goroutines through Notify, the connection's dispatcher for replies) never
// block on it: they encode, lock briefly and append.
//
// Memory bound (PROTOCOL.md 1). queued counts the bytes waiting. A
// notification that would take queued past limit puts the outbox "over the
// bound", and while over:
//   - output text is not queued; its length is counted per context and
//     stream, and a "[ripple: N bytes dropped]" output takes its place later;
//   - expression updates (and visualization updates) are not queued either:
//     they are kept per context, latest per expression (per visualization),
//     so their memory is bounded by the number of distinct expressions;
//   - replies and every other notification are still queued: they are small
//     or rare, and losing them would break the protocol. A notification of
//     a context first moves that context's kept updates and markers into the
//     queue, so the client never sees executionComplete before the updates
//     of that run.
//
// The outbox leaves the over state when queued falls to limit/2 (hysteresis,
// so that a client that keeps up only barely is not flapping in and out);
// everything kept is then queued. overSince lets the writer disconnect a
// client that stays over the bound too long.
//
// Replies are also bounded: a client that sends requests but does not read
// the replies makes the dispatcher wait (waitReplies) before it handles the
// next request, which pushes back on the client through TCP.
//
// Hold. While the dispatcher handles a frame, notifications are held back
// and released right after the frame's reply, so a reply always precedes the
// notifications its call caused (e.g. the state resend of a reconnect, or
// the Pending updates of a push whose job starts before the call returns).
// No call releases them early: PROTOCOL.md 8.6 puts the reply to a
// text/applyEdit before any text/didChange built on that edit (another
// client's edit, applied while this reply waited for the state log) and
// before the expressionUpdates of the run it caused.
type outbox struct {
	limit int           // bytes; immutable
	wake  chan struct{} // capacity 1: signalled when the queue gains messages

	mu        sync.Mutex
	queue     []outMessage                      // guarded by mu: what the writer sends next, in order
	held      []outMessage                      // guarded by mu: notifications queued while holding
	holding   bool                              // guarded by mu
	queued    int                               // guarded by mu: bytes in queue and held
	replies   int                               // guarded by mu: bytes of replies in queue
	drained   chan struct{}                     // guarded by mu: closed when replies falls to limit/2; nil when nobody waits
	over      bool                              // guarded by mu: over the memory bound (see above)
	overSince time.Time                         // guarded by mu: when over became true
	kept      map[protocol.ContextID]*keptState // guarded by mu: what was held back while over
	keptOrder []protocol.ContextID              // guarded by mu: contexts of kept, first-seen order
	closed    bool                              // guarded by mu: the connection is gone; everything is discarded
	stats     outboxStats                       // guarded by mu
}

// outMessage is one encoded WebSocket text message.
type outMessage struct {
	data  []byte
	reply bool
	// buf is the pooled buffer data lives in (nil when not pooled); the
	// writer gives it back with release once data is written.
	buf *[]byte
}

// messagePool recycles the buffers of encoded notifications, which are
// most of the traffic (expression updates, output). Buffers that grew past
// maxPooledMessage are left to the garbage collector, so one large
// visualization does not pin its memory in the pool.
var messagePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledMessage = 64 << 10

// release gives m's buffer back to the pool; m.data must not be used
// after.
func (m outMessage) release() {
	if m.buf == nil || cap(*m.buf) > maxPooledMessage {
		return
	}
	*m.buf = (*m.buf)[:0]
	messagePool.Put(m.buf)
}

// outboxStats counts what the bound cost a client (for logs and tests).
type outboxStats struct {
	droppedOutputBytes int64 // output text replaced by markers
	coalesced          int64 // updates superseded before they were sent
}

// keptState is what one context accumulated while the outbox was over the
// bound.
type keptState struct {
	updates     []protocol.ExpressionUpdate // latest per expression, first-seen order
	updateIndex map[protocol.ExpressionID]int
	visuals     []protocol.VisualizationUpdateParams // latest per visualization
	visualIndex map[protocol.VisualizationID]int
	dropped     [2]int64 // bytes of stdout, stderr output dropped
	// kernel is the kernelId of everything kept (PROTOCOL.md 7.5): what
	// another kernel sends for the context (it moved) queues the kept
	// first, so one notification never mixes two kernels' updates.
	kernel int
}

// notificationKind says how a notification behaves over the bound.
type notificationKind uint8

const (
	plainNotification         notificationKind = iota // always queued
	updatesNotification                               // kept, latest per expression
	visualizationNotification                         // kept, latest per visualization
	outputNotification                                // dropped with a marker
)

func newOutbox(limit int) *outbox {
	return &outbox{limit: limit, wake: make(chan struct{}, 1)}
}

// notify encodes and queues a notification; it never blocks. It returns an
// error only when params cannot be encoded.
func (o *outbox) notify(method string, params any) error {
	ctxID, kernelID, kind := classify(params)
	buf := messagePool.Get().(*[]byte)
	data, err := protocol.AppendNotification((*buf)[:0], method, params)
	*buf = data
	m := outMessage{data: data, buf: buf}
	if err != nil {
		m.release()
		return fmt.Errorf("encode %s: %w", method, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		m.release()
		return nil
	}
	if kind != plainNotification && (o.over || o.queued+len(data) > o.limit) {
		m.release()
		o.enterOver()
		o.keep(ctxID, kernelID, kind, params)
		return nil
	}
	if o.over && ctxID != "" {
		o.flushKept(ctxID)
	}
	o.push(m)
	return nil
}

// classify finds the context a notification belongs to, the kernel of a
// degradable one and its kind. The engine passes notification params by
// value (engine.Client).
func classify(params any) (protocol.ContextID, int, notificationKind) {
	switch p := params.(type) {
	case protocol.ExpressionUpdatesParams:
		return p.ContextID, p.KernelID, updatesNotification
	case protocol.OutputParams:
		return p.ContextID, p.KernelID, outputNotification
	case protocol.VisualizationUpdateParams:
		return p.VisualizationContext.ContextID, p.KernelID, visualizationNotification
	case protocol.ExecutionCompleteParams:
		return p.ContextID, 0, plainNotification
	case protocol.ExecutionFailedParams:
		return p.ContextID, 0, plainNotification
	case protocol.ExecutionStatusParams:
		return p.ContextID, 0, plainNotification
	case protocol.DisplayDataParams:
		return p.ContextID, 0, plainNotification
	case protocol.VisualizationEvaluationFailedParams:
		return p.ContextID, 0, plainNotification
	}
	return "", 0, plainNotification
}

// keep records a degradable notification while over the bound. The values
// are cloned: the engine may reuse what it passed to Notify.
func (o *outbox) keep(ctxID protocol.ContextID, kernelID int, kind notificationKind, params any) {
	k := o.kept[ctxID]
	if k != nil && k.kernel != kernelID {
		o.flushKept(ctxID)
		k = nil
	}
	if k == nil {
		if o.kept == nil {
			o.kept = make(map[protocol.ContextID]*keptState)
		}
		k = &keptState{kernel: kernelID}
		o.kept[ctxID] = k
		o.keptOrder = append(o.keptOrder, ctxID)
	}
	switch kind {
	case updatesNotification:
		updates := params.(protocol.ExpressionUpdatesParams).Updates
		if k.updateIndex == nil {
			k.updateIndex = make(map[protocol.ExpressionID]int)
		}
		for _, u := range updates {
			if i, ok := k.updateIndex[u.ExpressionID]; ok {
				k.updates[i] = u.Clone()
				o.stats.coalesced++
				continue
			}
			k.updateIndex[u.ExpressionID] = len(k.updates)
			k.updates = append(k.updates, u.Clone())
		}
	case visualizationNotification:
		v := params.(protocol.VisualizationUpdateParams)
		v.Data = append([]byte(nil), v.Data...)
		if k.visualIndex == nil {
			k.visualIndex = make(map[protocol.VisualizationID]int)
		}
		if i, ok := k.visualIndex[v.VisualizationContext.VisualizationID]; ok {
			k.visuals[i] = v
			o.stats.coalesced++
			return
		}
		k.visualIndex[v.VisualizationContext.VisualizationID] = len(k.visuals)
		k.visuals = append(k.visuals, v)
	case outputNotification:
		out := params.(protocol.OutputParams)
		k.dropped[streamIndex(out.Stream)] += int64(len(out.Text))
		o.stats.droppedOutputBytes += int64(len(out.Text))
	}
}

func streamIndex(s protocol.OutputStream) int {
	if s == protocol.Stderr {
		return 1
	}
	return 0
}

// DroppedMarker is the output text that stands for n bytes of output a slow
// client did not get.
func DroppedMarker(n int64) string {
	return fmt.Sprintf("[ripple: %d bytes dropped]\n", n)
}

// flushKept queues what was kept for one context: its updates, then its
// visualization updates, then a marker per stream that lost output.
func (o *outbox) flushKept(ctxID protocol.ContextID) {
	k := o.kept[ctxID]
	if k == nil {
		return
	}
	delete(o.kept, ctxID)
	for i, id := range o.keptOrder {
		if id == ctxID {
			o.keptOrder = append(o.keptOrder[:i], o.keptOrder[i+1:]...)
			break
		}
	}
	o.queueKept(ctxID, k)
}

// flushAllKept queues everything kept, context by context.
func (o *outbox) flushAllKept() {
	order, kept := o.keptOrder, o.kept
	o.keptOrder, o.kept = nil, nil
	for _, id := range order {
		o.queueKept(id, kept[id])
	}
}

func (o *outbox) queueKept(ctxID protocol.ContextID, k *keptState) {
	if len(k.updates) > 0 {
		o.pushEncoded(protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{ContextID: ctxID, KernelID: k.kernel, Updates: k.updates})
	}
	for _, v := range k.visuals {
		o.pushEncoded(protocol.NotifyVisualizationUpdate, v)
	}
	for i, n := range k.dropped {
		if n == 0 {
			continue
		}
		stream := protocol.Stdout
		if i == 1 {
			stream = protocol.Stderr
		}
		o.pushEncoded(protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, KernelID: k.kernel, Stream: stream, Text: DroppedMarker(n)})
	}
}

// pushEncoded queues a notification built by the outbox itself (from values
// that were encodable when the engine sent them).
func (o *outbox) pushEncoded(method string, params any) {
	data, err := protocol.AppendNotification(nil, method, params)
	if err != nil {
		return // unreachable: the same values encoded when they came in
	}
	o.push(outMessage{data: data})
}

// push appends m to the queue (to held while holding) and accounts for it.
func (o *outbox) push(m outMessage) {
	if o.holding {
		o.held = append(o.held, m)
	} else {
		o.queue = append(o.queue, m)
		o.signal()
	}
	o.queued += len(m.data)
	if o.queued > o.limit {
		o.enterOver()
	}
}

func (o *outbox) enterOver() {
	if !o.over {
		o.over = true
		o.overSince = time.Now()
	}
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// hold starts holding notifications back (the dispatcher starts a frame).
func (o *outbox) hold() {
	o.mu.Lock()
	o.holding = true
	o.mu.Unlock()
}

// release queues the frame's reply (nil when there is none) and then the
// notifications held back while it was handled.
func (o *outbox) release(reply []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.holding = false
	if o.closed {
		return
	}
	if reply != nil {
		o.queue = append(o.queue, outMessage{data: reply, reply: true})
		o.queued += len(reply)
		o.replies += len(reply)
		if o.queued > o.limit {
			o.enterOver()
		}
	}
	o.queue = append(o.queue, o.held...)
	clear(o.held)
	o.held = o.held[:0]
	if o.over {
		// The client could not read what was held: its time over the
		// bound starts now.
		o.overSince = time.Now()
	}
	o.signal()
}

// reply queues the reply of an asynchronous call (nil: none) at once,
// whether or not the dispatcher is holding notifications for another call:
// the notifications that call holds back are not this reply's.
func (o *outbox) reply(data []byte) {
	if data == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.queue = append(o.queue, outMessage{data: data, reply: true})
	o.queued += len(data)
	o.replies += len(data)
	if o.queued > o.limit {
		o.enterOver()
	}
	o.signal()
}

// take hands the writer everything queued, swapping in spare (an emptied
// slice the writer is done with) as the new queue.
func (o *outbox) take(spare []outMessage) []outMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.queue
	o.queue = spare[:0]
	return out
}

// sent accounts for a message the writer has written (or given up on).
func (o *outbox) sent(m outMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queued -= len(m.data)
	if m.reply {
		o.replies -= len(m.data)
		if o.drained != nil && o.replies <= o.limit/2 {
			close(o.drained)
			o.drained = nil
		}
	}
	if o.over && o.queued <= o.limit/2 {
		o.over = false
		o.flushAllKept()
	}
}

// overFor says how long the outbox has been over the bound (0 when not,
// and while holding: the client is not the one keeping messages back).
func (o *outbox) overFor(now time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.over || o.holding {
		return 0
	}
	return now.Sub(o.overSince)
}

// waitReplies waits until the client has read enough of its replies that
// the queued ones fit in half the bound, or ctx is done.
func (o *outbox) waitReplies(ctx context.Context) error {
	o.mu.Lock()
	if o.closed || o.replies <= o.limit/2 {
		o.mu.Unlock()
		return nil
	}
	if o.drained == nil {
		o.drained = make(chan struct{})
	}
	ch := o.drained
	o.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// close discards everything and makes every later call a no-op.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	o.queue, o.held, o.kept, o.keptOrder = nil, nil, nil, nil
	o.queued, o.replies = 0, 0
	o.over = false
	if o.drained != nil {
		close(o.drained)
		o.drained = nil
	}
}

func (o *outbox) snapshotStats() outboxStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}
