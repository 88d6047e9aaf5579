package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
	"golang.org/x/sync/errgroup"
)

// sourceTable remembers which module sources each kernel slot was given,
// so that an EnsureCompiled sends only what changed and a kernel that
// replaces a dead one gets everything it needs.
//
// Writers: the EnsureCompiled runner (never concurrent with itself, the
// queue's rule 1), onKernelReady (a slot's owner goroutine, before the
// kernel serves requests) and, in batch mode, each slot's Execute runner
// for its own slot (loadEntryModule: never beside an EnsureCompiled, rule
// 1). mu guards every field.
type sourceTable struct {
	mu sync.Mutex
	// kernelID[slot] is the kernel the slot's map describes; a map of
	// another kernel is stale and ignored.
	kernelID []string
	// installed[slot][module] is the source that kernel compiled last.
	installed []map[string]string
	// known is every module ever sent to a kernel, or announced by an
	// EnsureCompiled: a new kernel gets them all in onKernelReady (the
	// others it imports from disk on first use). knownGen counts additions
	// and requests for another pass of onKernelReady (staleModules).
	known    map[string]bool
	knownGen uint64
	// served[slot] is set once the slot's first kernel finished
	// onKernelReady. Until then an EnsureCompiled does not wait for that
	// kernel: it announces its modules, and onKernelReady compiles every
	// module announced before it finishes (it re-reads known until
	// knownGen stands still), so a run on a slot that is still starting
	// does not hold up the compile of the kernels that are ready.
	served []bool
	// syncing[slot] is set while onKernelReady brings the slot's kernel up
	// to date (its first kernel or a replacement): staleModules leaves
	// such a slot to it instead of queueing an EnsureCompiled that would
	// wait for every running Execute (rule 5) before the kernel is even
	// ready.
	syncing []bool
	// deferred are modules edited with execute:false: compiled by the next
	// EnsureCompiled, whatever it was enqueued for.
	deferred map[string]bool
	// snapshot are the modules a batch run announced (Config.Batch,
	// Engine.Compile): not compiled ahead on every kernel; a kernel
	// compiles one right before its first run that needs it
	// (loadEntryModule). Set before the first push, read after.
	snapshot map[string]bool
	// broken is the diagnostic of each module whose last compile failed.
	broken map[string]*protocol.Diagnostic
}

func newSourceTable(slots int) *sourceTable {
	t := &sourceTable{
		kernelID:  make([]string, slots),
		installed: make([]map[string]string, slots),
		known:     make(map[string]bool),
		served:    make([]bool, slots),
		syncing:   make([]bool, slots),
		deferred:  make(map[string]bool),
		snapshot:  make(map[string]bool),
		broken:    make(map[string]*protocol.Diagnostic),
	}
	for i := range t.installed {
		t.installed[i] = make(map[string]string)
	}
	return t
}

// defer records modules to compile with the next EnsureCompiled.
func (t *sourceTable) deferModules(mods ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range mods {
		t.deferred[m] = true
	}
}

// deferredModules returns the deferred modules.
func (t *sourceTable) deferredModules() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.deferred))
	for m := range t.deferred {
		out = append(out, m)
	}
	return out
}

// takeDeferred returns and forgets the deferred modules.
func (t *sourceTable) takeDeferred() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.deferred))
	for m := range t.deferred {
		out = append(out, m)
	}
	clear(t.deferred)
	return out
}

// compileModule is one entry of the kernel's compile request.
type compileModule struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Source string `json:"source"`
}

type compileParams struct {
	Modules []compileModule `json:"modules"`
	Removed []string        `json:"removed"`
	// Scripts are the modules some context runs as a script
	// (module:__main__) and none as a module of functions: the kernel
	// parses them and does not import them (unless a module imports one),
	// since importing would run the script's top level a second time.
	Scripts []string `json:"scripts"`
}

type compileResult struct {
	Modules []struct {
		Name       string               `json:"name"`
		Path       string               `json:"path"`
		OK         bool                 `json:"ok"`
		Diagnostic *protocol.Diagnostic `json:"diagnostic"`
	} `json:"modules"`
	Reloaded []string `json:"reloaded"`
}

// current reads a module's current source (the open buffer, else the
// disk). ok is false when the module no longer exists.
func (e *Engine) current(module string) (path, source string, ok bool) {
	p, err := e.ws.ModulePath(module)
	if err != nil {
		return "", "", false
	}
	src, err := e.ws.Source(module)
	if err != nil {
		return "", "", false
	}
	return p, src, true
}

// snapshotted reports whether module is taken as compiled (Config.Batch):
// no disk lookup is needed to know it exists and is current.
func (e *Engine) snapshotted(module string) bool {
	if !e.cfg.Batch {
		return false
	}
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	return e.sources.known[module] || e.sources.snapshot[module]
}

