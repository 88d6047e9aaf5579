package contexts

import (
	"context"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/protocol"
)

// watchStore has two contexts, each with a stack, an update and a
// visualization, so that "unrelated" writes touch existing records (go-memdb
// watches a radix subtree: a read that finds nothing watches a wider one,
// which may fire spuriously; callers must tolerate that, tests of
// "does not fire" must not depend on it).
func watchStore(t *testing.T) (*Store, map[protocol.ContextID]*Frame) {
	t.Helper()
	s := newStore(t)
	frames := map[protocol.ContextID]*Frame{}
	for i, id := range []protocol.ContextID{ctxA, ctxB} {
		if _, _, err := s.CreateContext(id, "c1"); err != nil {
			t.Fatal(err)
		}
		f, err := s.Push(id, protocol.NewExplicitCall(mainMain))
		if err != nil {
			t.Fatal(err)
		}
		frames[id] = f
		if err := s.RecordUpdates(f, []protocol.ExpressionUpdate{value("main:main/x", "1"), value("main:main/y", "2")}); err != nil {
			t.Fatal(err)
		}
		vis := []protocol.VisualizationID{visA, visB}[i]
		if _, err := s.AttachVisualization(Visualization{ID: vis, ContextID: id, ExpressionID: "main:main/x", Config: config("str")}); err != nil {
			t.Fatal(err)
		}
	}
	return s, frames
}

