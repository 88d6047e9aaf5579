package contexts

import (
	"fmt"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/protocol"
)

// Frame is one item of a context's stack. Depth 0 is the bottom (always an
// ExplicitCall); the top frame is the one that runs and reports updates.
type Frame struct {
	ContextID protocol.ContextID
	Depth     int
	Item      protocol.StackItem
	// CreateIndex identifies this push: a frame popped and pushed again at
	// the same depth has a new one, which is how RecordUpdates tells a late
	// update for the old frame from one for the new.
	CreateIndex uint64
}

// Copy returns a deep copy.
func (f *Frame) Copy() *Frame {
	if f == nil {
		return nil
	}
	out := *f
	out.Item = f.Item.Clone()
	return &out
}

func framesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableFrames,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:   indexID,
				Unique: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					&memdb.StringFieldIndex{Field: "ContextID"},
					&memdb.IntFieldIndex{Field: "Depth"},
				}},
			},
			indexContext: contextIDIndex(),
		},
	}
}

// Stack returns the frames of context id, bottom first.
func (s *Store) Stack(ws memdb.WatchSet, id protocol.ContextID) ([]*Frame, error) {
	txn := s.db.Txn(false)
	if _, err := getContext(txn, nil, id); err != nil {
		return nil, err
	}
	frames, err := stackOf(txn, ws, id)
	if err != nil {
		return nil, err
	}
	for i, f := range frames {
		frames[i] = f.Copy()
	}
	return frames, nil
}

// TopFrame returns the top frame of context id; ErrEmptyStack if none.
func (s *Store) TopFrame(ws memdb.WatchSet, id protocol.ContextID) (*Frame, error) {
	frames, err := s.Stack(ws, id)
	if err != nil {
		return nil, err
	}
	if len(frames) == 0 {
		return nil, fmt.Errorf("%w: context %s", ErrEmptyStack, id)
	}
	return frames[len(frames)-1], nil
}

// stackOf returns the stored frames of context id, bottom first.
func stackOf(txn reader, ws memdb.WatchSet, id protocol.ContextID) ([]*Frame, error) {
	it, err := txn.Get(tableFrames, indexContext, string(id))
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	var frames []*Frame
	for raw := it.Next(); raw != nil; raw = it.Next() {
		frames = append(frames, raw.(*Frame))
	}
	slices.SortFunc(frames, func(a, b *Frame) int { return a.Depth - b.Depth })
	return frames, nil
}

// Push validates item and puts it on top of the stack of context id: an
// ExplicitCall only on an empty stack, a LocalCall only on a non-empty one
// (whether a LocalCall's expression calls a project function is the
// engine's check, it needs the kernel). A push is a reason to run again, so
// it resets KernelKills. It returns the new frame.
func (s *Store) Push(id protocol.ContextID, item protocol.StackItem) (*Frame, error) {
	var pushed *Frame
	err := s.write(func(txn *writeTxn, index uint64) error {
		var err error
		pushed, err = pushImpl(txn, index, id, item)
		return err
	})
	if err != nil {
		return nil, err
	}
	return pushed.Copy(), nil
}

func pushImpl(txn *writeTxn, index uint64, id protocol.ContextID, item protocol.StackItem) (*Frame, error) {
	stored, err := getContext(txn, nil, id)
	if err != nil {
		return nil, err
	}
	if err := item.Validate(); err != nil {
		return nil, fmt.Errorf("%w: context %s: %w", ErrInvalidStackItem, id, err)
	}
	frames, err := stackOf(txn, nil, id)
	if err != nil {
		return nil, err
	}
	switch {
	case item.Type == protocol.ExplicitCall && len(frames) > 0:
		return nil, fmt.Errorf("%w: context %s: ExplicitCall on a stack of %d items (only allowed on an empty stack)", ErrInvalidStackItem, id, len(frames))
	case item.Type == protocol.LocalCall && len(frames) == 0:
		return nil, fmt.Errorf("%w: context %s: LocalCall on an empty stack (push an ExplicitCall first)", ErrInvalidStackItem, id)
	}
	f := &Frame{ContextID: id, Depth: len(frames), Item: item.Clone(), CreateIndex: index}
	if err := txn.Insert(tableFrames, f); err != nil {
		return nil, err
	}
	if stored.KernelKills != 0 {
		c := stored.Copy()
		c.KernelKills = 0
		c.ModifyIndex = index
		if err := txn.Insert(tableContexts, c); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Pop removes the top frame of context id with the updates recorded for
// it, and returns it; ErrEmptyStack if the stack is empty. The caller
// resends the updates of the frame below (FrameUpdates) fromCache.
func (s *Store) Pop(id protocol.ContextID) (*Frame, error) {
	var popped *Frame
	err := s.write(func(txn *writeTxn, _ uint64) error {
		if _, err := getContext(txn, nil, id); err != nil {
			return err
		}
		frames, err := stackOf(txn, nil, id)
		if err != nil {
			return err
		}
		if len(frames) == 0 {
			return fmt.Errorf("%w: context %s", ErrEmptyStack, id)
		}
		popped = frames[len(frames)-1]
		if _, err := txn.DeleteAll(tableUpdates, indexUpdatePrefix, id, popped.Depth); err != nil {
			return err
		}
		return txn.Delete(tableFrames, popped)
	})
	if err != nil {
		return nil, err
	}
	return popped.Copy(), nil
}

// checkFrame returns nil if frame is still the frame at its depth of its
// context: same push (CreateIndex).
func checkFrame(txn reader, frame *Frame) error {
	if _, err := getContext(txn, nil, frame.ContextID); err != nil {
		return err
	}
	raw, err := txn.First(tableFrames, indexID, string(frame.ContextID), frame.Depth)
	if err != nil {
		return err
	}
	if raw == nil {
		return fmt.Errorf("%w: context %s has no frame at depth %d", ErrStaleFrame, frame.ContextID, frame.Depth)
	}
	if stored := raw.(*Frame); stored.CreateIndex != frame.CreateIndex {
		return fmt.Errorf("%w: context %s: the frame at depth %d was popped and replaced (%s)", ErrStaleFrame, frame.ContextID, frame.Depth, stored.Item)
	}
	return nil
}
