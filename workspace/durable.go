package workspace

import (
	"errors"
	"fmt"
)

// BufferState is an open buffer as ripple's durable state log keeps it
// (package durable): enough to open it again, unsaved edits
// included, after the server restarts.
type BufferState struct {
	Path    string     `json:"path"` // resolved project-relative path
	Content string     `json:"content"`
	Version Version    `json:"version"`
	Clients []ClientID `json:"clients"` // who had it open, sorted
	// Disk is the version of the file on disk the edits were made on
	// (empty: the file did not exist, or a state recorded before this
	// field): a restore that finds another file there says so.
	Disk Version `json:"disk,omitempty"`
	// Open and Dirty describe the buffer when the state was taken; they
	// are not kept (only open dirty buffers are).
	Open  bool `json:"-"`
	Dirty bool `json:"-"`
}

// BufferState returns the state of the buffer at p now: Open false (Path
// still resolved) if no client has it open.
func (ws *Workspace) BufferState(p string) (BufferState, error) {
	rel, err := ws.bufferPath(p)
	if err != nil {
		return BufferState{}, err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	b := ws.buffers[rel]
	if b == nil {
		return BufferState{Path: rel}, nil
	}
	return BufferState{Path: rel, Content: b.content, Version: b.version, Clients: b.clientList(""),
		Disk: b.disk, Open: true, Dirty: b.dirty()}, nil
}

// RestoreBuffer opens st as a buffer with unsaved edits held by st.Clients,
// as the server that recorded it had it. Its disk baseline is the file as
// it is now: restored is false, and nothing opened, when the file already
// holds st's content (the edits were saved after all). A buffer already
// open, or a st whose version is not its content's, is refused with an
// error naming the path; user files are never written.
func (ws *Workspace) RestoreBuffer(st BufferState) (restored bool, err error) {
	restored, _, err = ws.RestoreBufferChecked(st)
	return restored, err
}

// DiskChange is how a restored buffer's file changed on disk while no
// server ran: DiskUnchanged, DiskModified or DiskDeleted.
type DiskChange string

// The values of DiskChange.
const (
	DiskUnchanged DiskChange = ""
	DiskModified  DiskChange = "modified"
	DiskDeleted   DiskChange = "deleted"
)

// RestoreBufferChecked is RestoreBuffer that also says whether the file on
// disk is no longer the one the edits were made on (st.Disk): changed or
// deleted while no server ran. The buffer is restored all the same (the
// unsaved edits are the user's work); the caller tells its clients
// (text/fileModifiedOnDisk).
func (ws *Workspace) RestoreBufferChecked(st BufferState) (restored bool, change DiskChange, err error) {
	if got := VersionOf(st.Content); got != st.Version {
		return false, "", newError(ErrInvalidVersion, st.Path, fmt.Sprintf("recorded version %s is not the version of the recorded content, %s", st.Version, got))
	}
	rel, err := ws.resolve(st.Path)
	if err != nil {
		return false, "", err
	}
	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()
	var disk Version // absent: the file was deleted since
	data, err := ws.readFile(rel, st.Path)
	switch {
	case err == nil:
		disk = VersionOf(string(data))
	case !errors.Is(err, ErrFileNotFound):
		return false, "", err
	}
	if disk == st.Version {
		return false, "", nil
	}
	switch {
	case st.Disk == "" || disk == st.Disk:
	case disk == "":
		change = DiskDeleted
	default:
		change = DiskModified
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.buffers[rel] != nil {
		return false, "", newError(ErrFileExists, st.Path, "a buffer is open already")
	}
	b := &buffer{content: st.Content, version: st.Version, disk: disk, clients: map[ClientID]struct{}{}}
	for _, c := range st.Clients {
		b.clients[c] = struct{}{}
	}
	ws.buffers[rel] = b
	ws.addSpelling(b, rel, rel)
	return true, change, nil
}
