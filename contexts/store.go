package contexts

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	memdb "github.com/hashicorp/go-memdb"
)

// Store is the state of every execution context. It is safe for concurrent
// use: reads see a consistent snapshot and never block writes; writes are
// serialized (writeMu). It has no goroutines, so it needs no Start or Stop.
//
// Every read takes a memdb.WatchSet (nil if the caller will not wait) and
// adds the channels that close when what it read changes; wait with
// ws.WatchCtx(ctx). Records returned by reads are deep copies: changing them
// changes nothing in the store, and the store never changes them later.
type Store struct {
	db *memdb.MemDB

	// writeMu serializes writes from index allocation to index publication.
	// go-memdb's own writer lock is not enough: Commit releases it before
	// write can publish lastIndex, so a second writer could take the same
	// index and the published index could go backwards.
	writeMu sync.Mutex

	// lastIndex is the index of the last committed write. Written only by
	// write, under writeMu, after the commit (so a reader that sees index N
	// also sees the data of write N); read anywhere, hence atomic.
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
// impl the index this write will commit under, and on success stamps that
// index on every table impl wrote to and commits. If impl fails, or writes
// nothing, the transaction is aborted and the index is not used: a failed
// operation leaves the store exactly as it was and wakes no watcher.
//
// impl must follow copy-on-write: never modify a record read from txn, but
// Copy it, change the copy and Insert that; and it must not Insert a record
// that did not change (that would wake watchers for nothing).
func (s *Store) write(impl func(txn *writeTxn, index uint64) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	txn := &writeTxn{Txn: s.db.Txn(true)}
	defer txn.Abort()

	index := s.lastIndex.Load() + 1
	if err := impl(txn, index); err != nil {
		return err
	}
	if len(txn.touched) == 0 {
		return nil
	}
	for _, table := range txn.touched {
		if err := txn.Txn.Insert(tableIndex, &IndexEntry{Table: table, Value: index}); err != nil {
			return fmt.Errorf("contexts: bump index of %s: %w", table, err)
		}
	}
	txn.Commit()
	s.lastIndex.Store(index)
	return nil
}

// reader is what the read helpers need, so that reads inside a write see
// the write's own changes: both *memdb.Txn and *writeTxn have it.
type reader interface {
	First(table, index string, args ...any) (any, error)
	FirstWatch(table, index string, args ...any) (<-chan struct{}, any, error)
	Get(table, index string, args ...any) (memdb.ResultIterator, error)
}

// writeTxn is a write transaction that remembers which tables were written
// to, for write to stamp their indexes.
type writeTxn struct {
	*memdb.Txn
	touched []string
}

func (t *writeTxn) touch(table string) {
	if !slices.Contains(t.touched, table) {
		t.touched = append(t.touched, table)
	}
}

// Insert inserts or replaces obj in table.
func (t *writeTxn) Insert(table string, obj any) error {
	if err := t.Txn.Insert(table, obj); err != nil {
		return err
	}
	t.touch(table)
	return nil
}

// Delete deletes obj from table.
func (t *writeTxn) Delete(table string, obj any) error {
	if err := t.Txn.Delete(table, obj); err != nil {
		return err
	}
	t.touch(table)
	return nil
}

// DeleteAll deletes the records of table that index matches with args.
func (t *writeTxn) DeleteAll(table, index string, args ...any) (int, error) {
	n, err := t.Txn.DeleteAll(table, index, args...)
	if n > 0 {
		t.touch(table)
	}
	return n, err
}
