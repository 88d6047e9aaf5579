package contexts

import (
	memdb "github.com/hashicorp/go-memdb"
)

// IndexEntry records the index of the last write to a table. Indexes are
// global and monotonic: every committed write transaction takes the next
// one, and each record it touches carries it as ModifyIndex. A reader that
// remembers the index it last saw can ask what changed since.
type IndexEntry struct {
	Table string
	Value uint64
}

func indexTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableIndex,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "Table"},
			},
		},
	}
}

// TableIndex returns the index of the last write to table (0 if none), and
// adds a watch on it to ws.
func (s *Store) TableIndex(ws memdb.WatchSet, table string) (uint64, error) {
	txn := s.db.Txn(false)
	watch, raw, err := txn.FirstWatch(tableIndex, indexID, table)
	if err != nil {
		return 0, err
	}
	ws.Add(watch)
	if raw == nil {
		return 0, nil
	}
	return raw.(*IndexEntry).Value, nil
}
