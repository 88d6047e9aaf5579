package workspace

import (
	"io/fs"
	"os"
	"path"
	"regexp"
)

// A save writes a hidden temp file next to its target, then renames it
// (atomic.go). A server killed in between (kill -9, a power cut) leaves the
// temp file behind, up to the size of the file. Open removes such files:
// the name says it is ours (createTemp's pattern), and the lock says no live
// writer holds it: a save keeps an exclusive flock on its temp file until
// the rename, and the lock dies with the process, so another server working
// on the same tree right now is never robbed of a file in flight.

// tempName matches createTemp's names: "." + base + ".ripple-" + 12 hex
// digits + ".tmp".
var tempName = regexp.MustCompile(`^\..*\.ripple-[0-9a-f]{12}\.tmp$`)

// skipDirs are not searched for stale temp files: version-control data,
// caches and environments, which ripple never saves files into and which
// can be large.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "node_modules": true, "__pycache__": true,
	".venv": true, "venv": true, ".tox": true, ".mypy_cache": true, ".pytest_cache": true,
}

// removeStaleTemps removes the temp files of interrupted saves under the
// root (see above) and returns their paths relative to the root. Errors
// are skipped: a file it cannot look at or remove is left as it is.
func (ws *Workspace) removeStaleTemps() []string {
	var removed []string
	fs.WalkDir(ws.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != "." && skipDirs[d.Name()] {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !tempName.MatchString(d.Name()) {
			return nil
		}
		f, err := ws.root.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return nil
		}
		defer f.Close()
		if !tryLock(f) {
			return nil // a live save holds it
		}
		if ws.root.Remove(p) == nil {
			removed = append(removed, path.Clean(p))
		}
		return nil
	})
	return removed
}
