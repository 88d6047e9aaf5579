package contexts

import (
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

func TestRecordUpdatesKeepsTheLatestPerExpression(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	first := []protocol.ExpressionUpdate{
		{ExpressionID: "main:main/x", Payload: protocol.PendingPayload("")},
		{ExpressionID: "main:main/y", Payload: protocol.PendingPayload("")},
		value("main:main/x", "6"), // same expression twice in one batch: the last wins
	}
	if err := s.RecordUpdates(b.bottom, first); err != nil {
		t.Fatal(err)
	}
	mark := s.LatestIndex()
	if err := s.RecordUpdates(b.bottom, []protocol.ExpressionUpdate{value("main:main/y", "30"), value("main:main/z", "35")}); err != nil {
		t.Fatal(err)
	}

	all, err := s.FrameUpdates(nil, ctxA, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[protocol.ExpressionID]string{}
	for _, u := range all {
		got[u.ExpressionID] = string(u.Payload.Type) + ":" + u.Payload.Preview
	}
	want := map[protocol.ExpressionID]string{"main:main/x": "Value:6", "main:main/y": "Value:30", "main:main/z": "Value:35"}
	if len(all) != 3 || len(got) != 3 {
		t.Fatalf("FrameUpdates = %+v", all)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s = %s, want %s", id, got[id], w)
		}
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].ExpressionID >= all[i].ExpressionID {
			t.Errorf("not ordered by expression id: %v", all)
		}
	}

	since, _ := s.FrameUpdates(nil, ctxA, 0, mark)
	if len(since) != 2 || since[0].ExpressionID != "main:main/y" || since[1].ExpressionID != "main:main/z" {
		t.Errorf("updates since %d: %+v", mark, since)
	}
	if none, _ := s.FrameUpdates(nil, ctxA, 0, s.LatestIndex()); len(none) != 0 {
		t.Errorf("updates since the latest index: %+v", none)
	}

	one, err := s.ExpressionUpdate(nil, ctxA, 0, "main:main/z")
	if err != nil || one.Update.Payload.Preview != "35" || one.ModifyIndex != s.LatestIndex() || one.Depth != 0 {
		t.Errorf("ExpressionUpdate = %+v, %v", one, err)
	}
	_, err = s.ExpressionUpdate(nil, ctxA, 0, "main:main/nope")
	wantErr(t, err, ErrExpressionNotFound, "unknown expression")
	_, err = s.ExpressionUpdate(nil, ctxA, 1, "main:main/z")
	wantErr(t, err, ErrExpressionNotFound, "expression of another frame")
	_, err = s.FrameUpdates(nil, ctxB, 0, 0)
	wantErr(t, err, ErrContextNotFound, "updates of an unknown context")
}

func TestRecordUpdatesRefusesStaleFrames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	inner, err := s.Push(ctxA, protocol.NewLocalCall("main:main/y"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pop(ctxA); err != nil {
		t.Fatal(err)
	}
	// A late update for the popped frame: no frame at its depth.
	wantErr(t, s.RecordUpdates(inner, []protocol.ExpressionUpdate{value("main:foo/c", "30")}), ErrStaleFrame, "popped frame")

	// The same depth pushed again is another frame.
	if _, err := s.Push(ctxA, protocol.NewLocalCall("main:main/z")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.RecordUpdates(inner, []protocol.ExpressionUpdate{value("main:foo/c", "30")}), ErrStaleFrame, "replaced frame")
	if ups, _ := s.FrameUpdates(nil, ctxA, 1, 0); len(ups) != 0 {
		t.Errorf("a stale update landed on the new frame: %+v", ups)
	}

	// Bad input is refused before anything is written.
	before := s.LatestIndex()
	if err := s.RecordUpdates(b.bottom, []protocol.ExpressionUpdate{value("main:main/x", "6"), {Payload: protocol.PendingPayload("")}}); err == nil {
		t.Error("an update without an expression id was accepted")
	}
	if err := s.RecordUpdates(nil, nil); err == nil {
		t.Error("RecordUpdates(nil frame) succeeded")
	}
	if s.LatestIndex() != before {
		t.Error("a refused batch wrote something")
	}
	if ups, _ := s.FrameUpdates(nil, ctxA, 0, 0); len(ups) != 0 {
		t.Errorf("part of a refused batch was stored: %+v", ups)
	}
}

// TestUpdateKeysDoNotCollide checks the hand-made update key: a context id
// that is a prefix of another, and depths whose bytes sort, stay apart.
func TestUpdateKeysDoNotCollide(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	short, long := protocol.ContextID("ctx"), protocol.ContextID("ctx2")
	frames := map[protocol.ContextID][]*Frame{}
	for _, id := range []protocol.ContextID{short, long} {
		if _, _, err := s.CreateContext(id, ""); err != nil {
			t.Fatal(err)
		}
		f0, _ := s.Push(id, protocol.NewExplicitCall(mainMain))
		f1, _ := s.Push(id, protocol.NewLocalCall("main:main/y"))
		frames[id] = []*Frame{f0, f1}
		for _, f := range frames[id] {
			if err := s.RecordUpdates(f, []protocol.ExpressionUpdate{value("main:main/x", string(id)), value("main:main/x2", "")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range []protocol.ContextID{short, long} {
		for depth := range 2 {
			ups, err := s.FrameUpdates(nil, id, depth, 0)
			if err != nil || len(ups) != 2 || ups[0].Payload.Preview != string(id) {
				t.Errorf("context %s depth %d: %+v, %v", id, depth, ups, err)
			}
		}
	}
	if err := s.DestroyContext(short); err != nil {
		t.Fatal(err)
	}
	if ups, _ := s.FrameUpdates(nil, long, 1, 0); len(ups) != 2 {
		t.Errorf("destroying %q removed updates of %q: %+v", short, long, ups)
	}
	if _, err := (updateKeyIndexer{}).PrefixFromArgs(1.5); err == nil {
		t.Error("a float argument was accepted")
	}
	if _, err := (updateKeyIndexer{}).FromArgs(short); err == nil {
		t.Error("FromArgs with one argument was accepted")
	}
}
