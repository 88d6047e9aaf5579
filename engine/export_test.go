package engine

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/ripple-run/ripple/protocol"
)

// Test hooks for the external test package (compiled into tests only).

// KernelContexts asks slot's kernel which contexts it holds state for
// (its status method).
func KernelContexts(ctx context.Context, e *Engine, slot int) ([]string, error) {
	raw, err := e.pool.Call(ctx, slot, "status", nil, nil)
	if err != nil {
		return nil, err
	}
	var st struct {
		Contexts []string `json:"contexts"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	slices.Sort(st.Contexts)
	return st.Contexts, nil
}

// PendingDrops lists the destroyed contexts slot's kernel has not been
// told to forget yet.
func PendingDrops(e *Engine, slot int) []string {
	e.drops.mu.Lock()
	defer e.drops.mu.Unlock()
	var ids []string
	for _, d := range e.drops.pending[slot] {
		ids = append(ids, string(d.ContextID))
	}
	return ids
}

// SetAfterEnqueue makes the engine's next apply call f right after the
// queue took its plan, then forget f.
func SetAfterEnqueue(e *Engine, f func()) {
	once := func() {
		e.afterEnqueue.Store(nil)
		f()
	}
	e.afterEnqueue.Store(&once)
}

// StoredUpdates returns the latest update of every statement of context
// id's top frame, as the store keeps them (what a client that connects
// is sent).
func StoredUpdates(e *Engine, id protocol.ContextID) ([]protocol.ExpressionUpdate, error) {
	top, err := e.store.TopFrame(nil, id)
	if err != nil {
		return nil, err
	}
	return e.frameUpdates(top), nil
}
