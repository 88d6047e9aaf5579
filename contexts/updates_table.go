package contexts

import (
	"encoding/binary"
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

// indexUpdatePrefix looks updates up by a prefix of their key: (context)
// or (context, depth).
const indexUpdatePrefix = indexID + "_prefix"

// The updates table has a single index: recording a run's updates is the
// hottest write, and every index costs a radix-tree insert per record. Its
// key, (context, depth, expression), serves the lookups by frame and by
// context as prefixes, and is built without reflection (updateKeyIndexer).
func updatesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableUpdates,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: updateKeyIndexer{},
			},
		},
	}
}

// updateKeyIndexer builds an update's key: the context id and a NUL, the
// depth as 8 big-endian bytes with the sign bit flipped (so keys sort by
// depth), the expression id and a NUL. The NULs make a context's prefix
// never match a longer context id.
type updateKeyIndexer struct{}

func (updateKeyIndexer) FromObject(raw any) (bool, []byte, error) {
	u, ok := raw.(*Update)
	if !ok {
		return false, nil, fmt.Errorf("update index: %T is not an *Update", raw)
	}
	if u.ContextID == "" || u.ExpressionID == "" {
		return false, nil, nil
	}
	key := make([]byte, 0, len(u.ContextID)+len(u.ExpressionID)+10)
	key = appendKeyString(key, string(u.ContextID))
	key = appendKeyInt(key, u.Depth)
	return true, appendKeyString(key, string(u.ExpressionID)), nil
}

func (ix updateKeyIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("update index: want context, depth and expression, got %d arguments", len(args))
	}
	return ix.PrefixFromArgs(args...)
}

// PrefixFromArgs takes (context) or (context, depth), or all three for an
// exact key.
func (updateKeyIndexer) PrefixFromArgs(args ...any) ([]byte, error) {
	if len(args) == 0 || len(args) > 3 {
		return nil, fmt.Errorf("update index: want 1 to 3 arguments, got %d", len(args))
	}
	var key []byte
	for i, arg := range args {
		switch v := arg.(type) {
		case protocol.ContextID:
			key = appendKeyString(key, string(v))
		case protocol.ExpressionID:
			key = appendKeyString(key, string(v))
		case string:
			key = appendKeyString(key, v)
		case int:
			key = appendKeyInt(key, v)
		default:
			return nil, fmt.Errorf("update index: argument %d: unexpected %T", i, arg)
		}
	}
	return key, nil
}

func appendKeyString(key []byte, s string) []byte {
	return append(append(key, s...), 0)
}

func appendKeyInt(key []byte, n int) []byte {
	return binary.BigEndian.AppendUint64(key, uint64(n)^(1<<63))
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
	return s.write(func(txn *writeTxn, index uint64) error {
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
// expression id. The watch fires when the frame's updates change. A
// notifier takes LatestIndex before the read and passes it as the next
// since: an update written between the two is then sent again rather than
// missed.
func (s *Store) FrameUpdates(ws memdb.WatchSet, id protocol.ContextID, depth int, since uint64) ([]protocol.ExpressionUpdate, error) {
	txn := s.db.Txn(false)
	if _, err := getContext(txn, nil, id); err != nil {
		return nil, err
	}
	it, err := txn.Get(tableUpdates, indexUpdatePrefix, id, depth)
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
	watch, raw, err := txn.FirstWatch(tableUpdates, indexID, id, depth, expr)
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
