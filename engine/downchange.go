package engine

import (
	"maps"
	"slices"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// A buffer the state log restores after a crash keeps its unsaved edits,
// even when its file was changed or deleted on disk while no server ran:
// the edits are the user's work. But the user must hear that the disk
// moved under them, as a live server says with text/fileModifiedOnDisk
// (PROTOCOL.md 4): the buffer's clients hear it when they connect again
// and whenever a client opens the file, for as long as the buffer has
// unsaved edits, and ripple serve names the files on stderr and in
// runtime/status (ChangedWhileDown).

// changedWhileDown notes a restored buffer whose file changed while down.
func (d *durableState) changedWhileDown(path string, change workspace.DiskChange) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.downChanges == nil {
		d.downChanges = map[string]workspace.DiskChange{}
	}
	d.downChanges[path] = change
}

// ChangedWhileDown returns the restored buffers whose file changed
// (workspace.DiskModified) or went away (workspace.DiskDeleted) on disk
// while no server ran, by path.
func (e *Engine) ChangedWhileDown() map[string]workspace.DiskChange {
	e.dur.mu.Lock()
	defer e.dur.mu.Unlock()
	return maps.Clone(e.dur.downChanges)
}

// tellChangedWhileDown sends text/fileModifiedOnDisk to clientID for each
// restored buffer that changed on disk while down and that it has open
// (path "": every such buffer), dropping those that no longer have
// unsaved edits.
func (e *Engine) tellChangedWhileDown(clientID, path string) {
	e.dur.mu.Lock()
	paths := slices.Sorted(maps.Keys(e.dur.downChanges))
	e.dur.mu.Unlock()
	if len(paths) == 0 {
		return
	}
	if path != "" {
		st, err := e.ws.BufferState(path)
		if err != nil {
			return
		}
		path = st.Path // as the state log names it
	}
	for _, p := range paths {
		if path != "" && p != path {
			continue
		}
		st, err := e.ws.BufferState(p)
		if err != nil || !st.Open || !st.Dirty {
			e.dur.mu.Lock()
			delete(e.dur.downChanges, p)
			e.dur.mu.Unlock()
			continue
		}
		if !slices.Contains(st.Clients, workspace.ClientID(clientID)) {
			continue
		}
		e.notifyClients([]string{clientID}, protocol.NotifyFileModifiedOnDisk, protocol.FileModifiedOnDiskParams{Path: protocol.Path(p)})
	}
}
