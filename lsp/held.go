package lsp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Run state (PROTOCOL.md 8.1, 8.2, 8.4): a Pending payload says why a
// statement has no fresh value (protocol.Payload's IsRunning, IsHeld,
// IsNotReached and its Reason).

// isRunning reports the statement running now.
func isRunning(u protocol.ExpressionUpdate) bool { return u.Payload.IsRunning() }

// isHeld reports the statement that tried an effect an automatic run held:
// an explicit run of it (ripple.run, a save) makes the effect.
func isHeld(u protocol.ExpressionUpdate) bool { return u.Payload.IsHeld() }

// isWaiting reports a statement the run has yet to reach (⏳) or is
// running.
func isWaiting(u protocol.ExpressionUpdate) bool {
	return u.Payload.IsWaiting() || u.Payload.IsRunning()
}

// endWaiting makes the statements of a run that ended still waiting (⏳
// or running) not reached, with kind as the reason: an interrupted run or
// a dead kernel reaches none of them (PROTOCOL.md 8.4). The server says
// so itself; this covers a run that ended before its updates could (a
// kernel killed mid-write), so that no ⏳ outlives its run. The caller
// holds mu.
func (e *entry) endWaiting(kind string) {
	for id, u := range e.updates {
		if isWaiting(u) {
			u.Payload = protocol.NotReachedPayload(kind, "")
			e.updates[id] = u
		}
	}
}

// heldIn returns, per context, the held statements of the top frames shown
// in the file rel, in line order. The caller holds mu.
func (s *session) heldIn(rel string) map[protocol.ContextID][]protocol.ExpressionID {
	out := make(map[protocol.ContextID][]protocol.ExpressionID)
	stmts := s.shownIn(rel)
	slices.SortFunc(stmts, func(a, b shown) int { return a.u.Range.Start.Line - b.u.Range.Start.Line })
	for _, sh := range stmts {
		if isHeld(sh.u) {
			out[sh.e.id] = append(out[sh.e.id], sh.u.ExpressionID)
		}
	}
	return out
}

// runHeld runs the held statements of the file rel explicitly (a recompute
// of their ids, which the engine runs with effects allowed): what didSave
// asks.
func (s *session) runHeld(ctx context.Context, rel string) {
	s.mu.Lock()
	held := s.heldIn(rel)
	s.mu.Unlock()
	for id, exprs := range held {
		err := s.eng.Recompute(ctx, s.clientID, protocol.RecomputeParams{ContextID: id,
			InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: exprs}})
		if err != nil && !errors.Is(err, engine.ErrExpressionNotFound) && ctx.Err() == nil {
			// Not found: the text saved no longer has the statement.
			s.log.Warn("run held statements", "context", id, "statements", exprs, "err", err)
		}
	}
}

// runStatement is ripple.run on a statement: a recompute of it, an
// explicit run, in context id, or, when id is "", in every context whose
// top frame shows it.
func (s *session) runStatement(ctx context.Context, expr protocol.ExpressionID, id protocol.ContextID) error {
	if _, _, err := expr.Split(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCommandArguments, expr, err)
	}
	var ids []protocol.ContextID
	s.mu.Lock()
	if id != "" {
		if _, ok := s.byID[id]; ok {
			ids = append(ids, id)
		}
	} else {
		for _, e := range s.entries {
			if e.inTop(expr) {
				ids = append(ids, e.id)
			}
		}
	}
	s.mu.Unlock()
	switch {
	case len(ids) == 0 && id != "":
		return fmt.Errorf("%w: %s", ErrUnknownContext, id)
	case len(ids) == 0:
		return fmt.Errorf("%w: no context shows the frame of %s (run its function first, or name the context)", ErrCommandArguments, expr)
	}
	for _, c := range ids {
		err := s.eng.Recompute(ctx, s.clientID, protocol.RecomputeParams{ContextID: c,
			InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{expr}}})
		if err != nil {
			return err
		}
	}
	return nil
}
