package lsp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
)

// hintMax is the longest preview an inlay hint shows, in code points;
// hover shows the whole preview (the engine's cut: 200).
const hintMax = 48

// The hint's label is the value after the statement, with a mark in front:
//
//	= 42         computed by the latest run
//	≡ 42         served from the cache (the statement did not run again)
//	⏳            pending: the run will compute it
//	▶ running    the run is computing it now
//	⏸ held: shutil.rmtree('out')   an automatic run held its effect (▶ Run runs it)
//	∅ not reached: line 4 raised   the run ended before it (PROTOCOL.md 8.1, 8.4):
//	               (held at line 3), (interrupted), (kernel died)
//	… not reached  a return ended the run before it
//	✗ ValueError: bad   it raised, or depends on a statement that did
//
// Its tooltip holds the type and the time, and for a statement without a
// fresh value why, and the last value it had.
const (
	markComputed   = "="
	markCached     = "≡"
	markPending    = "⏳"
	markRunning    = "▶"
	markHeld       = "⏸"
	markNotReached = "∅"
	markPanic      = "✗"
	markSkipped    = "…"
)

// heldMax is the longest held effect a hint shows, in code points (the
// kernel cuts each argument at 200).
const heldMax = 72

// shown is a statement of a frame the editor shows.
type shown struct {
	e *entry
	u protocol.ExpressionUpdate
}

// shownIn returns the statements of the top frames whose function is in
// the file rel. The caller holds mu.
func (s *session) shownIn(rel string) []shown {
	var out []shown
	for _, e := range s.entries {
		if s.modulePath(e.top().Module) != rel {
			continue
		}
		for _, u := range e.updates {
			if u.Range != nil {
				out = append(out, shown{e, u})
			}
		}
	}
	return out
}

