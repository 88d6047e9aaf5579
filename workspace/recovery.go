package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"time"
)

// RecoveryDir is where the unsaved contents of open buffers are kept when
// the server stops (PROTOCOL.md 7.4): .ripple/recovery under the root, one
// JSON file per buffer at the buffer's own path plus ".json". A hidden
// folder: never a module, never watched.
const RecoveryDir = ".ripple/recovery"

// Recovered is the unsaved content of a file that a server kept when it
// stopped.
type Recovered struct {
	// Path is the recovery file itself (project-relative): deleting it
	// through the workspace discards the recovered content.
	Path    string    `json:"-"`
	File    string    `json:"path"` // the file it is the content of
	Content string    `json:"content"`
	Version Version   `json:"version"`
	SavedAt time.Time `json:"savedAt"`
}

// recoveryPath is the recovery file of the buffer at rel.
func recoveryPath(rel string) string { return path.Join(RecoveryDir, rel+".json") }

// KeepUnsaved writes the content of every open buffer that has unsaved
// edits to RecoveryDir, each atomically (a crash mid-write leaves the
// previous recovery file or the new one, never a torn one), and returns the
// files it kept, sorted. User files are not touched. It goes on after a
// failed write and returns the errors joined.
func (ws *Workspace) KeepUnsaved(now time.Time) ([]string, error) {
	type unsaved struct {
		rel     string
		content string
		version Version
	}
	var todo []unsaved
	ws.mu.Lock()
	for rel, b := range ws.buffers {
		if b.dirty() {
			todo = append(todo, unsaved{rel, b.content, b.version})
		}
	}
	ws.mu.Unlock()
	var kept []string
	var errs []error
	ws.diskMu.Lock()
	defer ws.diskMu.Unlock()
	for _, u := range todo {
		data, err := json.Marshal(Recovered{File: u.rel, Content: u.content, Version: u.version, SavedAt: now.UTC()})
		if err != nil {
			errs = append(errs, fmt.Errorf("keep unsaved %s: %w", u.rel, err))
			continue
		}
		p := recoveryPath(u.rel)
		rel, err := ws.resolve(p)
		if err == nil {
			_, err = ws.writeAtomic(rel, p, string(data), VersionOf(string(data)))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("keep unsaved %s: %w", u.rel, err))
			continue
		}
		kept = append(kept, u.rel)
	}
	slices.Sort(kept)
	return kept, errors.Join(errs...)
}

// Recovery returns the kept unsaved content of the file at p, or nil when
// there is none or it equals the file's content on disk now (then there is
// nothing to offer). A recovery file that cannot be decoded is an error
// naming it; the user's file is never touched.
func (ws *Workspace) Recovery(p string) (*Recovered, error) {
	rel, err := ws.resolve(p)
	if err != nil {
		return nil, err
	}
	rp := recoveryPath(rel)
	data, err := ws.root.ReadFile(rp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError(rp, err)
	}
	var r Recovered
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, newError(ErrCannotDecode, rp, "not a recovery file: "+err.Error())
	}
	r.Path = rp
	if disk, err := ws.root.ReadFile(rel); err == nil && string(disk) == r.Content {
		return nil, nil
	}
	return &r, nil
}
