package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// contextDrop names a destroyed context for its kernel to forget: the
// context's id and generation (its CreateIndex in the store). The kernel
// drops its state only if it has that generation, and starts a run of
// another generation from an empty cache, so a drop and a run of a context
// created again under the same id may reach it in either order.
type contextDrop struct {
	ContextID  protocol.ContextID `json:"contextId"`
	Generation uint64             `json:"generation"`
}

// dropFlushDelay is how long a slot's pending drops wait for a run to take
// them along before they are sent on their own: a finished run's next run
// on the slot starts within microseconds, an idle kernel frees the memory
// a few milliseconds later.
const dropFlushDelay = 5 * time.Millisecond

// dropQueue holds, per kernel slot, the destroyed contexts its kernel has
// not been told to forget yet.
//
// Telling the kernel costs a request of its own, which on a busy slot (a
// batch run destroys a context after every entry) waits for the run in
// progress and then delays the next one by a round trip. So a destroy only
// queues the drop here; the next Execute on the slot takes the slot's drops
// along in its request (execute, takeDrops), and when the slot stays idle a
// flusher sends them after dropFlushDelay (scheduleFlush).
//
// mu guards pending and flushing. A drop taken by a request that did not
// reach the kernel is queued again (requeue); sending one twice is
// harmless. Drops for a kernel that died are moot (its replacement starts
// empty) but harmless too.
type dropQueue struct {
	mu       sync.Mutex
	pending  map[int][]contextDrop // slot -> drops not sent yet
	flushing map[int]bool          // slot -> a flusher is scheduled
}

func newDropQueue() *dropQueue {
	return &dropQueue{pending: make(map[int][]contextDrop), flushing: make(map[int]bool)}
}

// queueDrops queues drops for slot's kernel and makes sure a flusher will look at
// the slot.
func (e *Engine) queueDrops(slot int, drops ...contextDrop) {
	if slot < 0 || len(drops) == 0 {
		return
	}
	q := e.drops
	q.mu.Lock()
	q.pending[slot] = append(q.pending[slot], drops...)
	q.mu.Unlock()
	e.scheduleFlush(slot)
}

// takeDrops removes and returns slot's pending drops (nil if none).
func (e *Engine) takeDrops(slot int) []contextDrop {
	q := e.drops
	q.mu.Lock()
	defer q.mu.Unlock()
	d := q.pending[slot]
	delete(q.pending, slot)
	return d
}

// hasDrops reports whether slot has pending drops.
func (e *Engine) hasDrops(slot int) bool {
	q := e.drops
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending[slot]) > 0
}

// scheduleFlush starts, unless one is already scheduled, a flusher that
// sends slot's pending drops after dropFlushDelay if no run is in progress
// on the slot then (a run's end schedules another: execute).
func (e *Engine) scheduleFlush(slot int) {
	q := e.drops
	q.mu.Lock()
	if q.flushing[slot] {
		q.mu.Unlock()
		return
	}
	q.flushing[slot] = true
	q.mu.Unlock()
	e.goBackground(func(ctx context.Context) {
		t := time.NewTimer(dropFlushDelay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
		q.mu.Lock()
		q.flushing[slot] = false
		q.mu.Unlock()
		if e.runs.busy(slot) {
			return // the run's end schedules the next look
		}
		drops := e.takeDrops(slot)
		if len(drops) == 0 {
			return
		}
		// Waits its turn behind a request in flight (a compile); a kernel
		// that is restarting has nothing to forget.
		k, err := e.pool.Kernel(ctx, slot)
		if err != nil {
			return
		}
		if _, err := k.Call(ctx, "dropContext", map[string]any{"contexts": drops}, nil); err != nil {
			e.log.Debug("dropContext", "slot", slot, "contexts", len(drops), "err", err)
			e.requeueDrops(slot, drops, err)
		}
	})
}

// requeueDrops queues again drops whose request may not have reached the
// kernel: it was cancelled (kernel.ErrInterrupted, which a request cut
// short before it was sent returns too). A kernel that died or was
// restarted took the contexts' state with it; one that answered with an
// error will not do better next time.
func (e *Engine) requeueDrops(slot int, drops []contextDrop, err error) {
	if len(drops) == 0 || !errors.Is(err, kernel.ErrInterrupted) || e.checkRunning() != nil {
		return
	}
	e.queueDrops(slot, drops...)
}
