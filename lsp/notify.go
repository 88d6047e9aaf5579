package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/protocol"
)

// maxQueuedOutput bounds the run output waiting in the inbox: past it,
// output is dropped (and counted) until the loop catches up, so a run that
// prints without end cannot grow the server's memory while the editor reads
// slowly.
const maxQueuedOutput = 4 << 20

// progressAfter is how long a run goes before the editor shows progress.
const progressAfter = 500 * time.Millisecond

// refreshTimeout bounds the wait for the client's answer to a refresh or
// a workDoneProgress/create request.
const refreshTimeout = 10 * time.Second

// maxOutputPerStatement bounds the output kept per statement for hover.
const maxOutputPerStatement = 4 << 10

// note is one engine notification.
type note struct {
	method string
	params any
}

// inbox holds the engine's notifications until the loop takes them:
// Notify must not block (engine.Client), the client may be slow.
type inbox struct {
	mu      sync.Mutex
	notes   []note // guarded by mu
	output  int    // guarded by mu: bytes of output in notes
	dropped int    // guarded by mu: output bytes dropped since the last take
	// busy: the loop took notes and has not applied them yet (pending
	// says so to a waiting inlayHint request). Guarded by mu.
	busy bool
	wake chan struct{}
}

// pending reports notifications not yet applied to the session's state.
func (in *inbox) pending() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.notes) > 0 || in.busy
}

// applied marks the notes taken last as applied.
func (in *inbox) applied() {
	in.mu.Lock()
	in.busy = false
	in.mu.Unlock()
}

// Notify implements engine.Client: it queues the notification for the loop.
func (s *session) Notify(method string, params any) {
	in := &s.inbox
	in.mu.Lock()
	if o, ok := params.(protocol.OutputParams); ok && method == protocol.NotifyOutput {
		if in.output+len(o.Text) > maxQueuedOutput {
			in.dropped += len(o.Text)
			in.mu.Unlock()
			return
		}
		in.output += len(o.Text)
	}
	in.notes = append(in.notes, note{method, params})
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *inbox) take() ([]note, int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	notes, dropped := in.notes, in.dropped
	in.notes, in.output, in.dropped = nil, 0, 0
	in.busy = len(notes) > 0
	return notes, dropped
}

// entry is one execution context the editor shows: a function the user
// ran, and the frames entered from it.
type entry struct {
	pointer protocol.MethodPointer // the bottom frame (what ripple.run named)
	id      protocol.ContextID
	// frames are the functions of the stack, bottom first; the top one's
	// statements carry the hints.
	frames  []protocol.MethodPointer
	updates map[protocol.ExpressionID]protocol.ExpressionUpdate // the top frame's latest
	output  map[protocol.ExpressionID]string                    // per statement of the top frame, bounded
	// last is each top-frame statement's latest Value preview, kept while
	// it waits, is held or is not reached (shown as its last value).
	last map[protocol.ExpressionID]string
	// order is when each top-frame statement was last updated (the
	// session's tick): of two ids at one place, the later is the current.
	order   map[protocol.ExpressionID]uint64
	running bool
	gen     int // runs started
	begun   time.Time
	// Diagnostics: stale are the last finished run's, fresh this run's so
	// far; a run's end replaces stale by fresh (so a fixed Panic clears
	// then, and one that persists does not flicker while the run goes).
	stale, fresh []protocol.Diagnostic
	progress     string // the work-done token of this run ("" = none)
	// crashed: its run killed the kernel, and the user has not run it or
	// changed its module since (one pop-up per failure). parked: its
	// context is destroyed for that reason, so no edit elsewhere runs it
	// again; its hints stay (crash.go).
	crashed, parked bool
}

// top returns the function of the top frame.
func (e *entry) top() protocol.MethodPointer { return e.frames[len(e.frames)-1] }

