package workspace

// ChangeKind says how a file changed on disk, spelled as in the client
// protocol's file/event.
type ChangeKind string

// The kinds of Change.
const (
	Added    ChangeKind = "Added"
	Removed  ChangeKind = "Removed"
	Modified ChangeKind = "Modified"
)

// Change is one file that changed on disk during a batch, compared with the
// state before the batch: a file deleted and created again within one batch
// is Modified, one created and deleted again is not reported at all.
// Directories are not reported themselves; their files are.
type Change struct {
	Path string // resolved project-relative path
	Kind ChangeKind
}

// Conflict is a file whose disk copy changed while its open text buffer had
// unsaved edits (or was removed under an open buffer). The buffer is kept as
// it is; the server tells Clients with text/fileModifiedOnDisk.
type Conflict struct {
	Path    string
	Clients []ClientID // sorted
}

// Batch is everything that changed on disk in one burst, as one unit of
// work: the server turns it into one edit (abort, EnsureCompiled(Modules),
// Execute per context) and its file/event, text/didChange and
// text/fileModifiedOnDisk notifications. Changes made by the workspace
// itself (Write, Save, Delete) are never part of a batch.
type Batch struct {
	// Changes lists every changed file, .py or not, sorted by path.
	Changes []Change
	// Modules lists the dotted names of the changed modules (added, removed
	// or modified), sorted; a module whose buffer kept unsaved edits is left
	// out, since its source (the buffer) did not change.
	Modules []string
	// Reloaded lists the buffers without unsaved edits that took the new
	// disk content.
	Reloaded []BufferUpdate
	// Conflicts lists the buffers with unsaved edits that were kept although
	// their disk copy changed.
	Conflicts []Conflict
}

func (b *Batch) empty() bool { return len(b.Changes) == 0 }
