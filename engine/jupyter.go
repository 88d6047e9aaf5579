package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/protocol"
)

// KernelCall runs a kernel method (kernel/PROTOCOL.md "Methods") on the
// kernel holding context id, waiting for that kernel's turn like any
// request: ripple jupyter kernel asks it to transform a cell
// (jupyterCell) before the cell's run. A context not yet given a kernel
// uses slot 0. Errors as for kernel.Call; an unknown context is
// contexts.ErrContextNotFound.
func (e *Engine) KernelCall(ctx context.Context, id protocol.ContextID, method string, params any) (json.RawMessage, error) {
	if err := e.checkRunning(); err != nil {
		return nil, err
	}
	c, err := e.store.Context(nil, id)
	if err != nil {
		return nil, err
	}
	slot := c.KernelSlot
	if slot == contexts.NoSlot || slot < 0 {
		slot = 0
	}
	raw, err := e.pool.Call(ctx, slot, method, params, nil)
	if err != nil {
		return nil, fmt.Errorf("%s on the kernel of context %s: %w", method, id, err)
	}
	return raw, nil
}

// TopFrameUpdates is the latest update of every statement of context
// id's top frame, as the store holds them (what a client that
// reconnects is sent): ripple jupyter kernel shows again the output of a
// cell's statements that a run took from the cache.
func (e *Engine) TopFrameUpdates(id protocol.ContextID) ([]protocol.ExpressionUpdate, error) {
	stack, err := e.store.Stack(nil, id)
	if err != nil {
		return nil, err
	}
	if len(stack) == 0 {
		return nil, nil
	}
	return e.currentFrameUpdates(id, stack[len(stack)-1])
}
