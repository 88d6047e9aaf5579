package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// EntryKind tells a file from a directory in a listing.
type EntryKind string

// The kinds of Entry, spelled as in the client protocol.
const (
	KindFile      EntryKind = "file"
	KindDirectory EntryKind = "directory"
)

// Entry is one item of a directory listing.
type Entry struct {
	Path string // project-relative, POSIX-style, as the client would name it
	Kind EntryKind
}

// Read returns the content of the file at p, which must be valid UTF-8.
func (ws *Workspace) Read(p string) (string, error) {
	rel, err := ws.resolve(p)
	if err != nil {
		return "", err
	}
	data, err := ws.readFile(rel, p)
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// readFile reads the resolved file rel, refusing directories and content
// that is not UTF-8.
func (ws *Workspace) readFile(rel, p string) ([]byte, error) {
	fi, err := ws.root.Stat(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	if fi.IsDir() {
		return nil, newError(ErrNotFile, p, "is a directory")
	}
	if !fi.Mode().IsRegular() { // a FIFO would block the reader forever
		return nil, newError(ErrNotFile, p, fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type()))
	}
	data, err := ws.root.ReadFile(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	if err := checkUTF8(p, data); err != nil {
		return nil, err
	}
	return data, nil
}

// checkUTF8 names the first byte that is not valid UTF-8.
func checkUTF8(p string, data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return newError(ErrCannotDecode, p, fmt.Sprintf("invalid byte 0x%02x at line %d, column %d (byte offset %d)", data[i], line, col, i))
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return newError(ErrCannotDecode, p, "")
}

// Write atomically replaces (or creates) the file at p with contents,
// creating missing parent directories. It is refused with ErrWriteDenied
// while p is open in a text buffer with unsaved edits. If p is open in a
// buffer without unsaved edits, the buffer takes the new contents and the
// returned update (nil otherwise) says so, for the server to tell the
// buffer's clients.
func (ws *Workspace) Write(p, contents string) (*BufferUpdate, error) {
	rel, err := ws.resolve(p)
	if err != nil {
		return nil, err
	}
	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()

	// With a buffer open, mu stays held across the write: an edit landing
	// between the dirty check and the buffer update would otherwise be
	// overwritten. Without one, OpenBuffer cannot start reading the file
	// mid-write because it needs diskMu, held here.
	ws.mu.Lock()
	b := ws.buffers[rel]
	if b == nil {
		ws.mu.Unlock()
	} else {
		defer ws.mu.Unlock()
		if b.dirty() {
			return nil, newError(ErrWriteDenied, p, "the file is open in a text buffer with unsaved edits; save or close it first")
		}
	}
	v := VersionOf(contents)
	renamed, err := ws.writeAtomic(rel, p, contents, v)
	if !renamed {
		return nil, err
	}
	// From here on the new contents are on disk, even if err says the
	// directory fsync failed.
	if b == nil || b.version == v {
		if b != nil {
			b.disk = v
		}
		return nil, err
	}
	u := &BufferUpdate{
		Path:       rel,
		Clients:    b.clientList(""),
		OldContent: b.content, OldVersion: b.version,
		NewContent: contents, NewVersion: v,
	}
	b.content, b.version, b.disk = contents, v, v
	return u, err
}

// List returns the entries of the directory at p ("" or "." for the root),
// sorted by path. Symlinks are listed with the kind of their target; those
// leading outside the root or nowhere are left out, as no operation on them
// could succeed.
func (ws *Workspace) List(p string) ([]Entry, error) {
	rel, err := ws.resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := ws.root.Stat(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	if !fi.IsDir() {
		return nil, newError(ErrNotDirectory, p, "is a file")
	}
	d, err := ws.root.Open(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	dirents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, fsError(p, err)
	}
	prefix := path.Clean(p)
	entries := make([]Entry, 0, len(dirents))
	for _, de := range dirents {
		name := path.Join(prefix, de.Name())
		kind := KindFile
		switch t := de.Type(); {
		case t.IsDir():
			kind = KindDirectory
		case t&fs.ModeSymlink != 0:
			target, err := ws.resolve(name)
			if err != nil {
				continue
			}
			tfi, err := ws.root.Stat(target)
			if err != nil {
				continue
			}
			if tfi.IsDir() {
				kind = KindDirectory
			}
		case !t.IsRegular():
			continue // sockets, pipes, devices: not project files
		}
		entries = append(entries, Entry{Path: name, Kind: kind})
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return entries, nil
}

// Delete removes the file or directory (with everything in it) at p. A
// symlink is removed itself, not its target. It is refused with
// ErrWriteDenied if it would remove a file open in a text buffer with
// unsaved edits, and for the project root. Buffers open on removed files
// stay open with their content, which now differs from the (absent) disk
// copy.
func (ws *Workspace) Delete(p string) error {
	rel, err := ws.resolveParent(p)
	if err != nil {
		return err
	}
	if rel == "." {
		return newError(ErrWriteDenied, p, "cannot delete the project root")
	}

	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()
	fi, err := ws.root.Lstat(rel)
	if err != nil {
		return fsError(p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// The link itself is deleted, but only a link that stays inside
		// the root: one that leads outside is refused like every other
		// outward path (resolve judges its target, dangling or not).
		if _, err := ws.resolve(p); errors.Is(err, ErrPathOutsideRoot) {
			return newError(ErrPathOutsideRoot, p, "is a symlink to a place outside the project root; it is not deleted")
		}
	}
	var files []string
	if fi.IsDir() {
		if files, err = ws.filesUnder(rel); err != nil {
			return fsError(p, err)
		}
	} else {
		files = []string{rel}
	}

	ws.mu.Lock()
	for _, f := range files {
		if b := ws.buffers[f]; b != nil && b.dirty() {
			ws.mu.Unlock()
			return newError(ErrWriteDenied, p, fmt.Sprintf("%s is open in a text buffer with unsaved edits; save or close it first", f))
		}
	}
	ws.mu.Unlock()

	if fi.IsDir() {
		err = ws.root.RemoveAll(rel)
	} else {
		err = ws.root.Remove(rel)
	}
	// Record before looking at err: a partial RemoveAll still removed some.
	for _, f := range files {
		ws.written[f] = absent
	}
	ws.mu.Lock()
	for _, f := range files {
		if b := ws.buffers[f]; b != nil {
			if _, statErr := ws.root.Lstat(f); errors.Is(statErr, fs.ErrNotExist) {
				b.disk = absent
			}
		}
	}
	ws.mu.Unlock()
	if err != nil {
		return fsError(p, err)
	}
	return nil
}

// filesUnder lists every non-directory entry below the resolved directory
// rel, as resolved paths.
func (ws *Workspace) filesUnder(rel string) ([]string, error) {
	var files []string
	err := fs.WalkDir(ws.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files, err
}

// Exists reports whether a file or directory exists at p (false for paths
// outside the root).
func (ws *Workspace) Exists(p string) bool {
	rel, err := ws.resolveParent(p)
	if err != nil {
		return false
	}
	_, err = ws.root.Lstat(rel)
	return err == nil
}

// FilesAt lists the files a Delete of p would remove: p itself, or every
// file below it for a directory, as resolved project-relative paths.
func (ws *Workspace) FilesAt(p string) ([]string, error) {
	rel, err := ws.resolveParent(p)
	if err != nil {
		return nil, err
	}
	fi, err := ws.root.Lstat(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	if !fi.IsDir() {
		return []string{rel}, nil
	}
	files, err := ws.filesUnder(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	return files, nil
}
