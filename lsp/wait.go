package lsp

import (
	"context"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/contexts"
)

// Correct without refresh. Neovim 0.10 does not redraw inlay hints on
// workspace/inlayHint/refresh (neovim#32248) and Eglot does not act on it:
// each asks for hints once after an edit and shows the answer until the
// next keystroke. So the answer must not be the last run's values as if
// they were the new text's: an inlayHint request for a range that a
// pending run will change waits for that run (up to the session's
// hintWait, and until the client cancels it), then answers with its
// values; past the budget it answers ⏳ for every statement the run will
// change (or, when the run has not said yet which, every statement of the
// range), never an old value as if current. Refreshes are still sent, for
// the editors that honour them.
//
// The wait is released from the read goroutine (jsonrpc2.Async), so the
// didChange and $/cancelRequest that follow it are handled meanwhile.

// hintPollInterval re-checks a waiting request even without news: the
// engine's context status (queued, running) changes without a
// notification of ours.
const hintPollInterval = 50 * time.Millisecond

// pendingState says what a document's hints wait for.
type pendingState int

const (
	settled pendingState = iota // nothing pending in the range: answer
	known                       // a run goes and has said what it will change: its ⏳ marks are shown
	unknown                     // a run is asked or queued and has not said what it will change
)

// pendingIn says whether a run is pending that will change the hints of
// lines [from, to] of the document rel. The caller holds mu.
func (s *session) pendingIn(rel string, from, to int) pendingState {
	if s.unrun[rel] || s.asking[rel] {
		return unknown
	}
	state := settled
	for _, e := range s.entries {
		if s.modulePath(e.top().Module) != rel {
			continue
		}
		st, err := s.eng.ContextStatus(e.id)
		if err != nil {
			continue // destroyed meanwhile
		}
		switch {
		case st == contexts.StatusQueued, st == contexts.StatusRunning && !e.running:
			// Asked, not begun (or its first updates are on their way):
			// which statements it recomputes is not known yet.
			return unknown
		case e.running:
			if e.waitingIn(from, to) {
				state = known
			}
		}
	}
	if state == settled && s.inbox.pending() {
		// Notifications not applied yet (a run's end among them).
		return known
	}
	return state
}

// waitingIn reports a statement of the top frame within lines [from, to]
// that the running run has yet to compute. The caller holds mu.
func (e *entry) waitingIn(from, to int) bool {
	for _, u := range e.updates {
		if u.Range != nil && isWaiting(u) && u.Range.End.Line >= from && u.Range.Start.Line <= to {
			return true
		}
	}
	return false
}

// settleLocked wakes the inlayHint requests waiting for a run: the state
// they wait on changed. The caller holds mu.
func (s *session) settleLocked() {
	close(s.settle)
	s.settle = make(chan struct{})
}

// inlayHintRequest answers textDocument/inlayHint, waiting for a pending
// run first (see above). rctx is the request's (only to release it: the
// library recycles it), sctx the connection's.
func (s *session) inlayHintRequest(rctx, sctx context.Context, req *jsonrpc2.Request) (any, error) {
	var p lsproto.InlayHintParams
	if err := lsproto.Unmarshal(req.Params(), &p); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, "textDocument/inlayHint: "+err.Error())
	}
	if err := s.checkInitialized(); err != nil {
		return nil, err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return []lsproto.InlayHint{}, nil
	}
	from, to := int(p.Range.Start.Line), int(p.Range.End.Line)
	s.mu.Lock()
	state, budget := s.pendingIn(rel, from, to), s.hintWait
	if state == settled || budget == 0 {
		defer s.mu.Unlock()
		return s.hintsLocked(rel, p.Range, state == unknown), nil
	}
	s.mu.Unlock()
	id := req.ID()
	ctx, cancel := context.WithCancel(sctx)
	defer cancel()
	s.waitMu.Lock()
	s.waiting[id] = cancel
	s.waitMu.Unlock()
	defer func() {
		s.waitMu.Lock()
		delete(s.waiting, id)
		s.waitMu.Unlock()
	}()
	// Released: the edits and cancels after this request are read while
	// it waits.
	jsonrpc2.Async(rctx)
	timer := time.NewTimer(budget)
	defer timer.Stop()
	poll := time.NewTicker(hintPollInterval)
	defer poll.Stop()
	for {
		s.mu.Lock()
		wake := s.settle
		state = s.pendingIn(rel, from, to)
		if state == settled {
			defer s.mu.Unlock()
			return s.hintsLocked(rel, p.Range, false), nil
		}
		s.mu.Unlock()
		select {
		case <-wake:
		case <-poll.C:
		case <-timer.C:
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.hintsLocked(rel, p.Range, s.pendingIn(rel, from, to) == unknown), nil
		case <-ctx.Done():
			return nil, jsonrpc2.NewError(jsonrpc2.Code(lsproto.LSPErrorCodesRequestCancelled), "textDocument/inlayHint: cancelled")
		}
	}
}

// cancelRequest handles $/cancelRequest: the waiting request it names
// answers RequestCancelled at once. A malformed or unknown id is ignored
// (a notification has no answer; the request may have been answered).
func (s *session) cancelRequest(params jsonrpc2.RawMessage) {
	var p lsproto.CancelParams
	if err := lsproto.Unmarshal(params, &p); err != nil {
		return
	}
	var id jsonrpc2.ID
	switch v := p.ID.(type) {
	case lsproto.Integer:
		id = jsonrpc2.NewNumberID(int64(v))
	case lsproto.String:
		id = jsonrpc2.NewStringID(string(v))
	default:
		return
	}
	s.waitMu.Lock()
	cancel := s.waiting[id]
	s.waitMu.Unlock()
	if cancel != nil {
		cancel()
	}
}
