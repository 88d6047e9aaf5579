package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// stamp is what polling and overflow rescans compare to notice a change
// without reading the file.
type stamp struct {
	size  int64
	mtime int64 // ns
	ino   uint64
}

func stampOf(fi fs.FileInfo) stamp {
	s := stamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// dirNode is the watcher's knowledge of one directory of the tree.
type dirNode struct {
	files   map[string]stamp    // name -> stamp of each non-directory entry
	subdirs map[string]struct{} // names of the tracked (not ignored) subdirectories
	polled  bool                // no inotify watch (the limit was hit): polled instead
}

// tree is the watcher's model of the project tree as of the last batch: the
// tracked directories and the files in them. It is what tells Added from
// Modified and what a removed directory contained. It is owned by the
// Watcher's batch goroutine (and by Start before that goroutine exists); no
// lock guards it.
type tree struct {
	dirs map[string]*dirNode // by resolved relative path, "." for the root
}

// changeSet collects the changes of one batch evaluation, keyed by path. The
// first verdict on a path stands: a file visited twice (by its own event and
// by a rescan of its directory) is reported once.
type changeSet struct {
	changes map[string]ChangeKind
	synced  map[string]bool // directories already synchronised in this evaluation
}

func newChangeSet() *changeSet {
	return &changeSet{changes: make(map[string]ChangeKind), synced: make(map[string]bool)}
}

// syncMode says how thoroughly syncDir looks at a directory.
type syncMode struct {
	rewatch bool // drop and re-add the inotify watch: the directory may be a new inode
	force   bool // report every existing known file as Modified, not only those whose stamp changed
	deep    bool // also synchronise known subdirectories, not only new ones
}

// file records the state of the file p now: exists (with stamp st) or not.
// force reports a known, existing file as Modified even if its stamp is the
// same (an event said it was written, and stamps are too coarse to
// disagree).
func (w *Watcher) file(c *changeSet, p string, exists bool, st stamp, force bool) {
	if _, done := c.changes[p]; done {
		return
	}
	dir, name := splitDir(p)
	node := w.tree.dirs[dir]
	var old stamp
	known := false
	if node != nil {
		old, known = node.files[name]
	}
	switch {
	case known && !exists:
		delete(node.files, name)
		c.changes[p] = Removed
	case !known && exists:
		if node == nil {
			return // its directory is not tracked (ignored, or gone again)
		}
		node.files[name] = st
		c.changes[p] = Added
	case known && exists:
		node.files[name] = st
		if force || old != st {
			c.changes[p] = Modified
		}
	}
}

// removeDir forgets the directory p and everything below it, reporting its
// files as Removed, and drops its watches.
func (w *Watcher) removeDir(c *changeSet, p string) {
	node := w.tree.dirs[p]
	if node == nil {
		return
	}
	for sub := range node.subdirs {
		w.removeDir(c, path.Join(p, sub))
	}
	for name := range node.files {
		if _, done := c.changes[path.Join(p, name)]; !done {
			c.changes[path.Join(p, name)] = Removed
		}
	}
	if !node.polled {
		w.unwatch(w.ws.abs(p))
	}
	delete(w.tree.dirs, p)
	if p != "." {
		if parent := w.tree.dirs[path.Dir(p)]; parent != nil {
			delete(parent.subdirs, path.Base(p))
		}
	}
}

// syncDir makes the tree's view of directory p (and, as mode says, below it)
// match the disk, adding a watch where there is none, and records the
// differences in c. A directory that cannot be listed any more is removed.
func (w *Watcher) syncDir(ctx context.Context, c *changeSet, p string, mode syncMode) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.synced[p] {
		return nil
	}
	c.synced[p] = true
	node := w.tree.dirs[p]
	if node == nil {
		node = &dirNode{files: make(map[string]stamp), subdirs: make(map[string]struct{})}
		w.tree.dirs[p] = node
		if p != "." {
			if parent := w.tree.dirs[path.Dir(p)]; parent != nil {
				parent.subdirs[path.Base(p)] = struct{}{}
			}
		}
		mode.rewatch = true
	}
	if mode.rewatch {
		if !node.polled {
			w.unwatch(w.ws.abs(p))
		}
		node.polled = false
		if err := w.watch(w.ws.abs(p)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				// Not watchable (gone already, no permission): if it is gone,
				// listing it below fails too and removes it.
				w.logger.Debug("workspace: cannot watch directory", "dir", p, "err", err)
			} else {
				w.watchLimitHit(p)
			}
			node.polled = true
			w.polling = true
		}
	}

	entries, err := os.ReadDir(w.ws.abs(p))
	if err != nil {
		w.removeDir(c, p)
		return nil
	}
	seenFiles := make(map[string]bool, len(entries))
	seenDirs := make(map[string]bool)
	for _, e := range entries {
		name := e.Name()
		child := path.Join(p, name)
		if e.IsDir() {
			if IgnoredDir(name) {
				continue
			}
			seenDirs[name] = true
			if _, known := node.files[name]; known { // a file became a directory
				w.file(c, child, false, stamp{}, false)
			}
			_, known := node.subdirs[name]
			if !known || mode.deep || mode.rewatch {
				sub := mode
				if !known {
					sub = syncMode{rewatch: true, force: mode.force, deep: true}
				}
				if err := w.syncDir(ctx, c, child, sub); err != nil {
					return err
				}
			}
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // gone since the listing; its own event or the next poll tells
		}
		if _, wasDir := node.subdirs[name]; wasDir { // a directory became a file
			w.removeDir(c, child)
		}
		seenFiles[name] = true
		w.file(c, child, true, stampOf(fi), mode.force)
	}
	for name := range node.files {
		if !seenFiles[name] {
			w.file(c, path.Join(p, name), false, stamp{}, false)
		}
	}
	for name := range node.subdirs {
		if !seenDirs[name] {
			w.removeDir(c, path.Join(p, name))
		}
	}
	return nil
}

// pollDir lists the polled directory p and compares it with the tree, noting
// what differs as pending events, the way inotify would have reported them.
func (w *Watcher) pollDir(p string, node *dirNode) {
	entries, err := os.ReadDir(w.ws.abs(p))
	if err != nil {
		w.note(p, opRemove)
		return
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		name := e.Name()
		seen[name] = true
		if e.IsDir() {
			if _, known := node.subdirs[name]; !known && !IgnoredDir(name) {
				w.note(path.Join(p, name), opCreate)
			}
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if old, known := node.files[name]; !known {
			w.note(path.Join(p, name), opCreate)
		} else if old != stampOf(fi) {
			w.note(path.Join(p, name), opWrite)
		}
	}
	for name := range node.files {
		if !seen[name] {
			w.note(path.Join(p, name), opRemove)
		}
	}
	for name := range node.subdirs {
		if !seen[name] {
			w.note(path.Join(p, name), opRemove)
		}
	}
}

// splitDir splits a resolved relative path into its directory ("." at the
// top) and its name.
func splitDir(p string) (string, string) {
	dir, name := path.Split(p)
	if dir == "" {
		return ".", name
	}
	return dir[:len(dir)-1], name
}
