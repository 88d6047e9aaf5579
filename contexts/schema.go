package contexts

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"
)

// Table names. Each table's schema, record type and operations live in the
// file named after it.
const (
	tableContexts       = "contexts"       // contexts_table.go
	tableFrames         = "frames"         // frames_table.go
	tableVisualizations = "visualizations" // visualizations_table.go
	tableUpdates        = "updates"        // updates_table.go
	tableIndex          = "index"          // index_table.go
)

// Index names shared by several tables.
const (
	indexID      = "id"      // the primary key of every table
	indexContext = "context" // the records of one execution context
)

// dbSchema assembles the schema from one function per table.
func dbSchema() *memdb.DBSchema {
	tables := []*memdb.TableSchema{
		contextsTableSchema(),
		framesTableSchema(),
		visualizationsTableSchema(),
		updatesTableSchema(),
		indexTableSchema(),
	}
	db := &memdb.DBSchema{Tables: make(map[string]*memdb.TableSchema, len(tables))}
	for _, t := range tables {
		if _, dup := db.Tables[t.Name]; dup {
			panic(fmt.Sprintf("contexts: table %q defined twice", t.Name))
		}
		db.Tables[t.Name] = t
	}
	return db
}

// contextIDIndex indexes a record by its ContextID field.
func contextIDIndex() *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:    indexContext,
		Indexer: &memdb.StringFieldIndex{Field: "ContextID"},
	}
}
