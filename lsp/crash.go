package lsp

import (
	"context"
	"fmt"
	"slices"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
)

// Crash containment. An entry whose run killed the kernel is parked: one
// pop-up says so, its context is destroyed (so that no edit in another
// file, which would reach it through the import graph or an unknown one,
// runs it again and kills the kernel again, and the other entries on that
// kernel with it), and its hints stay, the statements after the one that
// killed the kernel not reached. ▶ Run of it (ripple.run), or a run of an
// edit of its own module, starts it again; ripple.stop closes it.
//
// Closing: ripple.stop destroys an entry's context and forgets it; its
// hints, lenses and diagnostics go.

// republish is the session's own note: publish hints, lenses and
// diagnostics again (an entry went).
type republish struct{}

// crashedLocked handles an entry whose run killed its kernel: the first
// time since the user last ran it, one pop-up and the entry is parked;
// after that (the engine's own retry of the run dying too), nothing more.
// The caller holds mu.
func (s *session) crashedLocked(e *entry, msg string, out *outgoing) {
	if e.crashed {
		return
	}
	e.crashed = true
	out.shows = append(out.shows, lsproto.ShowMessageParams{Type: lsproto.MessageTypeError,
		Message: msg + "; it is not run again until you run it or edit " + e.pointer.Module})
	out.park = append(out.park, e.id)
}

// park destroys the context of a crashed entry (the entry stays, parked).
func (s *session) park(ctx context.Context, id protocol.ContextID) {
	s.mu.Lock()
	e := s.byID[id]
	if e == nil || !e.crashed || e.parked {
		s.mu.Unlock()
		return
	}
	e.parked = true
	e.running = false
	e.endWaiting(protocol.ReasonKernelDied)
	s.mu.Unlock()
	if err := s.eng.DestroyContext(ctx, s.clientID, id); err != nil && ctx.Err() == nil {
		s.log.Debug("park crashed context", "context", id, "err", err)
	}
	s.Notify(notifyRepublish, republish{})
}

// notifyRepublish is the note that carries republish.
const notifyRepublish = "ripple-lsp/republish"

// revive starts a parked entry again in a new context: what ripple.run of
// it, or a run of its module's edit, asks. It reports whether e was
// parked.
func (s *session) revive(ctx context.Context, e *entry) bool {
	s.mu.Lock()
	if !e.parked {
		e.crashed = false // run again by the user: a new failure pops up
		s.mu.Unlock()
		return false
	}
	old := e.id
	s.mu.Unlock()
	res, err := s.eng.CreateContext(ctx, s.clientID, protocol.CreateContextParams{})
	if err != nil {
		s.log.Warn("revive entry", "entry", e.pointer, "err", err)
		return true
	}
	s.mu.Lock()
	delete(s.byID, old)
	e.id, e.parked, e.crashed = res.ContextID, false, false
	e.setFrames([]protocol.MethodPointer{e.pointer})
	s.byID[e.id] = e
	s.mu.Unlock()
	if err := s.eng.Push(ctx, s.clientID, protocol.PushParams{ContextID: e.id, StackItem: protocol.NewExplicitCall(e.pointer)}); err != nil {
		s.log.Warn("revive entry", "entry", e.pointer, "err", err)
	}
	return true
}

// reviveEdited revives the parked entries whose module is one of paths
// (their own code changed).
func (s *session) reviveEdited(ctx context.Context, paths []string) {
	var parked []*entry
	s.mu.Lock()
	for _, e := range s.entries {
		if e.parked && slices.Contains(paths, s.modulePath(e.pointer.Module)) {
			parked = append(parked, e)
		}
	}
	s.mu.Unlock()
	for _, e := range parked {
		s.revive(ctx, e)
	}
}

// stop is ripple.stop: the entry's context is destroyed and the entry
// forgotten.
func (s *session) stop(ctx context.Context, id protocol.ContextID) error {
	s.mu.Lock()
	e := s.byID[id]
	if e == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownContext, id)
	}
	s.entries = slices.DeleteFunc(s.entries, func(x *entry) bool { return x == e })
	delete(s.byID, id)
	parked := e.parked
	s.mu.Unlock()
	if !parked {
		if err := s.eng.DestroyContext(ctx, s.clientID, id); err != nil {
			return err
		}
	}
	s.Notify(notifyRepublish, republish{})
	return nil
}

// dropCompileErrors forgets the entry's compile errors (diagnostics of no
// statement), reporting whether there were any. The caller holds mu.
func (e *entry) dropCompileErrors() bool {
	n := len(e.stale) + len(e.fresh)
	compile := func(d protocol.Diagnostic) bool { return d.ExpressionID == "" }
	e.stale = slices.DeleteFunc(e.stale, compile)
	e.fresh = slices.DeleteFunc(e.fresh, compile)
	return len(e.stale)+len(e.fresh) != n
}
