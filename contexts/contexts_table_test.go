package contexts

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

func TestCreateContextIsIdempotentAndAddsOwners(t *testing.T) {
	t.Parallel()
	s := newStore(t)

	c, created, err := s.CreateContext(ctxA, "c1")
	if err != nil || !created {
		t.Fatalf("first create: %v, created=%v", err, created)
	}
	if c.Status != StatusIdle || c.KernelSlot != NoSlot || c.CreatedAt.IsZero() || c.CreateIndex == 0 {
		t.Errorf("new context %+v", c)
	}
	if want := []Owner{{"c1", true}}; !reflect.DeepEqual(c.Owners, want) {
		t.Errorf("owners %+v, want %+v", c.Owners, want)
	}

	again, created, err := s.CreateContext(ctxA, "c1")
	if err != nil || created || again.CreateIndex != c.CreateIndex {
		t.Fatalf("second create by the same client: %+v, created=%v, %v", again, created, err)
	}
	index := s.LatestIndex()
	if again.ModifyIndex != c.ModifyIndex || index != c.ModifyIndex {
		t.Errorf("re-creating changed the context (index %d -> %d)", c.ModifyIndex, index)
	}

	shared, created, err := s.CreateContext(ctxA, "b2")
	if err != nil || created {
		t.Fatalf("create by a second client: created=%v, %v", created, err)
	}
	if want := []Owner{{"b2", true}, {"c1", true}}; !reflect.DeepEqual(shared.Owners, want) {
		t.Errorf("owners %+v, want %+v (sorted)", shared.Owners, want)
	}

	orphan, created, err := s.CreateContext(ctxB, "")
	if err != nil || !created || len(orphan.Owners) != 0 {
		t.Errorf("ownerless create: %+v, %v, %v", orphan, created, err)
	}

	if _, _, err := s.CreateContext("", "c1"); err == nil {
		t.Error("create with an empty id succeeded")
	}
	all, _ := s.Contexts(nil)
	if len(all) != 2 || all[0].ID != ctxA || all[1].ID != ctxB {
		t.Errorf("Contexts() = %+v", all)
	}
}

