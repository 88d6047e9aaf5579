package server

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// PROTOCOL.md 8.6: a client gets the reply to its own text/applyEdit
// before any text/didChange built on that edit and before any update of
// the run it caused, even when the run's first update and another
// client's edit built on this one come while the reply still waits (for
// the state log). Before, the didChange and the
// update came first, and the page could apply neither.
func TestReplyToAnEditPrecedesWhatIsBuiltOnIt(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	var created protocol.CreateContextResult
	if err := c.Call(testCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{}, &created); err != nil {
		t.Fatal(err)
	}
	eng.Hook = func(ctx context.Context, method, clientID string) error {
		if method != protocol.MethodTextApplyEdit || clientID != "c1" {
			return nil
		}
		// Another client's edit on top of c1's (oldVersion = c1's
		// newVersion), and the first update of c1's run.
		eng.Client("c1").Notify(protocol.NotifyTextDidChange, protocol.DidChangeParams{Edits: []protocol.FileEdit{
			{Path: "main.py", OldVersion: "v1", NewVersion: "v2"},
		}})
		eng.Client("c1").Notify(protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{ContextID: created.ContextID,
			Updates: []protocol.ExpressionUpdate{{ExpressionID: "main:__main__/1", Payload: protocol.ValuePayload("1")}}})
		return nil
	}
	for i := range 20 {
		edit, _ := json.Marshal(protocol.ApplyEditParams{Edit: protocol.FileEdit{Path: "main.py", OldVersion: "v0", NewVersion: "v1", Edits: []protocol.TextEdit{}}})
		id := json.RawMessage(`"edit` + string(rune('a'+i)) + `"`)
		msg, err := protocol.AppendRequest(nil, id, protocol.MethodTextApplyEdit, json.RawMessage(edit))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WriteRaw(msg); err != nil {
			t.Fatal(err)
		}
		var order []string
		for len(order) < 3 {
			m, err := c.Next(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			if m.IsNotification() {
				order = append(order, m.Method)
			} else {
				order = append(order, "reply "+string(m.ID))
			}
		}
		if order[0] != "reply "+string(id) {
			t.Fatalf("edit %d: messages arrived as %v; want the edit's reply first (PROTOCOL.md 8.6)", i, order)
		}
	}
}
