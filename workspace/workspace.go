package workspace

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// Options configure a Workspace. The zero value is ready to use.
type Options struct {
	// Logger receives the workspace's and its watcher's log records
	// (slog.Default() if nil).
	Logger *slog.Logger
}

// Workspace is one project tree on disk and the text buffers open on it.
// It is safe for concurrent use by many goroutines (one per client request,
// plus a Watcher).
//
// Locks, in the order they are taken:
//
//   - diskMu serialises every change this package makes to the tree (Write,
//     Save, Delete), the reads that set a buffer's disk baseline (OpenBuffer),
//     and the watcher's evaluation of a batch. So a batch never sees a
//     half-recorded self-write, and a buffer's baseline is always the content
//     of one whole write.
//   - mu guards the buffers and their clients. It is held only for short,
//     in-memory critical sections: ApplyEdit does its string work and
//     hashing outside it and installs the result with a compare-and-swap on
//     the version.
type Workspace struct {
	absRoot  string   // the root as given to Open, made absolute
	realRoot string   // absRoot with every symlink resolved
	root     *os.Root // opened on realRoot; every file operation goes through it
	logger   *slog.Logger

	// writeHook, when set (tests only), is called before each step of an
	// atomic write and can fail it, to check what every failure leaves.
	writeHook func(step writeStep) error

	diskMu sync.Mutex
	// written maps the real relative path of each file this workspace wrote
	// or deleted to the version it left on disk (absent for a delete), so the
	// watcher can tell its own changes from the user's. An entry stays while
	// the disk still matches it, so a late event of the same write is also
	// recognised. Guarded by diskMu.
	written map[string]Version

	mu sync.Mutex
	// buffers holds the open text buffers by real relative path. Guarded by mu.
	buffers map[string]*buffer
	// bufferPaths maps each client spelling of an open buffer's path (as
	// passed to OpenBuffer) to its real relative path, so the keystroke path
	// (ApplyEdit) does not resolve the path on disk again. Entries go with
	// their buffer. Guarded by mu.
	bufferPaths map[string]string
}

// absent is the version recorded for a file this workspace deleted, and the
// disk baseline of a buffer whose file does not exist on disk.
const absent Version = ""

// Open opens the project tree rooted at root, which must be an existing
// directory. Call Close when done. It removes the hidden temp files that
// saves interrupted by a crash left behind (stale.go).
func Open(root string, opts Options) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("project root %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("project root: %w", fsError(root, err))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("project root: %w", fsError(root, err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("project root: %w", newError(ErrNotDirectory, root, ""))
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("project root: %w", fsError(root, err))
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ws := &Workspace{
		absRoot:  abs,
		realRoot: real,
		root:     r,
		logger:   logger,
		written:  make(map[string]Version),
		buffers:  make(map[string]*buffer),

		bufferPaths: make(map[string]string),
	}
	if removed := ws.removeStaleTemps(); len(removed) > 0 {
		logger.Info("removed temp files of interrupted saves", "root", real, "files", removed)
	}
	return ws, nil
}

// Root returns the absolute path of the project root with symlinks resolved.
func (ws *Workspace) Root() string { return ws.realRoot }

// Close releases the workspace's handle on the root directory. Open buffers
// are dropped; unsaved edits in them are lost (the clients own them). Stop
// the workspace's Watcher first.
func (ws *Workspace) Close() error {
	ws.mu.Lock()
	ws.buffers = make(map[string]*buffer)
	ws.bufferPaths = make(map[string]string)
	ws.mu.Unlock()
	return ws.root.Close()
}

// abs returns the absolute path of a resolved relative path.
func (ws *Workspace) abs(rel string) string {
	return filepath.Join(ws.realRoot, filepath.FromSlash(rel))
}
