package lsp

import (
	"fmt"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
)

// innerHints are the hints of a compound statement's inner values
// (protocol.ExpressionUpdate.Inner: the statements in its if/for/with/try
// bodies) on lines from..to of text, like a statement's own, with "×N"
// after the value of one that ran more than once. None while its run is
// pending (unknown) or for a Pending update: the inner values belong to
// the run that made the update. at converts a position of text to the
// client's. The caller holds mu.
func (e *entry) innerHints(text string, u protocol.ExpressionUpdate, from, to int, unknown bool,
	at func(protocol.Position) lsproto.Position) []lsproto.InlayHint {
	if unknown || len(u.Inner) == 0 || u.Payload.Type == protocol.PayloadPending {
		return nil
	}
	var out []lsproto.InlayHint
	t := true
	for i := range u.Inner {
		v := &u.Inner[i]
		if v.Range.End.Line < from || v.Range.End.Line > to {
			continue
		}
		iu := innerUpdate(u, v)
		if v.Panic == "" && v.Type == "" || quiet(text, iu) {
			continue // no value to show (obj.n += 1), or one that says nothing
		}
		label := e.hintLabel(iu)
		if v.Count > 1 {
			label += fmt.Sprintf(" ×%d", v.Count)
		}
		out = append(out, lsproto.InlayHint{
			Position:    at(v.Range.End),
			Label:       lsproto.String(label),
			PaddingLeft: &t,
			Tooltip:     &lsproto.MarkupContent{Kind: lsproto.MarkupKindMarkdown, Value: innerDetails(u, v)},
		})
	}
	return out
}

// innerUpdate is inner value v of u as an update of its own, for the
// hint of a statement (quiet, hintLabel).
func innerUpdate(u protocol.ExpressionUpdate, v *protocol.InnerValue) protocol.ExpressionUpdate {
	p := protocol.ValuePayload(v.Preview)
	if v.Panic != "" {
		p = protocol.PanicPayload(v.Panic)
	}
	r := v.Range
	return protocol.ExpressionUpdate{ExpressionID: u.ExpressionID, Type: v.Type, FromCache: u.FromCache, Range: &r, Payload: p}
}

// innerDetails is the tooltip of an inner value's hint.
func innerDetails(u protocol.ExpressionUpdate, v *protocol.InnerValue) string {
	s := ""
	if v.Type != "" {
		s = fmt.Sprintf("`%s` · ", v.Type)
	}
	runs := "runs"
	if v.Count == 1 {
		runs = "run"
	}
	s += fmt.Sprintf("the last value in %d %s of the statement at line %d", v.Count, runs, u.Range.Start.Line+1)
	if v.Panic != "" {
		s += " · it raised " + v.Panic
	}
	if u.FromCache {
		s += " · from the cache"
	}
	return s
}