// staleModules keeps the modules that some kernel does not have in their
// current version (or that vanished but a kernel still has).
func (e *Engine) staleModules(mods jobs.ModuleSet) jobs.ModuleSet {
	if mods.IsEmpty() {
		return mods
	}
	var stale []jobs.Module
	for _, m := range mods.Items() {
		if e.snapshotted(string(m)) {
			continue
		}
		_, src, ok := e.current(string(m))
		e.sources.mu.Lock()
		for slot := range e.sources.installed {
			if !e.sources.served[slot] || e.sources.syncing[slot] {
				// The slot's kernel is being brought up to date by
				// onKernelReady, which compiles every known module: a
				// known module is not stale there, but the pass under way
				// may have read its source before this change, so it is
				// told to take another. An unknown module is announced
				// by the EnsureCompiled.
				if e.sources.known[string(m)] {
					e.sources.knownGen++
					continue
				}
				stale = append(stale, m)
				break
			}
			have, loaded := e.sources.installed[slot][string(m)]
			if (ok && (!loaded || have != src)) || (!ok && loaded) || (!ok && !e.sources.known[string(m)]) {
				stale = append(stale, m)
				break
			}
		}
		e.sources.mu.Unlock()
	}
	return jobs.SetOf(stale...)
}

// request builds the compile request bringing slot's kernel to the current
// version of mods, and the map of what it will then have.
func (e *Engine) compileRequest(slot int, kernelID string, mods []string) (compileParams, map[string]string) {
	p := compileParams{Modules: []compileModule{}, Removed: []string{}, Scripts: e.scriptModules()}
	after := make(map[string]string)
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	fresh := e.sources.kernelID[slot] != kernelID
	for _, m := range mods {
		path, src, ok := e.current(m)
		have, loaded := e.sources.installed[slot][m]
		if fresh {
			loaded = false
		}
		// A broken module is sent again even if its text did not change
		// (see ensureCompiled).
		_, broken := e.sources.broken[m]
		switch {
		case ok && (!loaded || have != src || broken):
			p.Modules = append(p.Modules, compileModule{Name: m, Path: path, Source: src})
			after[m] = src
		case !ok && loaded:
			p.Removed = append(p.Removed, m)
		case !ok && !loaded:
			// Never loaded and gone: the kernel may still have imported it
			// from disk; tell it to forget.
			p.Removed = append(p.Removed, m)
		}
	}
	return p, after
}

