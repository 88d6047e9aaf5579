package kernel

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// probeCache remembers what probing an interpreter found, so that starting
// ripple does not run Python once just to ask its version (~25 ms of every
// start). A real interpreter is remembered by its path, and trusted while
// the file it resolves to keeps its size and modification time. A launcher
// (a pyenv shim, whose answer depends on the directory and the
// environment) resolves to another file than the sys.executable it
// reports: its answer is remembered per project directory and
// environment, but FindPython still asks it every time; only
// FindPythonQuick uses the remembered answer, and it has its caller
// confirm it. The cache is one small JSON file in ripple's cache
// directory, replaced atomically; a lost race or an unreadable file only
// costs a probe.
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
	// Of a launcher's entry: the identity of Exe when it answered, so an
	// interpreter removed or replaced since is not handed out.
	ExeReal    string `json:"exeReal,omitempty"`
	ExeSize    int64  `json:"exeSize,omitempty"`
	ExeModTime int64  `json:"exeModTime,omitempty"`
	// Dir is the project directory a launcher answered in: once it is
	// gone the entry can never be asked for again.
	Dir string `json:"dir,omitempty"`
	// Saved is when the entry was written (Unix seconds), for dropping
	// the oldest past maxProbeEntries.
	Saved int64 `json:"saved,omitempty"`
}

// maxProbeEntries bounds the cache file: every start reads it whole, and
// launcher answers are kept per project directory (a machine that runs
// many throwaway projects, a test suite in temp dirs, would grow it
// without end: 7,939 entries, 3.3 MB and ~190 ms per start were seen).
const maxProbeEntries = 256

// launcherEnv lists the environment variables a launcher's answer may
// depend on (pyenv's and the activated environments').
var launcherEnv = []string{"PATH", "PYENV_VERSION", "PYENV_ROOT", "PYENV_DIR", "VIRTUAL_ENV", "CONDA_PREFIX"}

// launcherKey is the cache key of a launcher's answer: its path, the
// directory it runs in and the environment it sees.
func launcherKey(path, dir string) string {
	h := sha256.New()
	for _, v := range launcherEnv {
		fmt.Fprintf(h, "%s=%s\x00", v, os.Getenv(v))
	}
	return fmt.Sprintf("launcher %s in %s env %x", path, dir, h.Sum(nil)[:8])
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

// lookupLauncher returns the remembered answer of launcher path run in
// dir with this environment, if the launcher and the interpreter it named
// are the files they were.
func (c *interpreterCache) lookupLauncher(path, dir string) (Interpreter, bool) {
	id, err := identity(path)
	if err != nil {
		return Interpreter{}, false
	}
	c.mu.Lock()
	e, ok := c.load()[launcherKey(path, dir)]
	c.mu.Unlock()
	if !ok || e.Real != id.Real || e.Size != id.Size || e.ModTime != id.ModTime || e.Exe == "" {
		return Interpreter{}, false
	}
	exe, err := identity(e.Exe)
	if err != nil || exe.Real != e.ExeReal || exe.Size != e.ExeSize || exe.ModTime != e.ExeModTime {
		return Interpreter{}, false
	}
	return Interpreter{Path: e.Exe, Version: e.Version}, true
}

// remember records a probe of path run in dir: by path when path is the
// interpreter itself (its sys.executable resolves to the same file), by
// launcherKey when it is a launcher.
func (c *interpreterCache) remember(path, dir string, interp Interpreter) {
	id, err := identity(path)
	if err != nil {
		return
	}
	exe, err := identity(interp.Path)
	if err != nil {
		return
	}
	key := path
	if exe.Real != id.Real {
		key = launcherKey(path, dir)
		id.ExeReal, id.ExeSize, id.ExeModTime = exe.Real, exe.Size, exe.ModTime
		if abs, err := filepath.Abs(dir); err == nil {
			id.Dir = abs
		}
	}
	id.Exe, id.Version, id.Saved = interp.Path, interp.Version, time.Now().Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := c.load()
	pruneProbes(entries)
	entries[key] = id
	dropOldestProbes(entries, maxProbeEntries)
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

// pruneProbes drops the entries that can never be used again: an
// interpreter or launcher that is gone, a launcher's answer naming an
// interpreter that is gone or given in a project directory that is gone,
// and a launcher's answer from before entries named their directory.
func pruneProbes(entries map[string]probeEntry) {
	gone := func(path string) bool {
		_, err := os.Stat(path)
		return err != nil
	}
	for key, e := range entries {
		launcher := strings.HasPrefix(key, "launcher ")
		switch {
		case gone(e.Real):
		case e.ExeReal != "" && gone(e.ExeReal):
		case launcher && (e.Dir == "" || gone(e.Dir)):
		default:
			continue
		}
		delete(entries, key)
	}
}

// dropOldestProbes keeps the max most recently saved entries.
func dropOldestProbes(entries map[string]probeEntry, max int) {
	if len(entries) <= max {
		return
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return entries[keys[i]].Saved > entries[keys[j]].Saved })
	for _, k := range keys[max:] {
		delete(entries, k)
	}
}
