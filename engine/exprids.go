package engine

import (
	"context"
	"slices"
	"sync"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// A call naming an expression id is answered the same way at any time
// (PROTOCOL.md 7.6: an unknown id is 2008), not only once a run has
// reported the frame's expressions: the ids of a function's statements
// are read from the module's current source (the open buffer, else the
// disk) with the kernel's own label rules (kernel.StatementIDs), so an id
// sent while the first run is queued or running, or right after an edit
// added the statement, is decided like one sent later.
//
// Locking: exprIDs.m is guarded by exprIDs.mu, held only around the map
// (the parse runs outside it; two callers may both parse one version).

// exprIDCache keeps the last parse of each module, keyed by its source.
type exprIDCache struct {
	mu sync.Mutex
	m  map[string]exprIDEntry // module -> last parse; guarded by mu
}

type exprIDEntry struct {
	source string
	ids    map[string][]string // qualname -> ids; nil: the source does not parse
}

// staticIDs returns the ids of the statements of function fn as its
// module's current source defines them; ok is false when they cannot be
// read from the source (no such module or function, a syntax error).
func (e *Engine) staticIDs(fn protocol.MethodPointer) (ids []string, ok bool) {
	_, source, found := e.current(fn.Module)
	if !found {
		return nil, false
	}
	c := &e.exprIDs
	c.mu.Lock()
	entry, hit := c.m[fn.Module]
	c.mu.Unlock()
	if !hit || entry.source != source {
		all, err := kernel.StatementIDs(context.Background(), e.interpreter(), fn.Module, source)
		if err != nil {
			e.log.Debug("statement ids from source", "module", fn.Module, "err", err)
			all = nil
		}
		entry = exprIDEntry{source: source, ids: all}
		c.mu.Lock()
		if c.m == nil {
			c.m = make(map[string]exprIDEntry)
		}
		c.m[fn.Module] = entry
		c.mu.Unlock()
	}
	ids, ok = entry.ids[fn.Qualname()]
	return ids, ok
}

// frameFunction is the function whose statements frame f runs, "" when
// not known yet (a LocalCall whose call has not been reported).
func (e *Engine) frameFunction(ctxID protocol.ContextID, f *contexts.Frame) string {
	switch f.Item.Type {
	case protocol.ExplicitCall:
		return f.Item.MethodPointer.String()
	case protocol.LocalCall:
		if f.Depth > 0 {
			if u, err := e.store.ExpressionUpdate(nil, ctxID, f.Depth-1, f.Item.ExpressionID); err == nil && u.Update.MethodCall != nil {
				return u.Update.MethodCall.MethodPointer.String()
			}
		}
	}
	return ""
}

// currentFrameUpdates is the latest update of every expression of frame f
// that belongs to the function f runs now. The store keeps a frame's
// updates by expression id for as long as the frame is on the stack, but a
// LocalCall frame's function can change under it: an edit makes the call
// statement below call another function (seed 6032 of the invariant test:
// an inserted a = helpers.h0(k, n) takes the label main:main/a from
// a = h3(c), so the frame main:main/a now runs h0). The old function's
// updates stay in the store; sent again on pop they would put h3's values
// after h0's in the client's view of a frame that a fresh run shows as h0.
// When the function is not known yet, every update is kept.
func (e *Engine) currentFrameUpdates(ctxID protocol.ContextID, f *contexts.Frame) ([]protocol.ExpressionUpdate, error) {
	us, err := e.store.FrameUpdates(nil, ctxID, f.Depth, 0)
	if err != nil {
		return nil, err
	}
	fn := e.frameFunction(ctxID, f)
	if fn == "" {
		return us, nil
	}
	return slices.DeleteFunc(us, func(u protocol.ExpressionUpdate) bool {
		g, _, err := u.ExpressionID.Split()
		return err != nil || g.String() != fn
	}), nil
}

// expressionKnownStatically decides whether expr is a statement of one of
// frames from the source of the frame's function; decided is false when
// expr names no frame's function or that function's ids cannot be read
// (the caller then falls back to what the runs reported).
func (e *Engine) expressionKnownStatically(ctxID protocol.ContextID, frames []*contexts.Frame, expr protocol.ExpressionID) (known, decided bool) {
	fn, _, err := expr.Split()
	if err != nil {
		return false, false
	}
	for _, f := range frames {
		if e.frameFunction(ctxID, f) != fn.String() {
			continue
		}
		ids, ok := e.staticIDs(fn)
		if !ok {
			return false, false
		}
		return slices.Contains(ids, string(expr)), true
	}
	return false, false
}