// scriptModules returns the modules that some context's bottom frame runs
// as a script and none runs as a module of functions (compileParams.Scripts).
func (e *Engine) scriptModules() []string {
	all, err := e.store.Contexts(nil)
	if err != nil {
		return []string{}
	}
	script := map[string]bool{}
	for _, c := range all {
		stack, err := e.store.Stack(nil, c.ID)
		if err != nil || len(stack) == 0 {
			continue
		}
		mp := stack[0].Item.MethodPointer
		if mp.IsScript() {
			if _, seen := script[mp.Module]; !seen {
				script[mp.Module] = true
			}
		} else {
			script[mp.Module] = false
		}
	}
	out := []string{}
	for m, only := range script {
		if only {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// compileOn sends one compile request to k (the kernel of slot) and records
// what it now has and which modules are broken.
func (e *Engine) compileOn(ctx context.Context, slot int, k *kernel.Kernel, mods []string) error {
	params, after := e.compileRequest(slot, k.ID(), mods)
	if len(params.Modules) == 0 && len(params.Removed) == 0 {
		return nil
	}
	raw, err := k.Call(ctx, "compile", params, nil)
	if err != nil {
		return fmt.Errorf("compile on kernel %s: %w", k.ID(), err)
	}
	var res compileResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("compile on kernel %s: bad result: %w", k.ID(), err)
	}
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	if e.sources.kernelID[slot] != k.ID() {
		e.sources.kernelID[slot] = k.ID()
		e.sources.installed[slot] = make(map[string]string)
	}
	for m, src := range after {
		e.sources.installed[slot][m] = src
		if !e.sources.known[m] {
			e.sources.known[m] = true
			e.sources.knownGen++
		}
	}
	for _, m := range params.Removed {
		delete(e.sources.installed[slot], m)
		delete(e.sources.broken, m)
	}
	for _, m := range res.Modules {
		if m.OK {
			delete(e.sources.broken, m.Name)
		} else if m.Diagnostic != nil {
			e.sources.broken[m.Name] = m.Diagnostic
		}
	}
	return nil
}

// loadEntryModule (batch mode) compiles the module of a run's entry on the
// slot's kernel before the run, if that kernel does not have it yet (see
// Compile: no EnsureCompiled compiles it ahead): its import is not the
// run's time (ExecuteTimeout) and what it prints goes to no entry, as
// with a compile ahead. A module that fails to load is not tried again on
// that kernel: the run, and every later one of the module there, fails
// with compileError. Called by the slot's runner, which holds the slot
// (one Execute per slot, no EnsureCompiled beside it: rules 1 and 2).
func (e *Engine) loadEntryModule(ctx context.Context, slot int, stack []*contexts.Frame) error {
	if !e.cfg.Batch || len(stack) == 0 || stack[0].Item.Type != protocol.ExplicitCall {
		return nil
	}
	module := stack[0].Item.MethodPointer.Module
	for {
		k, err := e.pool.Kernel(ctx, slot)
		if err != nil {
			return err
		}
		e.sources.mu.Lock()
		_, have := e.sources.installed[slot][module]
		have = have && e.sources.kernelID[slot] == k.ID()
		e.sources.mu.Unlock()
		if have {
			return nil
		}
		err = e.compileOn(ctx, slot, k, []string{module})
		if !kernel.WasNotSent(err) {
			return err
		}
		// The kernel was gone before the request reached it: the slot's
		// next kernel gets it (onKernelReady may have compiled it there).
	}
}

// ensureCompiled is the EnsureCompiled job: bring every kernel up to date
// with mods (plus deferred edits), all kernels in parallel. A kernel that
// dies meanwhile is not an error here: its replacement gets every known
// module in onKernelReady.
//
// Modules whose last compile failed are tried again with every
// EnsureCompiled that has work: what broke them may be what changed. The
// case that needs it is a module that failed because a project module it
// imports was missing: when that module comes back, the kernel, whose
// import graph only has edges to modules that existed when the importer
// was last parsed, would not reload the importer by itself.
func (e *Engine) ensureCompiled(ctx context.Context, job *jobs.EnsureCompiled) error {
	mods := e.sources.takeDeferred()
	for _, m := range job.Modules.Items() {
		mods = append(mods, string(m))
	}
	if len(mods) > 0 {
		mods = append(mods, e.sources.brokenModules()...)
	}
	slices.Sort(mods)
	mods = slices.Compact(mods)
	if len(mods) == 0 {
		return nil
	}
	e.sources.mu.Lock()
	for _, m := range mods {
		if !e.sources.known[m] {
			e.sources.known[m] = true
			e.sources.knownGen++
		}
	}
	served := slices.Clone(e.sources.served)
	e.sources.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	for slot := 0; slot < e.pool.Size(); slot++ {
		if !served[slot] {
			continue // its first kernel is starting: onKernelReady compiles mods
		}
		g.Go(func() error {
			k, err := e.pool.Kernel(gctx, slot)
			if err != nil {
				return nil // restarting: onKernelReady installs everything
			}
			err = e.compileOn(gctx, slot, k, mods)
			if err != nil && (errors.Is(err, kernel.ErrKernelDied) || errors.Is(err, kernel.ErrStopped)) {
				e.log.Warn("compile: kernel went away", "slot", slot, "err", err)
				return nil
			}
			return err
		})
	}
	return g.Wait()
}

// onKernelReady installs every known module and every unsaved buffer in a
// new kernel before it serves requests.
func (e *Engine) onKernelReady(ctx context.Context, slot int, k *kernel.Kernel) error {
	e.sources.mu.Lock()
	e.sources.kernelID[slot] = k.ID()
	e.sources.installed[slot] = make(map[string]string)
	e.sources.syncing[slot] = true
	e.sources.mu.Unlock()
	defer func() {
		e.sources.mu.Lock()
		e.sources.syncing[slot] = false
		e.sources.mu.Unlock()
	}()
	for {
		e.sources.mu.Lock()
		gen := e.sources.knownGen
		mods := make([]string, 0, len(e.sources.known))
		for m := range e.sources.known {
			mods = append(mods, m)
		}
		e.sources.mu.Unlock()
		for _, p := range e.ws.OpenBuffers() {
			if name, ok := workspace.ModuleName(p); ok {
				if dirty, err := e.ws.Dirty(p); err == nil && dirty {
					mods = append(mods, name)
				}
			}
		}
		slices.Sort(mods)
		mods = slices.Compact(mods)
		if err := e.compileOn(ctx, slot, k, mods); err != nil {
			return err
		}
		// Modules announced while this compile ran (an EnsureCompiled that
		// did not wait for this kernel) are compiled by another pass;
		// compileOn sends only what this kernel does not have yet.
		e.sources.mu.Lock()
		if e.sources.knownGen == gen {
			e.sources.served[slot] = true
			e.sources.mu.Unlock()
			return nil
		}
		e.sources.mu.Unlock()
	}
}

// brokenModules returns the modules whose last compile failed.
func (t *sourceTable) brokenModules() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.broken))
	for m := range t.broken {
		out = append(out, m)
	}
	return out
}

// brokenDiagnostic returns the diagnostic of a module whose last compile
// failed.
func (e *Engine) brokenDiagnostic(module string) *protocol.Diagnostic {
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	return e.sources.broken[module]
}