// inTop reports whether an expression belongs to the top frame's function.
func (e *entry) inTop(id protocol.ExpressionID) bool {
	fn, _, err := id.Split()
	return err == nil && fn.String() == e.top().String()
}

// setFrames replaces the stack and forgets the old top frame's values.
func (e *entry) setFrames(frames []protocol.MethodPointer) {
	e.frames = frames
	e.updates = make(map[protocol.ExpressionID]protocol.ExpressionUpdate)
	e.output = make(map[protocol.ExpressionID]string)
	e.last = make(map[protocol.ExpressionID]string)
	e.order = make(map[protocol.ExpressionID]uint64)
}

// outgoing is what the loop sends after applying a batch.
type outgoing struct {
	logs     []lsproto.LogMessageParams
	shows    []lsproto.ShowMessageParams
	progress []lsproto.ProgressParams
	creates  []progressStart
	applies  []lsproto.ApplyWorkspaceEditParams
	park     []protocol.ContextID // contexts whose run killed the kernel (crash.go)
	hints    bool
	lenses   bool
	diags    bool
}

type progressStart struct {
	token string
	title string
	gen   int
	ctx   protocol.ContextID
}

// loop applies the engine's notifications to the session's state in
// arrival order, then sends what they produce.
func (s *session) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.inbox.wake:
		}
		notes, dropped := s.inbox.take()
		var out outgoing
		s.mu.Lock()
		for _, n := range notes {
			s.apply(n, &out)
		}
		var diags []lsproto.PublishDiagnosticsParams
		if out.diags {
			diags = s.diagnosticsLocked()
		}
		if out.lenses {
			s.pendingLens = true
		}
		s.inbox.applied()
		s.settleLocked()
		s.mu.Unlock()
		if dropped > 0 {
			out.logs = append(out.logs, lsproto.LogMessageParams{Type: lsproto.MessageTypeWarning,
				Message: fmt.Sprintf("[ripple: %d bytes of output dropped]", dropped)})
		}
		for i := range out.logs {
			_ = s.client.LogMessage(ctx, &out.logs[i])
		}
		for i := range out.shows {
			_ = s.client.ShowMessage(ctx, &out.shows[i])
		}
		for i := range diags {
			_ = s.client.PublishDiagnostics(ctx, &diags[i])
		}
		if len(out.progress) > 0 {
			s.sendMu.Lock()
			for i := range out.progress {
				_ = s.client.Progress(ctx, &out.progress[i])
			}
			s.sendMu.Unlock()
		}
		if len(out.applies) > 0 {
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.applyInEditor(ctx, out.applies) }()
		}
		for _, id := range out.park {
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.park(ctx, id) }()
		}
		for _, ps := range out.creates {
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.reportProgress(ctx, ps) }()
		}
		if out.hints || out.lenses {
			s.wantRefresh(out.lenses)
		}
	}
}

