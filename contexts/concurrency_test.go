package contexts

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

// TestConcurrentUse runs writers and readers of overlapping contexts at once
// (meaningful under -race) and then checks the store's invariants. Each
// worker also checks what it can know alone: its own reads are consistent
// snapshots.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ids := []protocol.ContextID{ctxA, ctxB, ctxC}
	for _, id := range ids {
		if _, _, err := s.CreateContext(id, "c0"); err != nil {
			t.Fatal(err)
		}
	}

	const workers, steps = 8, 300
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			client := fmt.Sprintf("c%d", w)
			var lastSeen uint64
			for i := range steps {
				if err := randomStep(s, rng, ids, client, i); err != nil {
					errs <- fmt.Errorf("worker %d step %d: %w", w, i, err)
					return
				}
				// Indexes are published in commit order: never backwards.
				now := s.LatestIndex()
				if now < lastSeen {
					errs <- fmt.Errorf("worker %d step %d: LatestIndex went from %d back to %d", w, i, lastSeen, now)
					return
				}
				lastSeen = now
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkInvariants(t, s)
}

// randomStep does one random operation; errors the operation may
// legitimately return under concurrency are not failures.
func randomStep(s *Store, rng *rand.Rand, ids []protocol.ContextID, client string, i int) error {
	id := ids[rng.IntN(len(ids))]
	expected := func(err error, allowed ...error) error {
		for _, a := range allowed {
			if errors.Is(err, a) {
				return nil
			}
		}
		return err
	}
	switch rng.IntN(10) {
	case 0:
		_, _, err := s.CreateContext(id, client)
		return err
	case 1:
		_, err := s.Push(id, protocol.NewExplicitCall(mainMain))
		return expected(err, ErrInvalidStackItem, ErrContextNotFound)
	case 2:
		_, err := s.Push(id, protocol.NewLocalCall("main:main/y"))
		return expected(err, ErrInvalidStackItem, ErrContextNotFound)
	case 3:
		_, err := s.Pop(id)
		return expected(err, ErrEmptyStack, ErrContextNotFound)
	case 4, 5:
		top, err := s.TopFrame(nil, id)
		if err != nil {
			return expected(err, ErrEmptyStack, ErrContextNotFound)
		}
		batch := []protocol.ExpressionUpdate{
			value("main:main/x", fmt.Sprint(i)),
			value(protocol.ExpressionID(fmt.Sprintf("main:main/e%d", rng.IntN(5))), client),
		}
		return expected(s.RecordUpdates(top, batch), ErrStaleFrame, ErrContextNotFound)
	case 6:
		ups, err := s.FrameUpdates(nil, id, 0, 0)
		if err != nil {
			return expected(err, ErrContextNotFound)
		}
		seen := map[protocol.ExpressionID]bool{}
		for _, u := range ups {
			if seen[u.ExpressionID] {
				return fmt.Errorf("expression %s twice in one frame", u.ExpressionID)
			}
			seen[u.ExpressionID] = true
		}
		return nil
	case 7:
		vis := protocol.VisualizationID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", rng.IntN(4)))
		if rng.IntN(2) == 0 {
			_, err := s.AttachVisualization(Visualization{ID: vis, ContextID: id, ExpressionID: "main:main/x", Config: config("str")})
			return expected(err, ErrContextNotFound)
		}
		return expected(s.DetachVisualization(id, vis, "main:main/x"), ErrVisualizationNotFound, ErrContextNotFound)
	case 8:
		if _, err := s.AssignSlot(id, 2); err != nil {
			return expected(err, ErrContextNotFound)
		}
		_, err := s.FinishRun(id, nil)
		return expected(err, ErrContextNotFound)
	default:
		if rng.IntN(20) == 0 {
			return expected(s.DestroyContext(id), ErrContextNotFound)
		}
		stack, err := s.Stack(nil, id)
		if err != nil {
			return expected(err, ErrContextNotFound)
		}
		for d, f := range stack {
			if f.Depth != d {
				return fmt.Errorf("snapshot stack has depth %d at position %d", f.Depth, d)
			}
		}
		return nil
	}
}

// checkInvariants walks every table: frames are contiguous from 0 and
// belong to live contexts; updates belong to existing frames; visualizations
// to live contexts; indexes never exceed the latest.
func checkInvariants(t *testing.T, s *Store) {
	t.Helper()
	txn := s.db.Txn(false)
	contexts := map[protocol.ContextID]*ExecutionContext{}
	it, _ := txn.Get(tableContexts, indexID)
	for raw := it.Next(); raw != nil; raw = it.Next() {
		c := raw.(*ExecutionContext)
		contexts[c.ID] = c
		if c.ModifyIndex > s.LatestIndex() || c.CreateIndex > c.ModifyIndex {
			t.Errorf("context %s indexes %d/%d, latest %d", c.ID, c.CreateIndex, c.ModifyIndex, s.LatestIndex())
		}
	}
	depths := map[protocol.ContextID][]int{}
	it, _ = txn.Get(tableFrames, indexID)
	for raw := it.Next(); raw != nil; raw = it.Next() {
		f := raw.(*Frame)
		if contexts[f.ContextID] == nil {
			t.Errorf("frame of destroyed context %s", f.ContextID)
		}
		depths[f.ContextID] = append(depths[f.ContextID], f.Depth)
	}
	for id, ds := range depths {
		for i, d := range ds { // the id index orders by depth
			if d != i {
				t.Errorf("context %s: frame depths %v are not 0..n-1", id, ds)
				break
			}
		}
	}
	it, _ = txn.Get(tableUpdates, indexID)
	for raw := it.Next(); raw != nil; raw = it.Next() {
		u := raw.(*Update)
		if u.Depth >= len(depths[u.ContextID]) {
			t.Errorf("update %s at depth %d of context %s, whose stack has %d frames", u.ExpressionID, u.Depth, u.ContextID, len(depths[u.ContextID]))
		}
	}
	it, _ = txn.Get(tableVisualizations, indexID)
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if v := raw.(*Visualization); contexts[v.ContextID] == nil {
			t.Errorf("visualization %s of destroyed context %s", v.ID, v.ContextID)
		}
	}
}
