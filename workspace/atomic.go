package workspace

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
)

// writeStep names one step of an atomic write, for failure injection in
// tests and for error messages.
type writeStep int

const (
	stepCreateTemp writeStep = iota // create the temp file next to the target
	stepWrite                       // write the new content into it
	stepSync                        // fsync it
	stepClose                       // close it
	stepRename                      // rename it over the target
	stepSyncDir                     // fsync the directory, making the rename durable
)

var writeStepNames = [...]string{"create temp file", "write", "fsync", "close", "rename", "fsync directory"}

func (s writeStep) String() string { return writeStepNames[s] }

// newFileMode is the mode of files created by the workspace. An existing
// file keeps its own mode.
const newFileMode fs.FileMode = 0o644

// maxTempBase bounds how much of the target's name goes into the temp file's
// name, so a target whose name is near NAME_MAX still gets a temp file.
const maxTempBase = 64

// writeAtomic replaces the file rel (a resolved path, see resolve) with
// data, so that a crash or failure at any point leaves either the old or the
// new content, never a mix or an empty file:
//
//  1. create a temp file in the same directory (same file system, so the
//     rename is atomic) with the target's mode,
//  2. write and fsync it, close it,
//  3. rename it over the target,
//  4. fsync the directory, so the rename itself survives a power loss.
//
// A failure before the rename removes the temp file and leaves the target
// untouched. A failure of the directory fsync is reported, but the rename
// has happened: the target holds the whole new content, and renamed says so.
// Missing parent directories are created first. p is the client's spelling
// of the path, for messages; v is the version of content, recorded as a
// self-write (see Workspace.written) as soon as it is on disk. The caller
// holds diskMu.
func (ws *Workspace) writeAtomic(rel, p, content string, v Version) (renamed bool, err error) {
	if rel == "." {
		return false, newError(ErrNotFile, p, "the project root is a directory")
	}
	mode := newFileMode
	switch fi, err := ws.root.Lstat(rel); {
	case err == nil && fi.IsDir():
		return false, newError(ErrNotFile, p, "is a directory")
	case err == nil && !fi.Mode().IsRegular():
		return false, newError(ErrNotFile, p, fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type()))
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return false, fsError(p, err)
	}
	dir, base := path.Split(rel)
	dir = path.Clean(dir)
	if dir != "." {
		if err := ws.root.MkdirAll(dir, 0o755); err != nil {
			return false, fsError(p, err)
		}
	}
	if len(base) > maxTempBase {
		base = base[:maxTempBase]
	}

	if err := ws.step(stepCreateTemp); err != nil {
		return false, stepError(p, stepCreateTemp, err)
	}
	f, tmp, err := ws.createTemp(dir, base, mode)
	if err != nil {
		return false, stepError(p, stepCreateTemp, err)
	}
	// Until the rename succeeds, every failure removes the temp file.
	fail := func(step writeStep, err error) error {
		f.Close()
		ws.root.Remove(tmp)
		return stepError(p, step, err)
	}
	if err := ws.step(stepWrite); err != nil {
		return false, fail(stepWrite, err)
	}
	if _, err := f.WriteString(content); err != nil {
		return false, fail(stepWrite, err)
	}
	if err := ws.step(stepSync); err != nil {
		return false, fail(stepSync, err)
	}
	if err := f.Sync(); err != nil {
		return false, fail(stepSync, err)
	}
	if err := ws.step(stepClose); err != nil {
		return false, fail(stepClose, err)
	}
	if err := f.Close(); err != nil {
		ws.root.Remove(tmp)
		return false, stepError(p, stepClose, err)
	}
	if err := ws.step(stepRename); err != nil {
		ws.root.Remove(tmp)
		return false, stepError(p, stepRename, err)
	}
	if err := ws.root.Rename(tmp, rel); err != nil {
		ws.root.Remove(tmp)
		return false, stepError(p, stepRename, err)
	}
	ws.written[rel] = v
	if err := ws.syncDir(dir); err != nil {
		return true, stepError(p, stepSyncDir, err)
	}
	return true, nil
}

// createTemp creates a new, empty, hidden temp file in dir with the given
// mode (set explicitly, so the umask cannot narrow an existing file's mode).
func (ws *Workspace) createTemp(dir, base string, mode fs.FileMode) (*os.File, string, error) {
	for {
		var suffix [6]byte
		for i := range suffix {
			suffix[i] = byte(rand.Uint32())
		}
		tmp := path.Join(dir, "."+base+".ripple-"+hex.EncodeToString(suffix[:])+".tmp")
		f, err := ws.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue // a name collision: draw another suffix
		}
		if err != nil {
			return nil, "", err
		}
		if err := f.Chmod(mode); err != nil {
			f.Close()
			ws.root.Remove(tmp)
			return nil, "", err
		}
		lockFile(f) // until the rename: a stale file is one nobody locks (stale.go)
		return f, tmp, nil
	}
}

func (ws *Workspace) syncDir(dir string) error {
	if err := ws.step(stepSyncDir); err != nil {
		return err
	}
	d, err := ws.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (ws *Workspace) step(s writeStep) error {
	if ws.writeHook == nil {
		return nil
	}
	return ws.writeHook(s)
}

func stepError(p string, step writeStep, err error) error {
	e := fsError(p, err)
	var we *Error
	if errors.As(e, &we) {
		we.Detail = "atomic write: " + step.String()
		return we
	}
	return fmt.Errorf("%s: atomic write: %s: %w", p, step, err)
}
