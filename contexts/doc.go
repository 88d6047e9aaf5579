// Package contexts holds the state of execution contexts in an in-memory
// go-memdb database: the contexts themselves (owners, kernel slot, status,
// last result, pending invalidations), their stacks, their visualizations
// and the latest update of each expression of each frame.
//
// Start with NewStore. The server and the engine change state only through
// the Store's methods (each one transaction through Store.write) and read it
// through methods that take a memdb.WatchSet, so a notifier can block until
// what it read changes:
//
//	ws := memdb.NewWatchSet()
//	updates, err := store.FrameUpdates(ws, id, depth, lastSent)
//	// send updates ...
//	err = ws.WatchCtx(ctx) // returns when the frame's updates change
//
// Records returned by reads are copies; the store's own records are never
// modified in place (copy-on-write), so a snapshot a reader holds stays
// consistent. Errors wrap the sentinels of errors.go with the id at fault;
// ProtocolError maps them to the client protocol's codes.
//
// Layout (after Nomad's state store): schema.go assembles one
// xxxTableSchema per table, and each table has its file with its record
// type, schema and operations: contexts_table.go, frames_table.go,
// visualizations_table.go, updates_table.go, index_table.go.
package contexts
