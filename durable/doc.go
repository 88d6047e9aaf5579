// Package durable is ripple's event log of acknowledged state changes:
// what a client was told has happened is appended here before the reply
// goes out, so a crash or restart of the server loses none of it.
//
// # Model
//
// Every event sets or deletes one entry: (Kind, Key) -> Data, Data nil
// meaning deleted. The state is the fold of the log: the last event of each
// (Kind, Key) wins. A buffer's entry carries its whole state, and the
// engine's keystrokes write a second entry beside it, the change since
// that state as one replaced span (engine.KindBufferDelta): each event is
// still whole in itself, so the fold stays simple and a lost intermediate
// event cannot corrupt a later one. Callers that append events for the same (Kind, Key) from several
// goroutines order them themselves (see engine's durable hook: one mutex
// per key around snapshot-and-append), because the log keeps the order in
// which Append calls commit.
//
// # Store
//
// The log lives in one bbolt file, .ripple/state.db. bbolt (go.etcd.io/bbolt,
// etcd's storage engine) was chosen over Pebble and SQLite because it is one
// file, pure Go (no cgo, so the static single binary stays), fully
// transactional with copy-on-write pages and two checksummed meta pages: a
// crash at any point (kill -9 mid-commit included) leaves the last committed
// transaction, so there is no torn tail to truncate and no hand-written file
// format. Its cost is one fsync per write transaction, which group commit
// shares (below); Pebble's LSM write path would be cheaper per write but
// brings a directory of files, background compactions and a WAL of its own
// for a log that holds a few megabytes at most.
//
// Buckets: "meta" (format marker, so a foreign bbolt file is recognised),
// "events" (key: 8-byte big-endian sequence, value: a small JSON header,
// kind and key), "data" (same key, the event's Data as raw bytes, so a
// 30 KB buffer is not re-encoded) and "snapshot" (one nested bucket per
// Kind, Key -> Data). Compaction, in the transaction that takes the
// events past Options.CompactEvery, walks them newest first, writes each
// (Kind, Key)'s last value into the snapshot once and deletes them, so
// start-up reads a snapshot plus a short tail and the file stays bounded
// (bbolt reuses the freed pages): 100,000 edits of a 30 KB buffer leave a
// 7.5 MB file (BenchmarkLogSize100kEdits).
//
// # Group commit
//
// Append never holds a lock across the fsync of someone else's commit: the
// first caller to find no commit in progress becomes the leader and commits
// every pending event in one transaction (one fsync), then again for what
// arrived meanwhile, until nothing is pending; the others wait for their
// event's commit. An idle log thus commits at once (no batching delay) and
// a busy one shares fsyncs. No goroutine is owned by the log.
//
// # Damage
//
// Open moves a file it cannot use (not a bbolt file, both meta pages bad,
// pages that panic bbolt while the state is read, or a bbolt file without
// ripple's format marker) aside to state.db.corrupt-<UTC time> (an empty
// file, which bbolt would silently take as new, to state.db.empty-<UTC
// time>), logs one warning line naming both files, and starts a fresh
// log: a damaged
// .ripple/ never stops the server from starting, and nothing is deleted.
// A file locked by another process (another ripple serve on the same
// project) is not damage: Open fails with ErrLocked.
//
// # The value journal's file
//
// The value journal (.ripple/values.db, kernel/python/ripple_kernel/journal.py)
// is not this log: its rows are pickled Python values that only the
// kernels write and read, through SQLite, which lets the several kernel
// processes of a project share one file (WAL) without a round trip of
// every value through the Go server. This package only looks after the
// file around the kernels: CheckValues moves a file that is not an SQLite
// database aside at start (one warning line), MoveValuesAside keeps it for
// --fresh.
//
// # Writes that fail
//
// A commit that fails (a full disk, a read-only file system, an I/O
// error) leaves the last committed transaction, so the caller may refuse
// the change it was for (PROTOCOL.md 8.5: 7001 StateNotRecorded). Failing
// says whether the last write failed, and Probe tries a small write: the
// engine probes before each change while the log is failing, so a change
// is refused before it is made, and accepted again once writing works.
// A log that cannot be opened for writing at all at start (found on a
// read-only file system, or a state directory that cannot be created) is
// a Late: it refuses every append until a Probe finds the directory
// writable and opens it, and then takes appends only after Seed has
// written the server's whole state as its first state (Reset), so the
// file never holds the changes since start without what came before.
//
// # Locks
//
// mu guards pending and committing; db is bbolt's, safe for concurrent use.
// A Log is safe for concurrent use.
package durable