func TestDestroyContextRemovesEverything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	if _, _, err := s.CreateContext(ctxB, "c1"); err != nil {
		t.Fatal(err)
	}
	bottomB, _ := s.Push(ctxB, protocol.NewExplicitCall(mainMain))
	for _, f := range []*Frame{b.bottom, bottomB} {
		if err := s.RecordUpdates(f, []protocol.ExpressionUpdate{value("main:main/x", "6")}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []Visualization{
		{ID: visA, ContextID: ctxA, ExpressionID: "main:main/x", Config: protocol.VisualizationConfiguration{Expression: "str"}},
		{ID: visB, ContextID: ctxB, ExpressionID: "main:main/x", Config: protocol.VisualizationConfiguration{Expression: "str"}},
	} {
		if _, err := s.AttachVisualization(v); err != nil {
			t.Fatal(err)
		}
	}

	if err := s.DestroyContext(ctxA); err != nil {
		t.Fatal(err)
	}
	_, err := s.Context(nil, ctxA)
	wantErr(t, err, ErrContextNotFound, "Context after destroy")
	_, err = s.Stack(nil, ctxA)
	wantErr(t, err, ErrContextNotFound, "Stack after destroy")
	_, err = s.Visualization(nil, visA)
	wantErr(t, err, ErrVisualizationNotFound, "Visualization after destroy")
	wantErr(t, s.DestroyContext(ctxA), ErrContextNotFound, "second destroy")
	wantErr(t, s.RecordUpdates(b.bottom, []protocol.ExpressionUpdate{value("main:main/x", "7")}), ErrContextNotFound, "late update")

	// No record of ctxA survives in any table; ctxB is untouched.
	txn := s.db.Txn(false)
	for _, table := range []string{tableFrames, tableVisualizations} {
		if raw, _ := txn.First(table, indexContext, string(ctxA)); raw != nil {
			t.Errorf("%s still holds %+v", table, raw)
		}
	}
	if raw, _ := txn.First(tableUpdates, indexUpdatePrefix, ctxA); raw != nil {
		t.Errorf("updates still holds %+v", raw)
	}
	if ups, err := s.FrameUpdates(nil, ctxB, 0, 0); err != nil || len(ups) != 1 {
		t.Errorf("ctxB updates %v, %v", ups, err)
	}
	if _, err := s.Visualization(nil, visB); err != nil {
		t.Errorf("ctxB visualization: %v", err)
	}
}

func TestRunStatusAndKernelKills(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	died := &protocol.ExecutionResult{Kind: protocol.ResultKernelDied, Message: "kernel 0 killed by signal 9"}
	failure := &protocol.ExecutionResult{Kind: protocol.ResultFailure, Message: "main:main does not exist"}

	steps := []struct {
		name      string
		do        func() error
		status    Status
		result    *protocol.ExecutionResult
		kills     int
		wantError bool
	}{
		{"queued", func() error { return s.SetStatus(ctxA, StatusQueued) }, StatusQueued, nil, 0, false},
		{"running", func() error { return s.SetStatus(ctxA, StatusRunning) }, StatusRunning, nil, 0, false},
		{"kernel died", func() error { _, err := s.FinishRun(ctxA, died); return err }, StatusFailed, died, 1, false},
		{"re-run keeps the last result", func() error { return s.SetStatus(ctxA, StatusRunning) }, StatusRunning, died, 1, false},
		{"died again", func() error { _, err := s.FinishRun(ctxA, died); return err }, StatusFailed, died, 2, false},
		{"an edit resets the kills", func() error { return s.ResetKernelKills(ctxA) }, StatusFailed, died, 0, false},
		{"died once more", func() error { _, err := s.FinishRun(ctxA, died); return err }, StatusFailed, died, 1, false},
		{"another failure resets the kills", func() error { _, err := s.FinishRun(ctxA, failure); return err }, StatusFailed, failure, 0, false},
		{"complete", func() error { _, err := s.FinishRun(ctxA, nil); return err }, StatusIdle, nil, 0, false},
		{"failed needs FinishRun", func() error { return s.SetStatus(ctxA, StatusFailed) }, StatusIdle, nil, 0, true},
		{"unknown status", func() error { return s.SetStatus(ctxA, "sleeping") }, StatusIdle, nil, 0, true},
		{"unknown context", func() error { return s.SetStatus(ctxB, StatusQueued) }, StatusIdle, nil, 0, true},
	}
	for _, st := range steps {
		err := st.do()
		if (err != nil) != st.wantError {
			t.Fatalf("%s: error %v", st.name, err)
		}
		c, _ := s.Context(nil, ctxA)
		if c.Status != st.status || c.KernelKills != st.kills || !reflect.DeepEqual(c.LastResult, st.result) {
			t.Fatalf("%s: status %s kills %d result %+v; want %s %d %+v", st.name, c.Status, c.KernelKills, c.LastResult, st.status, st.kills, st.result)
		}
	}

	// Push and recompute reset the counter too.
	_, _ = s.FinishRun(ctxA, died)
	if _, err := s.Push(ctxA, protocol.NewLocalCall("main:main/y")); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Context(nil, ctxA); c.KernelKills != 0 {
		t.Errorf("push left KernelKills at %d", c.KernelKills)
	}
	_, _ = s.FinishRun(ctxA, died)
	if err := s.Invalidate(ctxA, protocol.InvalidatedExpressions{}); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Context(nil, ctxA); c.KernelKills != 0 {
		t.Errorf("recompute left KernelKills at %d", c.KernelKills)
	}
}

func TestInvalidateAndTakePending(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	ids := func(xs ...protocol.ExpressionID) protocol.InvalidatedExpressions {
		return protocol.InvalidatedExpressions{IDs: xs}
	}
	steps := []struct {
		invalidate []protocol.InvalidatedExpressions
		want       protocol.InvalidatedExpressions
	}{
		{nil, protocol.InvalidatedExpressions{}},
		{[]protocol.InvalidatedExpressions{ids("main:main/z")}, ids("main:main/z")},
		{[]protocol.InvalidatedExpressions{ids("main:main/z"), ids("main:main/x", "main:main/z")}, ids("main:main/z", "main:main/x")},
		{[]protocol.InvalidatedExpressions{ids("main:main/z"), {All: true}, ids("main:main/x")}, protocol.InvalidatedExpressions{All: true}},
	}
	for i, st := range steps {
		for _, inv := range st.invalidate {
			if err := s.Invalidate(ctxA, inv); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.TakePending(ctxA)
		if err != nil {
			t.Fatal(err)
		}
		if got.All != st.want.All || !reflect.DeepEqual(got.IDs, st.want.IDs) {
			t.Errorf("step %d: took %+v, want %+v", i, got, st.want)
		}
		if again, _ := s.TakePending(ctxA); !again.Empty() {
			t.Errorf("step %d: pending not cleared: %+v", i, again)
		}
	}
	wantErr(t, s.Invalidate(ctxB, protocol.InvalidatedExpressions{All: true}), ErrContextNotFound, "Invalidate unknown")
}

func TestAssignSlotPicksTheLeastLoaded(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ids := []protocol.ContextID{ctxA, ctxB, ctxC, protocol.NewContextID(), protocol.NewContextID()}
	for _, id := range ids {
		if _, _, err := s.CreateContext(id, "c1"); err != nil {
			t.Fatal(err)
		}
	}
	// Slots 0,1,0,1,0 in turn: least loaded, lowest first on ties.
	for i, id := range ids {
		slot, err := s.AssignSlot(id, 2)
		if err != nil {
			t.Fatal(err)
		}
		if slot != i%2 {
			t.Errorf("context %d got slot %d, want %d", i, slot, i%2)
		}
	}
	// Assigned contexts keep their slot.
	if slot, _ := s.AssignSlot(ctxB, 2); slot != 1 {
		t.Errorf("reassigned ctxB to %d", slot)
	}
	on0, _ := s.ContextsOnSlot(nil, 0)
	on1, _ := s.ContextsOnSlot(nil, 1)
	if len(on0) != 3 || len(on1) != 2 {
		t.Errorf("slot loads %d/%d, want 3/2", len(on0), len(on1))
	}
	// A new third slot is the least loaded; a shrunk pool moves contexts
	// off the slots that went away.
	if slot, _ := s.AssignSlot(ctxA, 1); slot != 0 {
		t.Errorf("ctxA on a 1-slot pool: slot %d", slot)
	}
	if slot, _ := s.AssignSlot(ctxB, 1); slot != 0 {
		t.Errorf("ctxB moved to slot %d of a 1-slot pool", slot)
	}
	d := protocol.NewContextID()
	_, _, _ = s.CreateContext(d, "")
	if slot, _ := s.AssignSlot(d, 3); slot != 2 {
		t.Errorf("new context on a grown pool got slot %d, want the empty slot 2", slot)
	}
	if _, err := s.AssignSlot(ctxA, 0); err == nil {
		t.Error("AssignSlot with no slots succeeded")
	}
	_, err := s.AssignSlot(protocol.NewContextID(), 2)
	wantErr(t, err, ErrContextNotFound, "AssignSlot unknown")
}

func TestClientDisconnectReconnectAndExpiry(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	_, _, _ = s.CreateContext(ctxA, "c1")
	_, _, _ = s.CreateContext(ctxB, "c1")
	_, _, _ = s.CreateContext(ctxB, "c2") // shared
	_, _, _ = s.CreateContext(ctxC, "c2")
	if err := s.AddOwner(ctxC, "c1"); err != nil { // c1 uses c2's context
		t.Fatal(err)
	}

	mine, _ := s.ContextsOfClient(nil, "c1")
	if len(mine) != 3 {
		t.Fatalf("c1 owns %d contexts, want 3", len(mine))
	}

	orphaned, err := s.ClientDisconnected("c1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(orphaned, []protocol.ContextID{ctxA}) {
		t.Errorf("orphaned %v, want only ctxA (the others have c2)", orphaned)
	}
	a, _ := s.Context(nil, ctxA)
	if !a.DisconnectedSince.Equal(t0) || a.Owners[0].Connected {
		t.Errorf("ctxA after disconnect: %+v", a)
	}
	bCtx, _ := s.Context(nil, ctxB)
	if !bCtx.DisconnectedSince.IsZero() || !reflect.DeepEqual(bCtx.ConnectedOwners(), []string{"c2"}) {
		t.Errorf("ctxB after c1 left: %+v", bCtx)
	}

	_, _ = s.ClientDisconnected("c2", t0.Add(time.Minute))
	if ids, _ := s.Expired(nil, t0.Add(-time.Second)); len(ids) != 0 {
		t.Errorf("expired before the deadline: %v", ids)
	}
	if ids, _ := s.Expired(nil, t0); !reflect.DeepEqual(ids, []protocol.ContextID{ctxA}) {
		t.Errorf("expired at t0: %v", ids)
	}
	if ids, _ := s.Expired(nil, t0.Add(time.Hour)); len(ids) != 3 {
		t.Errorf("expired an hour later: %v", ids)
	}

	back, err := s.ClientConnected("c1")
	if err != nil || len(back) != 3 {
		t.Fatalf("reconnect: %d contexts, %v", len(back), err)
	}
	for _, c := range back {
		if !c.DisconnectedSince.IsZero() || !slices.Contains(c.ConnectedOwners(), "c1") {
			t.Errorf("after reconnect: %+v", c)
		}
	}
	if ids, _ := s.Expired(nil, t0.Add(time.Hour)); len(ids) != 0 {
		t.Errorf("expired after reconnect: %v", ids)
	}
	if owners, _ := s.Owners(nil, ctxB); !reflect.DeepEqual(owners, []Owner{{"c1", true}, {"c2", false}}) {
		t.Errorf("ctxB owners %+v", owners)
	}
	if _, err := s.ClientDisconnected("", t0); err == nil {
		t.Error("disconnect of an empty client id succeeded")
	}
	if none, err := s.ClientConnected("nobody"); err != nil || len(none) != 0 {
		t.Errorf("reconnect of an unknown client: %v, %v", none, err)
	}
}

func TestAssignSlotAmongSkipsClosedSlots(t *testing.T) {
	s := newStore(t)
	closed := map[int]bool{0: true}
	isClosed := func(slot int) bool { return closed[slot] }
	newContext := func() protocol.ContextID {
		id := protocol.NewContextID()
		if _, _, err := s.CreateContext(id, "c1"); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a, b := newContext(), newContext()
	if slot, err := s.AssignSlotAmong(a, 3, isClosed); err != nil || slot != 1 {
		t.Fatalf("first context: slot %d, %v; want 1 (0 is closed)", slot, err)
	}
	if slot, _ := s.AssignSlotAmong(b, 3, isClosed); slot != 2 {
		t.Fatalf("second context: slot %d, want 2", slot)
	}
	closed[1] = true
	if slot, _ := s.AssignSlotAmong(a, 3, isClosed); slot != 2 {
		t.Fatalf("a context on a slot closed since: moved to %d, want 2", slot)
	}
	closed[2] = true
	if _, err := s.AssignSlotAmong(newContext(), 3, isClosed); !errors.Is(err, ErrNoSlot) {
		t.Fatalf("every slot closed: %v, want ErrNoSlot", err)
	}
}
