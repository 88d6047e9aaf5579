package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// ErrBusy: every kernel that could answer a completion or inspection is
// running a request (kernel.ErrBusy).
var ErrBusy = kernel.ErrBusy

// Complete answers completions at cursor (code points into code) in the
// namespace of context contextID's top frame, on the kernel holding the
// context (the kernel method complete, kernel/PROTOCOL.md).
//
// It never queues behind a run: when the context's kernel is busy, the
// first free kernel of the pool answers from its __main__ namespace
// (builtins and the code's own imports still complete, the frame's
// names do not); when every kernel is busy it returns an error wrapping
// ErrBusy. An empty contextID asks any free kernel's __main__ (slot 0
// first). An unknown context is contexts.ErrContextNotFound.
func (e *Engine) Complete(ctx context.Context, contextID protocol.ContextID, code string, cursor int) (kernel.Completions, error) {
	var out kernel.Completions
	err := e.onFreeKernel(ctx, contextID, func(k *kernel.Kernel, id string) error {
		var err error
		out, err = k.Complete(ctx, kernel.CompleteRequest{Code: code, Cursor: cursor, ContextID: id, NoWait: true})
		return err
	})
	return out, err
}

// Inspect answers what the name at cursor is (detailLevel 0 or 1), on
// the kernels and with the fallbacks of Complete.
func (e *Engine) Inspect(ctx context.Context, contextID protocol.ContextID, code string, cursor, detailLevel int) (kernel.Inspection, error) {
	var out kernel.Inspection
	err := e.onFreeKernel(ctx, contextID, func(k *kernel.Kernel, id string) error {
		var err error
		out, err = k.Inspect(ctx, kernel.InspectRequest{Code: code, Cursor: cursor, DetailLevel: detailLevel, ContextID: id, NoWait: true})
		return err
	})
	return out, err
}

// onFreeKernel calls ask on the context's kernel (with the context's id),
// then, while the answer is ErrBusy, on each other kernel of the pool
// (without an id: its __main__).
func (e *Engine) onFreeKernel(ctx context.Context, contextID protocol.ContextID, ask func(k *kernel.Kernel, contextID string) error) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	home := -1
	if contextID != "" {
		c, err := e.store.Context(nil, contextID)
		if err != nil {
			return err
		}
		home = c.KernelSlot
	}
	if home != contexts.NoSlot && home >= 0 {
		k, err := e.pool.Kernel(ctx, home)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrKernelUnavailable, err)
		}
		if err := ask(k, string(contextID)); !errors.Is(err, kernel.ErrBusy) {
			return err
		}
	}
	for slot := range e.pool.Size() {
		if slot == home || e.pool.Retired(slot) {
			continue
		}
		k, err := e.pool.Kernel(ctx, slot)
		if err != nil {
			continue
		}
		if err := ask(k, ""); !errors.Is(err, kernel.ErrBusy) {
			return err
		}
	}
	return fmt.Errorf("completion: every kernel is running a request: %w", ErrBusy)
}