// apply applies one notification. The caller holds mu.
func (s *session) apply(n note, out *outgoing) {
	switch p := n.params.(type) {
	case protocol.ExpressionUpdatesParams:
		s.applyUpdates(p, out)
	case protocol.OutputParams:
		e := s.byID[p.ContextID]
		if e == nil {
			return
		}
		s.runStarted(e, out)
		// PROTOCOL.md 7.3: the statement that wrote it ("" outside any:
		// module load).
		if id := p.ExpressionID; id != "" && len(e.output[id]) < maxOutputPerStatement {
			e.output[id] += p.Text
		}
		// Output sent again with a value the editor has not seen run
		// (PROTOCOL.md 8.3: restored from the journal) is kept for the
		// hover, not logged: the log is what the program prints as it
		// runs, and that statement did not run now.
		if s.output != 0 && !p.Replayed {
			out.logs = append(out.logs, lsproto.LogMessageParams{Type: s.output,
				Message: strings.TrimSuffix(p.Text, "\n")})
		}
	case protocol.ExecutionStatusParams:
		e := s.byID[p.ContextID]
		if e == nil {
			return
		}
		s.runStarted(e, out)
		e.fresh = append(e.fresh, p.Diagnostics...)
		if len(p.Diagnostics) == 0 { // PROTOCOL.md 7.6: the run has none
			e.fresh, e.stale = nil, nil
		}
		out.diags = true
	case protocol.ExecutionCompleteParams:
		if e := s.byID[p.ContextID]; e != nil {
			s.runEnded(e, out, fmt.Sprintf("ripple: %s: done in %s", e.top(), time.Since(e.begun).Round(time.Millisecond)))
		}
	case protocol.ExecutionFailedParams:
		e := s.byID[p.ContextID]
		if e == nil {
			return
		}
		if d := p.Result.Diagnostic; d != nil && p.Result.Kind == protocol.ResultCompileError {
			s.runStarted(e, out)
			if !slices.ContainsFunc(e.fresh, func(x protocol.Diagnostic) bool { return x.Message == d.Message && x.Path == d.Path }) {
				e.fresh = append(e.fresh, *d)
			}
		}
		msg := fmt.Sprintf("ripple: %s: %s: %s", e.top(), p.Result.Kind, p.Result.Message)
		switch p.Result.Kind {
		case protocol.ResultInterrupted:
			e.endWaiting(protocol.ReasonInterrupted)
		case protocol.ResultKernelDied:
			e.endWaiting(protocol.ReasonKernelDied)
		}
		s.runEnded(e, out, msg)
		switch p.Result.Kind {
		case protocol.ResultKernelDied:
			s.crashedLocked(e, msg, out)
		case protocol.ResultFailure, protocol.ResultTimeout:
			out.shows = append(out.shows, lsproto.ShowMessageParams{Type: lsproto.MessageTypeError, Message: msg})
		}
	case protocol.KernelRestartedParams:
		state := "its state was lost"
		if p.StatePreserved {
			state = "its state was kept"
		}
		// Logged, not shown: the failure that caused it (a kernel death)
		// has its one pop-up (crash.go).
		out.logs = append(out.logs, lsproto.LogMessageParams{Type: lsproto.MessageTypeWarning,
			Message: fmt.Sprintf("ripple: kernel %d restarted (%s); %s", p.KernelID, p.Reason, state)})
	case lsproto.ShowMessageParams:
		out.shows = append(out.shows, p)
	case republish:
		out.diags, out.hints, out.lenses = true, true, true
	case protocol.DidChangeParams:
		// Another client (the page of --serve) edited a buffer the editor
		// has open: the editor gets the edit (workspace/applyEdit), so
		// what it shows is what runs. Its didChange echo then finds the
		// buffer moved and makes it the editor's text, the same.
		if !s.caps.applyEdit {
			return
		}
		for _, fe := range p.Edits {
			if a, ok := s.forwardLocked(fe); ok {
				out.applies = append(out.applies, a)
			}
		}
	case protocol.FileEventParams, protocol.FileModifiedOnDiskParams:
		// Files on disk: the editor watches its own.
	}
}

// applyUpdates records a run's updates of the top frames' statements. The
// caller holds mu.
func (s *session) applyUpdates(p protocol.ExpressionUpdatesParams, out *outgoing) {
	e := s.byID[p.ContextID]
	if e == nil {
		return
	}
	lensBefore := e.lensKey()
	for _, u := range p.Updates {
		if !e.inTop(u.ExpressionID) {
			continue // a frame left by push or pop
		}
		if isWaiting(u) {
			s.runStarted(e, out)
			// The run executes: its modules compiled, so a syntax error
			// it had is fixed now, not when the run ends.
			if e.dropCompileErrors() {
				out.diags = true
			}
			delete(e.output, u.ExpressionID) // it runs again: its output is new
			// What it raised in a run an edit superseded (whose
			// findings this run carries on) is not this run's: it
			// says again if it still raises. Not published now, so
			// a persisting error does not flicker.
			e.fresh = slices.DeleteFunc(e.fresh, func(d protocol.Diagnostic) bool { return d.ExpressionID == u.ExpressionID })
		}
		if u.Payload.Type == protocol.PayloadValue {
			e.last[u.ExpressionID] = u.Payload.Preview
		}
		e.updates[u.ExpressionID] = u
		s.tick++
		e.order[u.ExpressionID] = s.tick
	}
	out.hints = true
	out.lenses = out.lenses || e.lensKey() != lensBefore
}

