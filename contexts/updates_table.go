package contexts

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/protocol"
)

// Update is the latest update of one expression in one frame of a context.
type Update struct {
	ContextID    protocol.ContextID
	Depth        int
	ExpressionID protocol.ExpressionID // = Update.ExpressionID, for the index
	Update       protocol.ExpressionUpdate
	// ModifyIndex is the index of the write that recorded it: a notifier
	// that remembers the last index it sent asks for what is newer.
	ModifyIndex uint64
}

const indexFrame = "frame" // updates by (context, depth)

func updatesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableUpdates,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:   indexID,
				Unique: true,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					&memdb.StringFieldIndex{Field: "ContextID"},
					&memdb.IntFieldIndex{Field: "Depth"},
					&memdb.StringFieldIndex{Field: "ExpressionID"},
				}},
			},
			indexContext: contextIDIndex(),
			indexFrame: {
				Name: indexFrame,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					&memdb.StringFieldIndex{Field: "ContextID"},
					&memdb.IntFieldIndex{Field: "Depth"},
				}},
			},
		},
	}
}

// RecordUpdates stores updates as the latest state of their expressions in
// frame, all in one transaction. frame is the frame as the caller read it
// when its run started (Stack, TopFrame or Push): if it has been popped or
// replaced since, nothing is stored and the error wraps ErrStaleFrame, so a
// late update from a cancelled run can never land on a newer frame. An
// expression named twice keeps the last of its updates.
func (s *Store) RecordUpdates(frame *Frame, updates []protocol.ExpressionUpdate) error {
	if frame == nil {
		return fmt.Errorf("%w: no frame", ErrInvalidID)
	}
	for i := range updates {
		if updates[i].ExpressionID == "" {
			return fmt.Errorf("%w: update %d of context %s has no expression id", ErrInvalidID, i, frame.ContextID)
		}
	}
	return s.write(func(txn *memdb.Txn, index uint64) error {
		if err := checkFrame(txn, frame); err != nil {
			return err
		}
		for i := range updates {
			u := &Update{
				ContextID:    frame.ContextID,
				Depth:        frame.Depth,
				ExpressionID: updates[i].ExpressionID,
				Update:       updates[i].Clone(),
				ModifyIndex:  index,
			}
			if err := txn.Insert(tableUpdates, u); err != nil {
				return err
			}
		}
		return nil
	})
}

// FrameUpdates returns the latest update of every expression of frame
// depth of context id recorded after index since (0: all), ordered by
// expression id. The watch fires when the frame's updates change.
func (s *Store) FrameUpdates(ws memdb.WatchSet, id protocol.ContextID, depth int, since uint64) ([]protocol.ExpressionUpdate, error) {
	txn := s.db.Txn(false)
	if _, err := getContext(txn, nil, id); err != nil {
		return nil, err
	}
	it, err := txn.Get(tableUpdates, indexFrame, string(id), depth)
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	var out []protocol.ExpressionUpdate
	for raw := it.Next(); raw != nil; raw = it.Next() {
		if u := raw.(*Update); u.ModifyIndex > since {
			out = append(out, u.Update.Clone())
		}
	}
	return out, nil
}

// ExpressionUpdate returns the latest update of expression expr in frame
// depth of context id; ErrExpressionNotFound if none was recorded.
func (s *Store) ExpressionUpdate(ws memdb.WatchSet, id protocol.ContextID, depth int, expr protocol.ExpressionID) (*Update, error) {
	txn := s.db.Txn(false)
	if _, err := getContext(txn, nil, id); err != nil {
		return nil, err
	}
	watch, raw, err := txn.FirstWatch(tableUpdates, indexID, string(id), depth, string(expr))
	if err != nil {
		return nil, err
	}
	ws.Add(watch)
	if raw == nil {
		return nil, fmt.Errorf("%w: %s in frame %d of context %s", ErrExpressionNotFound, expr, depth, id)
	}
	u := *raw.(*Update)
	u.Update = u.Update.Clone()
	return &u, nil
}
