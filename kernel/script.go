package kernel

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// pythonFiles is the Python side: the ripple_kernel package (the kernel
// process, the execution engine, pytest's plugin). Tests under
// python/tests are not embedded.
//
//go:embed python/ripple_kernel/*.py
var pythonFiles embed.FS

// The files the bootstrap (kernel.go) starts from.
const (
	loaderFile = "ripple_kernel/loader.py"
	mainFile   = "ripple_kernel/main.py"
)

// scriptDirOnce installs the embedded files once per process.
var scriptDirOnce = sync.OnceValues(func() (string, error) {
	parent := filepath.Join(cacheBase(), "ripple")
	stamp := binaryStamp(parent)
	if dir, ok := stampedDir(stamp); ok {
		removeStaleScripts(parent, dir, staleScriptAge)
		return dir, nil
	}
	dir, err := installScripts(parent, pythonFiles)
	if err == nil {
		writeStamp(stamp, dir, pythonFiles)
		removeStaleScripts(parent, dir, staleScriptAge)
	}
	return dir, err
})

// staleScriptAge: installs of other ripple versions untouched for this
// long are removed (a running older ripple may still start kernels from
// a recent one, so only old ones go).
const staleScriptAge = 14 * 24 * time.Hour

// removeStaleScripts removes kernel-* directories of parent other than
// keep, and stamps of binaries (stamp.go), whose modification time is
// older than age. Best effort.
func removeStaleScripts(parent, keep string, age time.Duration) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	now := time.Now()
	os.Chtimes(keep, now, now) // in use: not stale for other versions either
	for _, e := range entries {
		path := filepath.Join(parent, e.Name())
		stampFile := !e.IsDir() && strings.HasPrefix(e.Name(), stampPrefix)
		if !stampFile && (!e.IsDir() || !strings.HasPrefix(e.Name(), "kernel-") || path == keep) {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > age {
			os.RemoveAll(path)
		}
	}
}

// cacheBase is the user's cache directory, or a per-user directory in the
// temporary directory when there is none (no HOME).
func cacheBase() string {
	if base, err := os.UserCacheDir(); err == nil && base != "" {
		return base
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("ripple-cache-%d", os.Getuid()))
}

// ScriptDir returns the directory holding the kernel's Python files,
// installing them on first use: <user cache dir>/ripple/kernel-<hash of
// the files>/. The directory is written atomically (a temporary directory
// renamed into place) and reused while its content matches.
func ScriptDir() (string, error) { return scriptDirOnce() }

// installScripts writes the *.py files of fsys into parent/kernel-<hash>
// unless a directory with exactly that content is already there.
func installScripts(parent string, fsys fs.FS) (string, error) {
	files, err := readPythonFiles(fsys)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	dir := filepath.Join(parent, "kernel-"+hex.EncodeToString(h.Sum(nil))[:16])
	if sameContent(dir, files) {
		return dir, nil
	}
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return "", fmt.Errorf("kernel: create script cache %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, filepath.Base(dir)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("kernel: create script cache: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	for _, name := range names {
		if err := os.MkdirAll(filepath.Join(tmp, filepath.Dir(name)), 0o700); err != nil {
			return "", fmt.Errorf("kernel: create script cache: %w", err)
		}
		if err := writeSynced(filepath.Join(tmp, name), files[name]); err != nil {
			return "", fmt.Errorf("kernel: write %s: %w", name, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have installed the same files meanwhile;
		// a damaged directory is moved aside and replaced.
		if sameContent(dir, files) {
			return dir, nil
		}
		aside := fmt.Sprintf("%s.damaged-%d", dir, os.Getpid())
		if err2 := os.Rename(dir, aside); err2 == nil {
			defer os.RemoveAll(aside)
			if err3 := os.Rename(tmp, dir); err3 == nil {
				return dir, nil
			}
		}
		if sameContent(dir, files) {
			return dir, nil
		}
		return "", fmt.Errorf("kernel: install scripts into %s: %w", dir, err)
	}
	return dir, nil
}

func readPythonFiles(fsys fs.FS) (map[string][]byte, error) {
	var matches []string
	for _, pattern := range []string{"python/ripple_kernel/*.py"} {
		m, err := fs.Glob(fsys, pattern)
		if err != nil {
			return nil, err
		}
		matches = append(matches, m...)
	}
	files := make(map[string][]byte, len(matches))
	for _, m := range matches {
		b, err := fs.ReadFile(fsys, m)
		if err != nil {
			return nil, err
		}
		files[strings.TrimPrefix(m, "python/")] = b // "ripple_kernel/engine.py"
	}
	for _, name := range []string{loaderFile, mainFile} {
		if _, ok := files[name]; !ok {
			return nil, fmt.Errorf("kernel: embedded files lack python/%s", name)
		}
	}
	return files, nil
}

// sameContent reports whether dir holds every file with the given content.
// Extra entries (Python's __pycache__) are fine.
func sameContent(dir string, files map[string][]byte) bool {
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			return false
		}
	}
	return true
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