// runStarted marks the start of a run, unless one is going. The caller
// holds mu.
func (s *session) runStarted(e *entry, out *outgoing) {
	if e.running {
		return
	}
	e.running = true
	e.gen++
	e.begun = time.Now()
	// A run cancelled by an edit ends without a notification: what it had
	// found still counts until this run ends.
	e.stale = append(e.stale, e.fresh...)
	e.fresh = nil
	// A value this run does not compute again is the cache's: the marks
	// say what the latest run did (the engine sends updates only for the
	// statements a run touches).
	for id, u := range e.updates {
		if u.Payload.Type == protocol.PayloadValue && !u.FromCache {
			u.FromCache = true
			e.updates[id] = u
		}
	}
	out.lenses = true // ■ Interrupt
	if s.caps.progress {
		out.creates = append(out.creates, progressStart{
			token: fmt.Sprintf("ripple/%s/%d", e.id, e.gen), title: "ripple: running " + e.top().String(), gen: e.gen, ctx: e.id})
	}
}

// runEnded marks the end of a run. The caller holds mu.
func (s *session) runEnded(e *entry, out *outgoing, message string) {
	if !e.running {
		e.begun = time.Now()
	}
	e.running = false
	e.stale, e.fresh = e.fresh, nil
	out.diags, out.lenses, out.hints = true, true, true
	out.logs = append(out.logs, lsproto.LogMessageParams{Type: lsproto.MessageTypeInfo, Message: message})
	if e.progress != "" {
		out.progress = append(out.progress, lsproto.ProgressParams{Token: lsproto.String(e.progress),
			Value: mustJSON(lsproto.WorkDoneProgressEnd{Kind: "end", Message: &message})})
		e.progress = ""
	}
}

// lensKey summarizes what the entry's code lenses depend on.
func (e *entry) lensKey() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%v", len(e.frames), e.running)
	ids := make([]string, 0)
	for id, u := range e.updates {
		if u.MethodCall != nil {
			ids = append(ids, string(id))
		}
		if isHeld(u) { // its ▶ Run
			ids = append(ids, "held "+string(id))
		}
	}
	slices.Sort(ids)
	b.WriteString(strings.Join(ids, ","))
	return b.String()
}

// reportProgress creates a work-done progress for a run still going after
// progressAfter, and begins it; runEnded ends it.
func (s *session) reportProgress(ctx context.Context, ps progressStart) {
	t := time.NewTimer(progressAfter)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	if !s.stillRunning(ps) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	err := s.client.WorkDoneProgressCreate(cctx, &lsproto.WorkDoneProgressCreateParams{Token: lsproto.String(ps.token)})
	cancel()
	if err != nil {
		s.log.Debug("workDoneProgress/create", "err", err)
		return
	}
	// sendMu from before the run is marked as reported until "begin" is
	// out: the loop sends runEnded's "end" only after it.
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.mu.Lock()
	e := s.byID[ps.ctx]
	ok := e != nil && e.running && e.gen == ps.gen
	if ok {
		e.progress = ps.token
	}
	s.mu.Unlock()
	if ok {
		_ = s.client.Progress(ctx, &lsproto.ProgressParams{Token: lsproto.String(ps.token),
			Value: mustJSON(lsproto.WorkDoneProgressBegin{Kind: "begin", Title: ps.title})})
	}
}

