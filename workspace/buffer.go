package workspace

import (
	"fmt"
	"slices"
)

// ClientID identifies a client of the workspace (a WebSocket session). Text
// buffers are shared by all clients; each client opens and closes its own
// interest in them.
type ClientID string

// buffer is one open text buffer. All fields are guarded by Workspace.mu.
// content is never modified in place: an edit installs a new string, so a
// snapshot taken under mu stays valid after mu is released.
type buffer struct {
	content string
	version Version
	// disk is the version of the file on disk as this workspace last read or
	// wrote it (absent if there is none). The buffer has unsaved edits (is
	// dirty) iff version != disk.
	disk    Version
	clients map[ClientID]struct{}
	// spellings are the client paths that name this buffer in
	// Workspace.bufferPaths.
	spellings []string
}

func (b *buffer) dirty() bool { return b.version != b.disk }

// clientList returns the buffer's clients other than except, sorted; nil if
// there are none.
func (b *buffer) clientList(except ClientID) []ClientID {
	n := len(b.clients)
	if _, ok := b.clients[except]; ok {
		n--
	}
	if n == 0 {
		return nil
	}
	out := make([]ClientID, 0, n)
	for c := range b.clients {
		if c != except {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// BufferUpdate says that an open buffer's content was replaced from disk
// (a Write through the workspace, or a change seen by the Watcher while the
// buffer had no unsaved edits). The server tells Clients with
// text/didChange, using Edit.
type BufferUpdate struct {
	Path       string     // resolved project-relative path
	Clients    []ClientID // every client that has the buffer open, sorted
	OldContent string
	OldVersion Version
	NewContent string
	NewVersion Version
}

// Edit returns the edit that turns OldContent into NewContent: a replacement
// of the whole old text.
func (u *BufferUpdate) Edit() TextEdit {
	return TextEdit{Range: Range{End: EndPosition(u.OldContent)}, Text: u.NewContent}
}

// EditResult is what an accepted ApplyEdit did.
type EditResult struct {
	Version Version    // the buffer's new version
	Others  []ClientID // the other clients with the file open (for text/didChange), sorted
	// OldContent and OldVersion are the buffer before the edit: what
	// UndoEdit puts back when the edit cannot be recorded (PROTOCOL.md 8.5).
	OldContent string
	OldVersion Version
}

// OpenBuffer opens the file at p as a text buffer for client and returns its
// content and version. If the buffer is already open (by any client), the
// client joins it and gets its current content, unsaved edits included.
// Opening a buffer twice from the same client is harmless; one CloseBuffer
// closes it.
func (ws *Workspace) OpenBuffer(client ClientID, p string) (string, Version, error) {
	rel, err := ws.resolve(p)
	if err != nil {
		return "", "", err
	}
	if content, v, ok := ws.joinBuffer(client, rel, p); ok {
		return content, v, nil
	}
	// diskMu makes the read and the install one step with respect to Write
	// and Save: the baseline recorded is the content of one whole write.
	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()
	if content, v, ok := ws.joinBuffer(client, rel, p); ok {
		return content, v, nil
	}
	data, err := ws.readFile(rel, p)
	if err != nil {
		return "", "", err
	}
	content := string(data)
	v := VersionOf(content)
	ws.mu.Lock()
	b := &buffer{content: content, version: v, disk: v, clients: map[ClientID]struct{}{client: {}}}
	ws.buffers[rel] = b
	ws.addSpelling(b, rel, p)
	ws.mu.Unlock()
	return content, v, nil
}

func (ws *Workspace) joinBuffer(client ClientID, rel, p string) (string, Version, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	b := ws.buffers[rel]
	if b == nil {
		return "", "", false
	}
	b.clients[client] = struct{}{}
	ws.addSpelling(b, rel, p)
	return b.content, b.version, true
}

// addSpelling remembers that the client path p names the buffer b at rel.
// The caller holds mu.
func (ws *Workspace) addSpelling(b *buffer, rel, p string) {
	if _, ok := ws.bufferPaths[p]; ok {
		return
	}
	ws.bufferPaths[p] = rel
	b.spellings = append(b.spellings, p)
}

// openedBy returns the buffer at rel if client has it open, else an
// ErrFileNotOpened error naming p. The caller holds mu.
func (ws *Workspace) openedBy(client ClientID, rel, p string) (*buffer, error) {
	b := ws.buffers[rel]
	if b == nil {
		return nil, newError(ErrFileNotOpened, p, "no client has it open")
	}
	if _, ok := b.clients[client]; !ok {
		return nil, newError(ErrFileNotOpened, p, fmt.Sprintf("client %s has not opened it", client))
	}
	return b, nil
}

// ApplyEdit applies edits, in order, to the buffer at p that client has open.
// oldVersion must be the buffer's current version and newVersion the version
// of the result; otherwise nothing changes and the error wraps
// ErrInvalidVersion. Out-of-range or malformed edits give
// ErrTextEditValidation. It never touches the disk.
//
// Concurrent calls are linearised by a compare-and-swap on the version: the
// edits are applied and hashed outside the lock on a snapshot of the content,
// and installed only if the buffer is still at oldVersion. Of two clients
// racing from the same version exactly one wins; the other gets
// ErrInvalidVersion and must rebase, so no update is lost.
func (ws *Workspace) ApplyEdit(client ClientID, p string, edits []TextEdit, oldVersion, newVersion Version) (EditResult, error) {
	rel, err := ws.bufferPath(p)
	if err != nil {
		return EditResult{}, err
	}
	ws.mu.Lock()
	b, err := ws.openedBy(client, rel, p)
	if err != nil {
		ws.mu.Unlock()
		return EditResult{}, err
	}
	if b.version != oldVersion {
		current := b.version
		ws.mu.Unlock()
		return EditResult{}, newError(ErrInvalidVersion, p, fmt.Sprintf("oldVersion %s is not the current version %s", oldVersion, current))
	}
	content := b.content
	ws.mu.Unlock()

	out, err := applyEdits(content, edits)
	if err != nil {
		return EditResult{}, &Error{Kind: ErrTextEditValidation, Path: p, Detail: err.Error()}
	}
	var got [versionLen]byte
	versionHex(&got, out)
	if string(got[:]) != string(newVersion) {
		return EditResult{}, newError(ErrInvalidVersion, p, fmt.Sprintf("newVersion %s is not the version of the edited content, %s", newVersion, string(got[:])))
	}

	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.buffers[rel] != b {
		return EditResult{}, newError(ErrFileNotOpened, p, "the buffer was closed")
	}
	if _, ok := b.clients[client]; !ok {
		return EditResult{}, newError(ErrFileNotOpened, p, fmt.Sprintf("client %s closed it", client))
	}
	if b.version != oldVersion {
		return EditResult{}, newError(ErrInvalidVersion, p, fmt.Sprintf("oldVersion %s is not the current version %s (a concurrent change won)", oldVersion, b.version))
	}
	old := b.content
	b.content = bytesString(out)
	b.version = newVersion
	return EditResult{Version: newVersion, Others: b.clientList(client), OldContent: old, OldVersion: oldVersion}, nil
}

// UndoEdit puts the buffer at p back to res's OldContent if it is still
// at res.Version (no other change landed on top): a refused edit leaves the
// buffer as it was. The update names every client of the buffer; ok is
// false when nothing was undone.
func (ws *Workspace) UndoEdit(p string, res EditResult) (u BufferUpdate, ok bool) {
	rel, err := ws.bufferPath(p)
	if err != nil {
		return BufferUpdate{}, false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	b := ws.buffers[rel]
	if b == nil || b.version != res.Version {
		return BufferUpdate{}, false
	}
	u = BufferUpdate{Path: rel, Clients: b.clientList(""), OldContent: b.content, OldVersion: b.version,
		NewContent: res.OldContent, NewVersion: res.OldVersion}
	b.content, b.version = res.OldContent, res.OldVersion
	return u, true
}

// bufferPath resolves p for a buffer operation: from memory if p is how a
// client opened an open buffer, else on disk.
func (ws *Workspace) bufferPath(p string) (string, error) {
	ws.mu.Lock()
	rel, ok := ws.bufferPaths[p]
	ws.mu.Unlock()
	if ok {
		return rel, nil
	}
	return ws.resolve(p)
}

// Save atomically writes the buffer at p to disk. version must be the
// buffer's current version (a client saves what it has seen), else
// ErrInvalidVersion and nothing is written.
func (ws *Workspace) Save(client ClientID, p string, version Version) error {
	rel, err := ws.bufferPath(p)
	if err != nil {
		return err
	}
	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()
	ws.mu.Lock()
	b, err := ws.openedBy(client, rel, p)
	if err != nil {
		ws.mu.Unlock()
		return err
	}
	if b.version != version {
		current := b.version
		ws.mu.Unlock()
		return newError(ErrInvalidVersion, p, fmt.Sprintf("version %s is not the current version %s", version, current))
	}
	content := b.content
	ws.mu.Unlock()

	// Edits may land during the write; they are not lost, the buffer is
	// simply dirty again afterwards, relative to the version written.
	renamed, err := ws.writeAtomic(rel, p, content, version)
	if renamed {
		ws.mu.Lock()
		if ws.buffers[rel] == b {
			b.disk = version
		}
		ws.mu.Unlock()
	}
	return err
}

// CloseBuffer closes client's interest in the buffer at p. The buffer is
// dropped when its last client closes it; reverted then tells whether it had
// unsaved edits, which are discarded, so the module's source is the disk
// file again (and should be recompiled).
func (ws *Workspace) CloseBuffer(client ClientID, p string) (reverted bool, err error) {
	rel, err := ws.bufferPath(p)
	if err != nil {
		return false, err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	b, err := ws.openedBy(client, rel, p)
	if err != nil {
		return false, err
	}
	return ws.leave(b, rel, client), nil
}

// CloseClient closes every buffer client has open, as when its session ends.
// It returns the resolved paths of the buffers dropped with unsaved edits
// (see CloseBuffer), sorted.
func (ws *Workspace) CloseClient(client ClientID) []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	var reverted []string
	for rel, b := range ws.buffers {
		if _, ok := b.clients[client]; ok && ws.leave(b, rel, client) {
			reverted = append(reverted, rel)
		}
	}
	slices.Sort(reverted)
	return reverted
}

// leave removes client from b and drops b if it was the last; it reports
// whether b was dropped with unsaved edits. The caller holds mu.
func (ws *Workspace) leave(b *buffer, rel string, client ClientID) bool {
	delete(b.clients, client)
	if len(b.clients) > 0 {
		return false
	}
	delete(ws.buffers, rel)
	for _, p := range b.spellings {
		delete(ws.bufferPaths, p)
	}
	return b.dirty()
}

// OpenBuffers returns the resolved paths of the open buffers, sorted.
func (ws *Workspace) OpenBuffers() []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	out := make([]string, 0, len(ws.buffers))
	for rel := range ws.buffers {
		out = append(out, rel)
	}
	slices.Sort(out)
	return out
}

// Dirty reports whether the buffer at p is open and has unsaved edits.
func (ws *Workspace) Dirty(p string) (bool, error) {
	rel, err := ws.resolve(p)
	if err != nil {
		return false, err
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	b := ws.buffers[rel]
	return b != nil && b.dirty(), nil
}
