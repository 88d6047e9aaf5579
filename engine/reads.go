package engine

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// readSets holds, per context, the files its cached values read, as its
// kernel last reported them (the "reads" progress event,
// kernel/PROTOCOL.md): a change of one of them on disk runs the context
// again, and the kernel drops the values whose files changed before the
// run (ripple_kernel/reads.py), so they run again with their dependents.
// The zero value is ready.
type readSets struct {
	mu sync.Mutex
	// byContext: context -> absolute paths, sorted. Guarded by mu.
	byContext map[protocol.ContextID][]string
}

// set records the files a context's cached values read (nil: none).
func (r *readSets) set(id protocol.ContextID, paths []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(paths) == 0 {
		delete(r.byContext, id)
		return
	}
	if r.byContext == nil {
		r.byContext = make(map[protocol.ContextID][]string)
	}
	files := slices.Clone(paths)
	slices.Sort(files) // readers searches it
	r.byContext[id] = files
}

// readers returns the contexts that read one of paths (absolute), sorted.
func (r *readSets) readers(paths []string) []protocol.ContextID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []protocol.ContextID
	for id, files := range r.byContext {
		for _, p := range paths {
			if _, found := slices.BinarySearch(files, p); found {
				out = append(out, id)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// readFilesChanged runs again every context whose cached values read a
// file of the batch (not a module: module changes are an edit of their
// own). The run is a file watch's (ReasonFileWatch), as a save is.
func (e *Engine) readFilesChanged(changes []workspace.Change) {
	root := e.ws.Root()
	roots := []string{root}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		roots = append(roots, real)
	}
	var paths []string
	for _, c := range changes {
		if strings.HasSuffix(c.Path, ".py") {
			continue
		}
		for _, r := range roots {
			paths = append(paths, filepath.Join(r, filepath.FromSlash(c.Path)))
		}
	}
	if len(paths) == 0 {
		return
	}
	slices.Sort(paths)
	for _, id := range e.reads.readers(paths) {
		c, err := e.store.Context(nil, id)
		if err != nil {
			e.reads.set(id, nil) // destroyed
			continue
		}
		_ = e.store.SetStatus(id, contexts.StatusQueued) // before the queue has it (apply's status invariant)
		_, err = e.queue.EnqueueExecute(jobs.Execute{Context: jobs.ContextID(id), Slot: jobs.Slot(c.KernelSlot),
			Expressions: jobs.All[jobs.ExpressionID](), Priority: jobs.PriorityUser, Reason: jobs.ReasonFileWatch})
		if err != nil && !errors.Is(err, jobs.ErrShutdown) {
			e.log.Warn("run after a change of a file it read", "context", id, "err", err)
		}
	}
}
