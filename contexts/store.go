package contexts

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	memdb "github.com/hashicorp/go-memdb"
)

// Store is the state of every execution context. It is safe for concurrent
// use: reads see a consistent snapshot and never block writes; writes are
// serialized by go-memdb's writer lock. It has no goroutines, so it needs no
// Start or Stop.
//
// Every read takes a memdb.WatchSet (nil if the caller will not wait) and
// adds the channels that close when what it read changes; wait with
// ws.WatchCtx(ctx). Records returned by reads are deep copies: changing them
// changes nothing in the store, and the store never changes them later.
type Store struct {
	db *memdb.MemDB

	// lastIndex is the index of the last committed write. It is only
	// written inside write, under go-memdb's writer lock, so that lock
	// makes index allocation race-free; it is read anywhere, hence atomic.
	lastIndex atomic.Uint64

	// now is the clock for CreatedAt.
	now func() time.Time
}

// NewStore returns an empty store.
func NewStore() (*Store, error) {
	db, err := memdb.NewMemDB(dbSchema())
	if err != nil {
		return nil, fmt.Errorf("contexts: schema: %w", err)
	}
	return &Store{db: db, now: time.Now}, nil
}

// LatestIndex returns the index of the last committed write (0 for an empty
// store).
func (s *Store) LatestIndex() uint64 { return s.lastIndex.Load() }

// write is the one way state changes. It opens a write transaction, gives
// impl the index this write will commit under, and on success stamps the
// index of every table impl touched and commits. If impl fails, or changes
// nothing, the transaction is aborted and the index is not used: a failed
// operation leaves the store exactly as it was and wakes no watcher.
//
// impl must follow copy-on-write: never modify a record read from txn, but
// Copy it, change the copy and Insert that.
func (s *Store) write(impl func(txn *memdb.Txn, index uint64) error) error {
	txn := s.db.Txn(true)
	defer txn.Abort()
	txn.TrackChanges()

	index := s.lastIndex.Load() + 1
	if err := impl(txn, index); err != nil {
		return err
	}
	changes := txn.Changes()
	if len(changes) == 0 {
		return nil
	}
	var tables []string
	for _, c := range changes {
		if !slices.Contains(tables, c.Table) {
			tables = append(tables, c.Table)
		}
	}
	for _, table := range tables {
		if err := txn.Insert(tableIndex, &IndexEntry{Table: table, Value: index}); err != nil {
			return fmt.Errorf("contexts: bump index of %s: %w", table, err)
		}
	}
	txn.Commit()
	s.lastIndex.Store(index)
	return nil
}
