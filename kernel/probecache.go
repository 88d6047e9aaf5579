package kernel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// probeCache remembers what probing an interpreter found, so that starting
// ripple does not run Python once just to ask its version (~25 ms of every
// start). Only real interpreters are remembered, keyed by the file they
// resolve to and its size and modification time: a launcher (a pyenv shim,
// whose answer depends on the directory and the environment) resolves to
// another file than the sys.executable it reports, and is probed every
// time. The cache is one small JSON file in ripple's cache directory,
// replaced atomically; a lost race or an unreadable file only costs a
// probe.
var probeCache = &interpreterCache{path: func() string {
	return filepath.Join(cacheBase(), "ripple", "interpreters.json")
}}

type interpreterCache struct {
	path func() string
	mu   sync.Mutex // serialises this process's read-modify-write of the file
}

// probeEntry is what the cache knows about one candidate path.
type probeEntry struct {
	Real    string `json:"real"`    // the candidate with symlinks resolved
	Size    int64  `json:"size"`    // of Real
	ModTime int64  `json:"modTime"` // of Real, ns
	Exe     string `json:"exe"`     // sys.executable
	Version string `json:"version"`
}

// identity resolves a candidate path to the file that runs and its stat.
func identity(path string) (probeEntry, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return probeEntry{}, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return probeEntry{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return probeEntry{}, err
	}
	return probeEntry{Real: real, Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}, nil
}

func (c *interpreterCache) load() map[string]probeEntry {
	entries := map[string]probeEntry{}
	data, err := os.ReadFile(c.path())
	if err == nil {
		_ = json.Unmarshal(data, &entries) // a damaged cache is an empty one
	}
	return entries
}

// lookup returns the remembered probe of path if the file it runs is the
// one that was probed.
func (c *interpreterCache) lookup(path string) (Interpreter, bool) {
	id, err := identity(path)
	if err != nil {
		return Interpreter{}, false
	}
	c.mu.Lock()
	e, ok := c.load()[path]
	c.mu.Unlock()
	if !ok || e.Real != id.Real || e.Size != id.Size || e.ModTime != id.ModTime || e.Exe == "" {
		return Interpreter{}, false
	}
	return Interpreter{Path: e.Exe, Version: e.Version}, true
}

// remember records a probe of path when path is the interpreter itself
// (its sys.executable resolves to the same file), not a launcher.
func (c *interpreterCache) remember(path string, interp Interpreter) {
	id, err := identity(path)
	if err != nil {
		return
	}
	exe, err := identity(interp.Path)
	if err != nil || exe.Real != id.Real {
		return // a launcher: probe it every time
	}
	id.Exe, id.Version = interp.Path, interp.Version
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := c.load()
	for p, e := range entries {
		if _, err := os.Stat(e.Real); err != nil {
			delete(entries, p) // an interpreter that is gone
		}
	}
	entries[path] = id
	data, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return
	}
	file := c.path()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", file, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
	}
}