func (s *session) stillRunning(ps progressStart) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[ps.ctx]
	return e != nil && e.running && e.gen == ps.gen
}

// wantRefresh asks the refresher for an inlayHint refresh (and a codeLens
// one when lenses is true).
func (s *session) wantRefresh(lenses bool) {
	if lenses {
		s.mu.Lock()
		s.pendingLens = true
		s.mu.Unlock()
	}
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// refresher sends workspace/inlayHint/refresh (and codeLens/refresh) when
// asked, one at a time: requests that arrive while one is out collapse into
// the next, so a burst of flushes costs one refresh round-trip at a time.
func (s *session) refresher(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.refresh:
		}
		s.mu.Lock()
		caps, lenses := s.caps, s.pendingLens
		s.pendingLens = false
		s.mu.Unlock()
		// A client that never answers must not stop the refreshes: each
		// request has refreshTimeout.
		if caps.inlayRefresh {
			rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
			if err := s.client.InlayHintRefresh(rctx); err != nil && ctx.Err() == nil {
				s.log.Debug("inlayHint/refresh", "err", err)
			}
			cancel()
		}
		if lenses && caps.lensRefresh {
			rctx, cancel := context.WithTimeout(ctx, refreshTimeout)
			if err := s.client.CodeLensRefresh(rctx); err != nil && ctx.Err() == nil {
				s.log.Debug("codeLens/refresh", "err", err)
			}
			cancel()
		}
	}
}

// forwardLocked turns another client's edit of a buffer the editor has
// open into the one LSP text edit that takes the editor's text to the
// result: the changed span between the common prefix and suffix (LSP
// edits of one document are relative to the original text, ripple's
// apply in sequence, so they are not passed through one by one). The
// caller holds mu.
func (s *session) forwardLocked(fe protocol.FileEdit) (lsproto.ApplyWorkspaceEditParams, bool) {
	d, ok := s.docs[string(fe.Path)]
	if !ok {
		return lsproto.ApplyWorkspaceEditParams{}, false
	}
	after := d.text
	for _, te := range fe.Edits {
		var err error
		if after, err = applyEdit(after, te.Range, te.Text); err != nil {
			s.log.Debug("forward edit", "path", fe.Path, "err", err)
			return lsproto.ApplyWorkspaceEditParams{}, false
		}
	}
	if after == d.text {
		return lsproto.ApplyWorkspaceEditParams{}, false
	}
	from, to, with := changedSpan(d.text, after)
	r := protocol.Range{Start: positionAt(d.text, from), End: positionAt(d.text, to)}
	label := "ripple: edit from another client"
	return lsproto.ApplyWorkspaceEditParams{Label: &label, Edit: lsproto.WorkspaceEdit{Changes: map[uri.URI][]lsproto.TextEdit{
		d.uri: {{Range: s.enc.toLSPRange(d.text, r), NewText: with}}}}}, true
}

// applyInEditor sends edits to the editor, one request at a time.
func (s *session) applyInEditor(ctx context.Context, edits []lsproto.ApplyWorkspaceEditParams) {
	for i := range edits {
		actx, cancel := context.WithTimeout(ctx, refreshTimeout)
		res, err := s.client.ApplyEdit(actx, &edits[i])
		cancel()
		if err != nil || !res.Applied {
			s.log.Debug("workspace/applyEdit", "err", err, "result", res)
		}
	}
}

// mustJSON encodes a value the LSP types define (it cannot fail).
func mustJSON(v any) lsproto.LSPAny {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return lsproto.LSPAny(b)
}

// enqueueMessage shows a message from a handler (handlers do not send: the
// loop does, in order with everything else).
func (s *session) enqueueMessage(t lsproto.MessageType, msg string) {
	s.Notify(notifyShow, lsproto.ShowMessageParams{Type: t, Message: msg})
}

// notifyShow is the session's own note: a message to show.
const notifyShow = "ripple-lsp/show"
