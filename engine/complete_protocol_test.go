package engine_test

import (
	"errors"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// executionContext/complete and /inspect (protocol.Completer): the
// context's live names through the client protocol's types; an unknown
// context is 2002 ContextNotFound.
func TestCompleteAtAndInspectAt(t *testing.T) {
	t.Parallel()
	src := "import collections\n\nparcel_weight = 3\ncounts = collections.Counter(a=1)\n"
	h := setup(t, map[string]string{"main.py": src}, engine.Config{})
	id, run := h.newContext("main:__main__")
	if run.failed != nil {
		t.Fatalf("script run failed: %+v", run.failed)
	}
	res, err := h.e.CompleteAt(h.ctx, "c1", protocol.CompleteParams{ContextID: id, Code: "parcel_", Cursor: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 1 || res.Matches[0].Text != "parcel_weight" || res.CursorStart != 0 || res.CursorEnd != 7 {
		t.Fatalf("complete: %+v, want parcel_weight over [0,7)", res)
	}
	in, err := h.e.InspectAt(h.ctx, "c1", protocol.InspectParams{ContextID: id, Code: "counts", Cursor: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Found || in.Text == "" {
		t.Fatalf("inspect: %+v", in)
	}
	_, err = h.e.CompleteAt(h.ctx, "c1", protocol.CompleteParams{ContextID: "no-such-context", Code: "x", Cursor: 1})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeContextNotFound {
		t.Fatalf("unknown context: %v, want ContextNotFound", err)
	}
}