func TestWatchSetsFireOnTheRightWrites(t *testing.T) {
	t.Parallel()
	type read func(s *Store, ws memdb.WatchSet) error
	type write func(s *Store, frames map[protocol.ContextID]*Frame) error

	readContextA := func(s *Store, ws memdb.WatchSet) error { _, err := s.Context(ws, ctxA); return err }
	readStackA := func(s *Store, ws memdb.WatchSet) error { _, err := s.Stack(ws, ctxA); return err }
	readUpdatesA := func(s *Store, ws memdb.WatchSet) error { _, err := s.FrameUpdates(ws, ctxA, 0, 0); return err }
	readUpdateAx := func(s *Store, ws memdb.WatchSet) error {
		_, err := s.ExpressionUpdate(ws, ctxA, 0, "main:main/x")
		return err
	}
	readVisOfA := func(s *Store, ws memdb.WatchSet) error { _, err := s.VisualizationsOfContext(ws, ctxA); return err }
	readVisA := func(s *Store, ws memdb.WatchSet) error { _, err := s.Visualization(ws, visA); return err }
	readClient := func(s *Store, ws memdb.WatchSet) error { _, err := s.ContextsOfClient(ws, "c1"); return err }
	readUpdatesIndex := func(s *Store, ws memdb.WatchSet) error { _, err := s.TableIndex(ws, tableUpdates); return err }

	recordA := func(s *Store, f map[protocol.ContextID]*Frame) error {
		return s.RecordUpdates(f[ctxA], []protocol.ExpressionUpdate{value("main:main/x", "9")})
	}
	recordAy := func(s *Store, f map[protocol.ContextID]*Frame) error {
		return s.RecordUpdates(f[ctxA], []protocol.ExpressionUpdate{value("main:main/y", "9")})
	}
	recordB := func(s *Store, f map[protocol.ContextID]*Frame) error {
		return s.RecordUpdates(f[ctxB], []protocol.ExpressionUpdate{value("main:main/x", "9")})
	}
	statusA := func(s *Store, _ map[protocol.ContextID]*Frame) error { return s.SetStatus(ctxA, StatusRunning) }
	statusB := func(s *Store, _ map[protocol.ContextID]*Frame) error { return s.SetStatus(ctxB, StatusRunning) }
	pushA := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		_, err := s.Push(ctxA, protocol.NewLocalCall("main:main/y"))
		return err
	}
	pushB := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		_, err := s.Push(ctxB, protocol.NewLocalCall("main:main/y"))
		return err
	}
	modifyVisA := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		_, err := s.ModifyVisualization(visA, config("repr"))
		return err
	}
	modifyVisB := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		_, err := s.ModifyVisualization(visB, config("repr"))
		return err
	}
	destroyA := func(s *Store, _ map[protocol.ContextID]*Frame) error { return s.DestroyContext(ctxA) }
	createC := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		_, _, err := s.CreateContext(ctxC, "c1")
		return err
	}
	failedWrite := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		_, _ = s.Pop(ctxC) // unknown context: an error, nothing written
		return nil
	}
	noopWrite := func(s *Store, _ map[protocol.ContextID]*Frame) error {
		return s.AddOwner(ctxA, "c1") // already a connected owner
	}

	tests := []struct {
		name  string
		read  read
		write write
		fires bool
	}{
		{"context: its status", readContextA, statusA, true},
		{"context: another's status", readContextA, statusB, false},
		{"context: a failed write", readContextA, failedWrite, false},
		{"context: a write that changes nothing", readContextA, noopWrite, false},
		{"context: destroy", readContextA, destroyA, true},
		{"stack: push", readStackA, pushA, true},
		{"stack: another's push", readStackA, pushB, false},
		{"stack: an update", readStackA, recordA, false},
		{"frame updates: recorded", readUpdatesA, recordA, true},
		{"frame updates: another context's", readUpdatesA, recordB, false},
		{"frame updates: status", readUpdatesA, statusA, false},
		{"frame updates: destroy", readUpdatesA, destroyA, true},
		{"one update: itself", readUpdateAx, recordA, true},
		{"one update: a sibling", readUpdateAx, recordAy, false},
		{"visualizations of a context: modify", readVisOfA, modifyVisA, true},
		{"visualizations of a context: another's modify", readVisOfA, modifyVisB, false},
		{"one visualization: modify", readVisA, modifyVisA, true},
		{"one visualization: another's modify", readVisA, modifyVisB, false},
		{"contexts of a client: a new one", readClient, createC, true},
		{"updates table index: an update", readUpdatesIndex, recordB, true},
		{"updates table index: a status", readUpdatesIndex, statusA, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, frames := watchStore(t)
			ws := memdb.NewWatchSet()
			if err := tt.read(s, ws); err != nil {
				t.Fatal(err)
			}
			if len(ws) == 0 {
				t.Fatal("the read added no watch")
			}
			if fired(ws) {
				t.Fatal("fired before any write")
			}
			if err := tt.write(s, frames); err != nil {
				t.Fatal(err)
			}
			if got := fired(ws); got != tt.fires {
				t.Errorf("fired = %v, want %v", got, tt.fires)
			}
		})
	}
}

// TestWatchDrivesANotifier is the intended use: a goroutine sends what
// changed since it last looked, then blocks on the watch set until the
// next write, and stops with its context.
func TestWatchDrivesANotifier(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	sent := make(chan []protocol.ExpressionUpdate)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		var last uint64
		for {
			ws := memdb.NewWatchSet()
			mark := s.LatestIndex()
			ups, err := s.FrameUpdates(ws, ctxA, 0, last)
			if err != nil {
				done <- err
				return
			}
			if len(ups) > 0 {
				select {
				case sent <- ups:
				case <-ctx.Done():
					done <- nil
					return
				}
			}
			last = mark
			if err := ws.WatchCtx(ctx); err != nil {
				done <- nil
				return
			}
		}
	}()

	for i, preview := range []string{"6", "7", "8"} {
		if err := s.RecordUpdates(b.bottom, []protocol.ExpressionUpdate{value("main:main/x", preview)}); err != nil {
			t.Fatal(err)
		}
		select {
		case ups := <-sent:
			if len(ups) != 1 || ups[0].Payload.Preview != preview {
				t.Fatalf("round %d: notifier sent %+v, want x=%s", i, ups, preview)
			}
		case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
			t.Fatalf("round %d: the watch never fired", i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
