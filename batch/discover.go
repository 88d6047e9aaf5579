package batch

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// discoverScript is run with the project's interpreter: it finds the
// --entry functions with ast, standard library only (its docstring is the
// protocol). Tests are pytest's to find (ripple run --tests).
//
//go:embed entries.py
var discoverScript string

// DiscoverOptions says what ripple run runs without --tests: the --entry
// list, or main:main.
type DiscoverOptions struct {
	Entries []string
}

// defaultEntry is what runs when neither --entry nor --tests is given
// (main:__main__, main.py run as a script, when main.py defines no main).
const defaultEntry = "main:main"

type discoverRequest struct {
	Lookups []discoverLookup `json:"lookups"`
}

type discoverLookup struct {
	Path     string `json:"path"`
	Qualname string `json:"qualname"`
}

type discoverError struct {
	Message string `json:"message"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
}

type discoverAnswer struct {
	Lookups []struct {
		Path     string         `json:"path"`
		Qualname string         `json:"qualname"`
		Status   string         `json:"status"` // def | bound | missing | error
		Line     int            `json:"line"`
		Error    *discoverError `json:"error"`
	} `json:"lookups"`
}

// Discover lists the --entry functions of the project at root (or
// main:main), in report order, without importing any of its code: the
// modules are parsed by a small script run with python. An --entry naming
// a module or function that does not exist is ErrUsage; nothing to run is
// ErrNoEntries.
func Discover(ctx context.Context, python kernel.Interpreter, root string, opts DiscoverOptions) ([]Entry, error) {
	var explicit []protocol.MethodPointer
	for _, s := range opts.Entries {
		mp, err := ParseEntry(s)
		if err != nil {
			return nil, err
		}
		explicit = append(explicit, mp)
	}
	useDefault := len(explicit) == 0
	if useDefault {
		mp, _ := protocol.ParseMethodPointer(defaultEntry)
		explicit = append(explicit, mp)
	}

	ws, err := workspace.Open(root, workspace.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	mods, err := ws.Modules()
	ws.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: list the modules of %s: %w", ErrProject, root, err)
	}
	pathOf := make(map[string]string, len(mods))
	var req discoverRequest
	for _, m := range mods {
		pathOf[m.Name] = m.Path
	}
	for _, mp := range explicit {
		p, ok := pathOf[mp.Module]
		switch {
		case !ok && useDefault:
			return nil, fmt.Errorf("%w: no --entry or --tests given, and the project %s has no main.py for the default entry %s", ErrNoEntries, root, defaultEntry)
		case !ok:
			return nil, fmt.Errorf("%w: --entry %s: module %s is not in the project %s", ErrUsage, mp, mp.Module, root)
		}
		req.Lookups = append(req.Lookups, discoverLookup{Path: p, Qualname: mp.Qualname()})
	}

	ans, err := runDiscovery(ctx, python, root, &req)
	if err != nil {
		return nil, err
	}
	if len(ans.Lookups) != len(req.Lookups) {
		return nil, fmt.Errorf("%w: the discovery script answered %d entries for %d", ErrDiscovery, len(ans.Lookups), len(req.Lookups))
	}

	var entries []Entry
	seen := make(map[string]bool)
	add := func(e Entry) {
		if !seen[e.ID()] {
			seen[e.ID()] = true
			entries = append(entries, e)
		}
	}
	for i, lk := range ans.Lookups {
		mp := explicit[i]
		switch lk.Status {
		case "missing":
			if useDefault || mp.IsScript() {
				// PROTOCOL.md 7.1: module:__main__ runs the module's top
				// level as a script; it is the default entry when main.py
				// defines no function main.
				add(Entry{Pointer: protocol.MethodPointer{Module: mp.Module, Name: protocol.ScriptName}, Path: lk.Path, Line: 1})
				continue
			}
			if useDefault {
				return nil, fmt.Errorf("%w: no --entry or --tests given, and %s has no function main for the default entry %s", ErrNoEntries, lk.Path, defaultEntry)
			}
			return nil, fmt.Errorf("%w: --entry %s: %s defines no %s", ErrUsage, mp, lk.Path, mp.Qualname())
		case "def", "bound", "error":
			// bound: a name the engine may still call (an assignment,
			// an import); error: the module does not parse, and the
			// engine reports its compile error for this entry.
			add(Entry{Pointer: mp, Path: lk.Path, Line: lk.Line})
		default:
			return nil, fmt.Errorf("%w: unknown lookup status %q for %s", ErrDiscovery, lk.Status, mp)
		}
	}
	sortEntries(entries)
	return entries, nil
}

// runDiscovery runs the discovery script in root. -I keeps the project's
// own files (a json.py, an ast.py) and the environment out of the
// script's imports; -S skips site, which it does not need. The script is
// imported from its installed copy (installDiscoverScript), so that
// Python caches its bytecode: compiling it is most of its start-up.
func runDiscovery(ctx context.Context, python kernel.Interpreter, root string, req *discoverRequest) (*discoverAnswer, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	code := discoverScript
	if dir, err := discoverScriptDir(); err == nil {
		code = fmt.Sprintf("import sys\nsys.path.insert(0, %s)\nimport %s\n%s.main()\n", pyString(dir), discoverModule, discoverModule)
	}
	cmd := exec.CommandContext(ctx, python.Path, "-I", "-S", "-c", code)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w: %s", ErrDiscovery, python.Path, err, lastLines(stderr.String(), 10))
	}
	var ans discoverAnswer
	if err := json.Unmarshal(stdout.Bytes(), &ans); err != nil {
		return nil, fmt.Errorf("%w: %s answered no JSON: %w: %s", ErrDiscovery, python.Path, err, lastLines(stderr.String(), 10))
	}
	return &ans, nil
}

// discoverModule is the installed discovery script's module name.
const discoverModule = "ripple_discover"

// discoverScriptDir installs the discovery script once per process, in
// <user cache dir>/ripple/discover-<hash of the script>/ (written to a
// temporary file renamed into place, so concurrent ripples share it); when
// that fails, the script is passed with -c instead.
var discoverScriptDir = sync.OnceValues(func() (string, error) {
	sum := sha256.Sum256([]byte(discoverScript))
	base, err := os.UserCacheDir()
	if err != nil || base == "" {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("ripple-cache-%d", os.Getuid()))
	}
	dir := filepath.Join(base, "ripple", "discover-"+hex.EncodeToString(sum[:8]))
	path := filepath.Join(dir, discoverModule+".py")
	if data, err := os.ReadFile(path); err == nil && string(data) == discoverScript {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, discoverModule+".*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.WriteString(discoverScript); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return dir, os.Rename(tmp.Name(), path)
})

// pyString is s as a Python string literal (JSON's escapes are Python's).
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