// InlayHint answers textDocument/inlayHint without waiting (the wire
// path is inlayHintRequest, which waits for a pending run first).
func (s *session) InlayHint(ctx context.Context, p *lsproto.InlayHintParams) ([]lsproto.InlayHint, error) {
	if err := s.checkInitialized(); err != nil {
		return nil, err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return []lsproto.InlayHint{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hintsLocked(rel, p.Range, false), nil
}

// latestIn returns the statements shown in rel, one per place: when two
// ids sit at one range (a statement whose id changed when lines moved,
// whose old id nothing updates any more), the one updated last. The
// caller holds mu.
func (s *session) latestIn(rel string) []shown {
	at := make(map[protocol.Range]shown)
	for _, sh := range s.shownIn(rel) {
		r := *sh.u.Range
		if o, ok := at[r]; !ok || o.e.order[o.u.ExpressionID] < sh.e.order[sh.u.ExpressionID] {
			at[r] = sh
		}
	}
	out := make([]shown, 0, len(at))
	for _, sh := range at {
		out = append(out, sh)
	}
	return out
}

// hintsLocked builds the hints of lines rng of the document rel: one per
// statement, at its end. With unknown (a run is pending that has not said
// which statements it changes) every value is shown ⏳, with the value in
// the tooltip as the last one: not as current. The caller holds mu.
func (s *session) hintsLocked(rel string, rng lsproto.Range, unknown bool) []lsproto.InlayHint {
	text, ok := s.textOf(rel)
	if !ok {
		return []lsproto.InlayHint{}
	}
	hints := []lsproto.InlayHint{}
	t := true
	from, to := int(rng.Start.Line), int(rng.End.Line)
	for _, sh := range s.latestIn(rel) {
		r := *sh.u.Range
		if r.End.Line < from || r.End.Line > to {
			continue
		}
		u := sh.u
		if unknown && u.Payload.Type == protocol.PayloadValue {
			if _, ok := sh.e.last[u.ExpressionID]; !ok {
				sh.e.last[u.ExpressionID] = u.Payload.Preview
			}
			u.Payload = protocol.PendingPayload("")
		}
		if quiet(text, u) {
			continue
		}
		hints = append(hints, lsproto.InlayHint{
			Position:    s.enc.toLSP(text, r.End),
			Label:       lsproto.String(sh.e.hintLabel(u)),
			PaddingLeft: &t,
			Tooltip:     &lsproto.MarkupContent{Kind: lsproto.MarkupKindMarkdown, Value: sh.e.details(u)},
		})
	}
	for _, sh := range s.latestIn(rel) {
		hints = append(hints, sh.e.innerHints(text, sh.u, from, to, unknown,
			func(p protocol.Position) lsproto.Position { return s.enc.toLSP(text, p) })...)
	}
	slices.SortFunc(hints, func(a, b lsproto.InlayHint) int {
		return cmp.Or(cmp.Compare(a.Position.Line, b.Position.Line), cmp.Compare(a.Position.Character, b.Position.Character))
	})
	return hints
}

// quiet reports a statement whose hint would say nothing: a None of an
// expression statement (a call, print), of a compound statement's header
// (for, if, with) or of a def, class or import; an assignment whose value
// is its own right-hand side as written (`a = 6`: no `= 6` after it); an
// augmented assignment the kernel reports no new value for (statement.py).
func quiet(text string, u protocol.ExpressionUpdate) bool {
	if bindsOnly(text, u) {
		return true
	}
	if u.Payload.Type != protocol.PayloadValue {
		return false
	}
	info := classify(stmtText(text, *u.Range))
	if info.kind == kindAssign && info.aug {
		// The kernel reports the target's new value (n += 4, x["q"] += n,
		// obj.n += 1), or None when reading the target again would call
		// something (x[key()] += 1): no hint rather than a wrong one.
		return u.Type == "builtins.NoneType"
	}
	if info.kind == kindAssign {
		return info.rhs == u.Payload.Preview
	}
	return u.Type == "builtins.NoneType" && info.kind != kindOther
}

// bindsOnly reports a statement whose value says nothing: a def, class
// or import of a script frame (PROTOCOL.md 7.1) evaluates to None; its
// hint would be noise on every such line.
func bindsOnly(text string, u protocol.ExpressionUpdate) bool {
	if u.Payload.Type != protocol.PayloadValue || u.Type != "builtins.NoneType" {
		return false
	}
	line, _ := lineText(text, u.Range.Start.Line)
	line = strings.TrimLeft(line, " \t")
	for _, kw := range []string{"def ", "async def ", "class ", "@", "import ", "from "} {
		if strings.HasPrefix(line, kw) {
			return true
		}
	}
	return false
}

// hintLabel is the label of a statement's hint. The caller holds mu.
func (e *entry) hintLabel(u protocol.ExpressionUpdate) string {
	switch u.Payload.Type {
	case protocol.PayloadPending:
		switch {
		case u.Payload.Message == "":
			return markPending
		case isRunning(u):
			return markRunning + " running"
		case isHeld(u):
			return markHeld + " " + cut(u.Payload.Message, heldMax)
		case u.Payload.Reason != nil:
			return markNotReached + " " + e.notReached(*u.Payload.Reason)
		}
		return markSkipped + " " + u.Payload.Message
	case protocol.PayloadPanic, protocol.PayloadDataflowError:
		return markPanic + " " + cut(u.Payload.Message, hintMax)
	}
	mark := markComputed
	if u.FromCache {
		mark = markCached
	}
	return mark + " " + cut(u.Payload.Preview, hintMax)
}

// notReached says why a statement was not reached, naming the statement
// that ended the run by its line (1-based, as editors number them) when
// the frame shows it. The caller holds mu.
func (e *entry) notReached(r protocol.PendingReason) string {
	line := ""
	if x, ok := e.updates[r.ExpressionID]; ok && r.ExpressionID != "" && x.Range != nil {
		line = fmt.Sprintf("line %d", x.Range.Start.Line+1)
	}
	switch r.Kind {
	case protocol.ReasonException:
		if line == "" {
			return "not reached: an exception ended the run"
		}
		return "not reached: " + line + " raised"
	case protocol.ReasonHeld:
		if line == "" {
			return "not reached (held)"
		}
		return "not reached (held at " + line + ")"
	case protocol.ReasonInterrupted:
		return "not reached (interrupted)"
	case protocol.ReasonKernelDied:
		return "not reached (kernel died)"
	}
	return "not reached (" + r.Kind + ")"
}

// details is the markdown of a statement's tooltip (and of its hover,
// under the preview): type, time, whether it ran, why it has no fresh
// value, its last value then, its effects, what it calls. The caller
// holds mu.
func (e *entry) details(u protocol.ExpressionUpdate) string {
	var b strings.Builder
	if u.Type != "" {
		fmt.Fprintf(&b, "`%s`", u.Type)
	}
	for _, pi := range u.ProfilingInfo {
		if pi.Type == "ExecutionTime" {
			if b.Len() > 0 {
				b.WriteString(" · ")
			}
			b.WriteString(time.Duration(pi.NanoTime).Round(time.Microsecond).String())
		}
	}
	if b.Len() > 0 {
		b.WriteString(" · ")
	}
	switch {
	case isRunning(u):
		b.WriteString("running")
		if at := u.Payload.StartedAt; at != "" {
			fmt.Fprintf(&b, " since %s", at)
		}
	case isHeld(u):
		fmt.Fprintf(&b, "%s: an automatic run (typing) does not touch the world; ▶ Run, or saving the file, runs it", u.Payload.Message)
	case u.Payload.Type == protocol.PayloadPending && u.Payload.Reason != nil:
		b.WriteString(e.notReached(*u.Payload.Reason))
	case u.Payload.Type == protocol.PayloadPending:
		b.WriteString("pending")
		if u.Payload.Message != "" {
			b.WriteString(": " + u.Payload.Message)
		}
	case u.FromCache:
		b.WriteString("from the cache")
	default:
		b.WriteString("computed")
	}
	if last, ok := e.last[u.ExpressionID]; ok && u.Payload.Type == protocol.PayloadPending {
		fmt.Fprintf(&b, " · last value `%s`", cut(last, hintMax))
	}
	if fx := u.Payload.Effects; len(fx) > 0 {
		fmt.Fprintf(&b, " · effects: `%s`", strings.Join(fx, "`, `"))
	}
	if u.MethodCall != nil {
		fmt.Fprintf(&b, " · calls `%s`", u.MethodCall.MethodPointer)
	}
	return b.String()
}

// cut shortens s to n code points, ending it with "…" when cut, and keeps
// it on one line.
func cut(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", "⏎")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n-1 {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// Hover answers textDocument/hover on a statement of a frame shown, on
// its assignment's targets, its expression or its compound keyword only
// (another server answers on the names elsewhere): the value (or
// exception) first, then type, time and the output it printed.
func (s *session) Hover(ctx context.Context, p *lsproto.HoverParams) (*lsproto.Hover, error) {
	if err := s.checkInitialized(); err != nil {
		return nil, err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	text, ok := s.textOf(rel)
	if !ok {
		return nil, nil
	}
	at, err := s.enc.fromLSP(text, p.Position)
	if err != nil {
		return nil, nil
	}
	var best *shown
	var span protocol.Range
	for _, sh := range s.latestIn(rel) {
		sp, ok := hoverSpan(text, *sh.u.Range)
		if !ok || !within(at, sp) {
			continue
		}
		// Two frames can overlap: the innermost wins.
		if best == nil || best.u.Range.Start.Before(sh.u.Range.Start) {
			best, span = &sh, sp
		}
	}
	if best == nil {
		return nil, nil
	}
	u := best.u
	var b strings.Builder
	switch u.Payload.Type {
	case protocol.PayloadValue:
		fmt.Fprintf(&b, "```python\n%s\n```\n", u.Payload.Preview)
	case protocol.PayloadPanic, protocol.PayloadDataflowError:
		fmt.Fprintf(&b, "```\n%s\n```\n", u.Payload.Message)
	default:
		fmt.Fprintf(&b, "%s\n\n", best.e.hintLabel(u))
	}
	b.WriteString(best.e.details(u))
	if out := best.e.output[u.ExpressionID]; out != "" {
		fmt.Fprintf(&b, "\n\noutput:\n```\n%s\n```", strings.TrimSuffix(out, "\n"))
	}
	r := s.enc.toLSPRange(text, span)
	return &lsproto.Hover{Contents: &lsproto.MarkupContent{Kind: lsproto.MarkupKindMarkdown, Value: b.String()}, Range: &r}, nil
}
