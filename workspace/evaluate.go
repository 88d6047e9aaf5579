package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// evaluate turns the pending paths into a batch: it compares each with the
// disk and the tree, drops the workspace's own writes, and reloads or flags
// the open buffers. It holds the workspace's diskMu throughout, so no
// workspace write is half-done or unrecorded while it looks.
func (w *Watcher) evaluate(pending map[string]fsnotify.Op, rescan bool) Batch {
	ws := w.ws
	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()

	c := newChangeSet()
	ctx := context.Background()
	// Disappearances first: a directory renamed away must drop its watches
	// before its new name is watched (inotify keeps one watch per inode).
	paths := make([]string, 0, len(pending))
	infos := make(map[string]fs.FileInfo, len(pending))
	for p := range pending {
		paths = append(paths, p)
		if fi, err := os.Lstat(ws.abs(p)); err == nil {
			infos[p] = fi
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		if infos[p] == nil {
			w.gone(c, p)
		}
	}
	for _, p := range paths {
		if fi := infos[p]; fi != nil {
			w.present(ctx, c, p, fi, pending[p])
		}
	}
	if rescan {
		// After the pending paths, so directories they replaced are
		// re-watched first; the rescan skips what they synchronised.
		w.syncDir(ctx, c, ".", syncMode{deep: true})
	}
	changes := w.dropSelfWrites(c.changes)
	return w.buffersAndModules(changes)
}

// gone handles a pending path that no longer exists.
func (w *Watcher) gone(c *changeSet, p string) {
	if _, isDir := w.tree.dirs[p]; isDir {
		w.removeDir(c, p)
		return
	}
	w.file(c, p, false, stamp{}, false)
}

// present handles a pending path that exists, with the operations seen on it.
func (w *Watcher) present(ctx context.Context, c *changeSet, p string, fi fs.FileInfo, op fsnotify.Op) {
	dir, name := splitDir(p)
	if p != "." && w.tree.dirs[dir] == nil {
		return // inside an ignored or untracked directory
	}
	replaced := op.Has(opCreate) || op.Has(opRemove) || op.Has(opRename)
	if fi.IsDir() {
		if p != "." && IgnoredDir(name) {
			w.file(c, p, false, stamp{}, false) // if it was a file, it is gone
			return
		}
		if _, known := w.tree.dirs[p]; !known || replaced {
			w.file(c, p, false, stamp{}, false) // if it was a file, it is gone
			w.syncDir(ctx, c, p, syncMode{rewatch: true, force: true, deep: true})
		}
		return // a chmod, or a change inside, reported by its own watch
	}
	if _, wasDir := w.tree.dirs[p]; wasDir {
		w.removeDir(c, p)
	}
	if op == opChmod {
		// Attribute changes (touch, chmod) do not change content. A file
		// we did not know about is still new.
		if node := w.tree.dirs[dir]; node != nil {
			if _, known := node.files[name]; known {
				return
			}
		}
	}
	w.file(c, p, true, stampOf(fi), true)
}

// dropSelfWrites removes the changes the workspace made itself: those whose
// disk state is what the workspace last wrote there. A record stays while
// the disk matches it (a late event of the same write is dropped too) and
// goes as soon as the disk differs. The caller holds diskMu.
func (w *Watcher) dropSelfWrites(changes map[string]ChangeKind) []Change {
	out := make([]Change, 0, len(changes))
	for p, kind := range changes {
		if want, ok := w.ws.written[p]; ok {
			if w.diskVersion(p) == want {
				continue
			}
			delete(w.ws.written, p)
		}
		out = append(out, Change{Path: p, Kind: kind})
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// diskVersion returns the version of the file p on disk, absent if it does
// not exist, and a value no write produces if it cannot be read.
func (w *Watcher) diskVersion(p string) Version {
	const unreadable Version = "unreadable"
	fi, err := w.ws.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return absent
	case err != nil || !fi.Mode().IsRegular(): // never open a FIFO: it would block
		return unreadable
	}
	data, err := w.ws.root.ReadFile(p)
	if err != nil {
		return unreadable
	}
	return VersionOf(string(data))
}

// buffersAndModules completes a batch: open buffers under changed files are
// reloaded (no unsaved edits) or kept and flagged (unsaved edits), and the
// changed modules are named. The caller holds diskMu, so no Save or Write
// runs meanwhile; edits may, and are judged under mu.
func (w *Watcher) buffersAndModules(changes []Change) Batch {
	ws := w.ws
	batch := Batch{Changes: changes}
	for _, ch := range changes {
		kept := false
		ws.mu.Lock()
		_, open := ws.buffers[ch.Path]
		ws.mu.Unlock()
		if open {
			kept = w.syncBuffer(&batch, ch)
		}
		if name, ok := ModuleName(ch.Path); ok && (!kept || ch.Kind == Removed) {
			batch.Modules = append(batch.Modules, name)
		}
	}
	slices.Sort(batch.Modules)
	batch.Modules = slices.Compact(batch.Modules)
	return batch
}

// syncBuffer brings the open buffer under a changed file up to date with the
// disk and reports whether the buffer was kept as it was (so its module's
// source did not change): a buffer without unsaved edits takes the new
// content (batch.Reloaded); one with unsaved edits is kept and flagged
// (batch.Conflicts), and so is any buffer whose file was removed or can no
// longer be read as UTF-8. Either way the buffer's disk baseline becomes
// what is on disk now.
func (w *Watcher) syncBuffer(batch *Batch, ch Change) (kept bool) {
	ws := w.ws
	var content string
	disk := absent
	readable := true
	if ch.Kind != Removed {
		data, err := ws.readFile(ch.Path, ch.Path)
		if err != nil {
			readable = false
		} else {
			content = string(data)
			disk = VersionOf(content)
		}
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	b := ws.buffers[ch.Path]
	switch {
	case b == nil: // closed meanwhile
		return false
	case !readable:
		batch.Conflicts = append(batch.Conflicts, Conflict{Path: ch.Path, Clients: b.clientList("")})
		return true
	case b.disk == disk:
		return false // the disk holds what the buffer was based on: nothing to do
	case !b.dirty() && disk != absent:
		batch.Reloaded = append(batch.Reloaded, BufferUpdate{
			Path: ch.Path, Clients: b.clientList(""),
			OldContent: b.content, OldVersion: b.version,
			NewContent: content, NewVersion: disk,
		})
		b.content, b.version, b.disk = content, disk, disk
		return false
	default:
		b.disk = disk
		if b.dirty() { // unless the disk now holds exactly the buffer's content
			batch.Conflicts = append(batch.Conflicts, Conflict{Path: ch.Path, Clients: b.clientList("")})
		}
		return true
	}
}
