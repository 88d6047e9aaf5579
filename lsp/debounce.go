package lsp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// Typing is debounced here, at the client (PROTOCOL.md 8.2): each didChange
// is applied to its buffer at once without running (so the buffer always
// holds the editor's text, for other clients and for a save), and the run
// is asked only when changes pause for the session's runDelay. A run asked
// this way is automatic: the kernel holds the effects it tries.
//
// The ask is an empty text/applyEdit with execute:true at the buffer's
// current version: the engine's "run this buffer's module now", with no
// text of its own, so it cannot conflict with an edit.

// changed tells the debouncer that a document changed: its wait starts
// again.
func (s *session) changed() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// debouncer asks the run of the changed documents once changes pause for
// runDelay: each change restarts the wait. It ends when ctx does.
func (s *session) debouncer(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
			s.mu.Lock()
			delay := s.runDelay
			s.mu.Unlock()
			t.Reset(delay) // Go 1.23 timers: no stale tick survives Reset
		case <-t.C:
			s.runEdited(ctx)
		}
	}
}

// runEdited asks the run of every document changed since its last run was
// asked. Called by the debouncer and by didSave (on the read goroutine):
// each document's ask is taken under mu, so it is asked once.
func (s *session) runEdited(ctx context.Context) {
	type ask struct{ path, version string }
	s.mu.Lock()
	asks := make([]ask, 0, len(s.unrun))
	for p := range s.unrun {
		if d, ok := s.docs[p]; ok {
			asks = append(asks, ask{p, d.version})
			s.asking[p] = true
		}
	}
	clear(s.unrun)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		for _, a := range asks {
			delete(s.asking, a.path)
		}
		s.settleLocked()
		s.mu.Unlock()
	}()
	slices.SortFunc(asks, func(a, b ask) int { return strings.Compare(a.path, b.path) })
	paths := make([]string, len(asks))
	for i, a := range asks {
		paths[i] = a.path
	}
	defer s.reviveEdited(ctx, paths)
	for _, a := range asks {
		err := s.eng.ApplyEdit(ctx, s.clientID, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
			Path: protocol.Path(a.path), Edits: []protocol.TextEdit{}, OldVersion: a.version, NewVersion: a.version}})
		switch {
		case err == nil:
		case errors.Is(err, workspace.ErrInvalidVersion):
			// A change went in after the version was read (it asks its own
			// run once changes pause), or another client's edit did (the
			// editor's echo of it asks one).
			s.log.Debug("run after pause: the buffer moved on", "path", a.path, "err", err)
		case ctx.Err() == nil:
			s.log.Warn("run after pause", "path", a.path, "err", err)
		}
	}
}
