package engine

import (
	"slices"
	"sync"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// sourceFunc reads a module's current source (the open buffer, else the
// disk); ok is false when the module no longer exists.
type sourceFunc func(module string) (path, source string, ok bool)

// workspaceSource is the sourceFunc of a workspace.
func workspaceSource(ws *workspace.Workspace) sourceFunc {
	return func(module string) (string, string, bool) {
		p, err := ws.ModulePath(module)
		if err != nil {
			return "", "", false
		}
		src, err := ws.Source(module)
		if err != nil {
			return "", "", false
		}
		return p, src, true
	}
}

// sourceTable remembers which module sources each kernel slot was given,
// so that an EnsureCompiled sends only what changed and a kernel that
// replaces a dead one gets everything it needs.
//
// Writers: the EnsureCompiled runners (one per slot at a time, the
// queue's rule 1 per kernel; runners of different slots at once),
// onKernelReady (a slot's owner goroutine, before the kernel serves
// requests) and, in batch mode, each slot's Execute runner for its own
// slot (loadEntryModule: never beside an EnsureCompiled of its slot).
//
// mu guards every field but current; only the methods below touch them.
// The per-slot slices' entries are written only for their own slot.
// Lock order: some methods read sources through current with mu held, so
// mu comes before the workspace's locks; nothing that holds a workspace
// lock calls into the table.
type sourceTable struct {
	// current reads a module's current source; set at construction, never
	// changed. Called with mu held by compileRequest and recordCompile.
	current sourceFunc

	mu sync.Mutex
	// kernelID[slot] is the kernel the slot's maps describe; a map of
	// another kernel is stale and ignored.
	kernelID []string
	// installed[slot][module] is the source that kernel compiled last.
	installed []map[string]string
	// loaded[slot][module]: that kernel was asked to import the module
	// (compile's load), so a later compile need not ask again.
	loaded []map[string]bool
	// known is every module ever sent to a kernel, or announced by an
	// EnsureCompiled: a new kernel gets them all in onKernelReady (the
	// others it imports from disk on first use). knownGen counts additions
	// and requests for another pass of onKernelReady (stale).
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
	// to date (its first kernel or a replacement): stale leaves such a
	// slot to it instead of queueing an EnsureCompiled that would wait for
	// every running Execute (rule 5) before the kernel is even ready.
	syncing []bool
	// deferred are modules edited with execute:false: added to the next
	// plan that compiles and runs (Engine.apply).
	deferred map[string]bool
	// dirty[slot] are modules changed since that slot's last compile: its
	// next EnsureCompiled compiles them, whatever it was enqueued for, so
	// a kernel no affected context runs on does not keep an old version
	// of a module it has in service.
	dirty []map[string]bool
	// snapshot are the modules a batch run announced (Config.Batch,
	// Engine.Compile): not compiled ahead on every kernel; a kernel
	// compiles one right before its first run that needs it
	// (loadEntryModule). Set before the first push, read after.
	snapshot map[string]bool
	// broken is the diagnostic of each module whose last compile failed.
	broken map[string]*protocol.Diagnostic
	// faulty are the modules whose import hung past the compile timeout
	// or killed a kernel, with the text that did it: out of service (no
	// kernel imports them, importers fail with their diagnostic) until
	// their text changes, so a compile never puts the pool into a restart
	// loop (PROTOCOL.md 5.1).
	faulty map[string]faultyModule
	// imports is the static import graph (project modules only) the
	// kernels reported, for the contexts an edit reaches (importClosure).
	imports map[string][]string
}

// faultyModule is a module kept out of service (sourceTable.faulty).
type faultyModule struct {
	source string
	diag   *protocol.Diagnostic
}

func newSourceTable(slots int, current sourceFunc) *sourceTable {
	t := &sourceTable{
		current:   current,
		kernelID:  make([]string, slots),
		installed: make([]map[string]string, slots),
		loaded:    make([]map[string]bool, slots),
		dirty:     make([]map[string]bool, slots),
		known:     make(map[string]bool),
		served:    make([]bool, slots),
		syncing:   make([]bool, slots),
		deferred:  make(map[string]bool),
		snapshot:  make(map[string]bool),
		broken:    make(map[string]*protocol.Diagnostic),
		faulty:    make(map[string]faultyModule),
		imports:   make(map[string][]string),
	}
	for i := range t.installed {
		t.installed[i] = make(map[string]string)
		t.loaded[i] = make(map[string]bool)
		t.dirty[i] = make(map[string]bool)
	}
	return t
}

// deferModules records modules to compile with the next EnsureCompiled.
func (t *sourceTable) deferModules(mods ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range mods {
		t.deferred[m] = true
		for _, d := range t.dirty {
			d[m] = true
		}
	}
}

// markDirty records changed modules for every slot's next compile.
func (t *sourceTable) markDirty(mods []jobs.Module) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range mods {
		for _, d := range t.dirty {
			d[string(m)] = true
		}
	}
}

// takeDirty returns and forgets the modules changed since slot's last
// compile.
func (t *sourceTable) takeDirty(slot int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.dirty[slot]))
	for m := range t.dirty[slot] {
		out = append(out, m)
	}
	clear(t.dirty[slot])
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

// addSnapshot records the modules a batch run announced (Engine.Compile).
func (t *sourceTable) addSnapshot(mods []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range mods {
		t.snapshot[m] = true
	}
}

// snapshotted reports whether module was sent to a kernel or announced by
// a batch run.
func (t *sourceTable) snapshotted(module string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.known[module] || t.snapshot[module]
}

// stale reports whether some kernel does not have module m in its current
// version src (ok: m exists), or has not imported it while a context of cs
// on it runs it (cs may be nil). A slot being brought up to date by
// onKernelReady compiles every known module: a known module is not stale
// there, but the pass under way may have read its source before this
// change, so it is told to take another (knownGen). An unknown module is
// stale: the EnsureCompiled announces it.
func (t *sourceTable) stale(m jobs.Module, src string, ok bool, cs jobs.Contexts) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	name := string(m)
	for slot := range t.installed {
		if !t.served[slot] || t.syncing[slot] {
			if t.known[name] {
				t.knownGen++
				continue
			}
			return true
		}
		have, loaded := t.installed[slot][name]
		if (ok && (!loaded || have != src)) || (!ok && loaded) || (!ok && !t.known[name]) {
			return true
		}
		if ok && !t.loaded[slot][name] && runsOn(cs, slot, m) {
			return true
		}
	}
	return false
}

// runsOn reports whether a context of cs on slot runs module m.
func runsOn(cs jobs.Contexts, slot int, m jobs.Module) bool {
	for _, info := range cs {
		if int(info.Slot) == slot && !info.StackEmpty && info.BottomModule == m {
			return true
		}
	}
	return false
}

// importClosure returns module and the project modules it imports,
// directly or transitively, as the kernels last reported them; known is
// false when some module on the way was never reported or is broken (its
// imports may be incomplete), and then an edit must count as reaching
// everything.
func (t *sourceTable) importClosure(module string) (mods []jobs.Module, known bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]bool{module: true}
	todo := []string{module}
	known = true
	for len(todo) > 0 {
		m := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		mods = append(mods, jobs.Module(m))
		deps, ok := t.imports[m]
		if !ok {
			known = false
		}
		if _, broken := t.broken[m]; broken {
			known = false
		}
		for _, d := range deps {
			if !seen[d] {
				seen[d] = true
				todo = append(todo, d)
			}
		}
	}
	return mods, known
}

// compileRequest builds the compile request bringing slot's kernel
// (kernelID) to the current version of mods, and the map of what it will
// then have. scripts are the request's Scripts.
func (t *sourceTable) compileRequest(slot int, kernelID string, mods, scripts []string) (compileParams, map[string]string) {
	p := compileParams{Modules: []compileModule{}, Removed: []string{}, Scripts: scripts}
	after := make(map[string]string)
	t.mu.Lock()
	defer t.mu.Unlock()
	fresh := t.kernelID[slot] != kernelID
	for _, m := range mods {
		path, src, ok := t.current(m)
		have, loaded := t.installed[slot][m]
		if fresh {
			loaded = false
		}
		// A broken module is sent again even if its text did not change
		// (see ensureCompiled).
		_, broken := t.broken[m]
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

// recordCompile records what slot's kernel (kernelID) has after a compile
// that succeeded: sent is the request, after the sources it carried, res
// the kernel's answer. It returns the modules the compile put out of
// service (their top level timed out), for the caller to log.
func (t *sourceTable) recordCompile(slot int, kernelID string, sent compileParams, after map[string]string, res *compileResult) (outOfService map[string]*protocol.Diagnostic) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kernelID[slot] != kernelID {
		t.kernelID[slot] = kernelID
		t.installed[slot] = make(map[string]string)
		t.loaded[slot] = make(map[string]bool)
	}
	for m, src := range after {
		t.installed[slot][m] = src
		t.addKnownLocked(m)
	}
	for _, m := range sent.Load {
		t.loaded[slot][m] = true
	}
	for _, m := range sent.Removed {
		delete(t.installed[slot], m)
		delete(t.broken, m)
	}
	for _, m := range res.Modules {
		if m.OK {
			delete(t.broken, m.Name)
		} else if m.Diagnostic != nil {
			t.broken[m.Name] = m.Diagnostic
		}
		if m.TimedOut && m.Diagnostic != nil {
			src, sent := after[m.Name]
			if !sent {
				_, src, _ = t.current(m.Name) // loaded from disk: the current text
			}
			t.faulty[m.Name] = faultyModule{source: src, diag: m.Diagnostic}
			if outOfService == nil {
				outOfService = make(map[string]*protocol.Diagnostic)
			}
			outOfService[m.Name] = m.Diagnostic
		}
	}
	for m, deps := range res.Graph {
		t.imports[m] = deps
	}
	return outOfService
}

// addKnownLocked adds m to known, counting the addition. mu is held.
func (t *sourceTable) addKnownLocked(m string) {
	if !t.known[m] {
		t.known[m] = true
		t.knownGen++
	}
}

// needsLoad reports whether some module of load was never imported by
// slot's kernel (kernelID) through a compile's load.
func (t *sourceTable) needsLoad(slot int, kernelID string, load []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kernelID[slot] != kernelID {
		return len(load) > 0
	}
	for _, m := range load {
		if !t.loaded[slot][m] {
			return true
		}
	}
	return false
}

// installedSource returns the source of module that slot's kernel
// compiled last; have is false when it has none (or slot is out of range).
func (t *sourceTable) installedSource(slot int, module string) (source string, have bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if slot < 0 || slot >= len(t.installed) {
		return "", false
	}
	source, have = t.installed[slot][module]
	return source, have
}

// hasInstalled reports whether slot's kernel, kernelID, has module.
func (t *sourceTable) hasInstalled(slot int, kernelID, module string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, have := t.installed[slot][module]
	return have && t.kernelID[slot] == kernelID
}

// setFaulty puts module, whose text source killed or hung its kernel, out
// of service with the diagnostic d, which also marks it broken.
func (t *sourceTable) setFaulty(module, source string, d *protocol.Diagnostic) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faulty[module] = faultyModule{source: source, diag: d}
	t.broken[module] = d
}

// faultyModules returns the modules out of service, dropping those whose
// text changed since (they get another chance). Sources are read without
// mu held.
func (t *sourceTable) faultyModules() map[string]*protocol.Diagnostic {
	t.mu.Lock()
	names := make([]string, 0, len(t.faulty))
	for m := range t.faulty {
		names = append(names, m)
	}
	t.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]*protocol.Diagnostic, len(names))
	for _, m := range names {
		_, src, ok := t.current(m)
		t.mu.Lock()
		if f, still := t.faulty[m]; still {
			if ok && src == f.source {
				out[m] = f.diag
			} else {
				delete(t.faulty, m)
			}
		}
		t.mu.Unlock()
	}
	return out
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

// announce adds mods to known (an EnsureCompiled's modules) and returns
// which slots have been served (their first kernel finished
// onKernelReady).
func (t *sourceTable) announce(mods []string) (served []bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range mods {
		t.addKnownLocked(m)
	}
	return slices.Clone(t.served)
}

// beginSync starts onKernelReady's bringing of slot's new kernel
// (kernelID) up to date: its maps start empty, its dirty modules are
// dropped (every known module is compiled), and stale leaves the slot to
// it until endSync.
func (t *sourceTable) beginSync(slot int, kernelID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kernelID[slot] = kernelID
	t.installed[slot] = make(map[string]string)
	t.loaded[slot] = make(map[string]bool)
	clear(t.dirty[slot])
	t.syncing[slot] = true
}

// endSync ends what beginSync started, whether or not it succeeded.
func (t *sourceTable) endSync(slot int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.syncing[slot] = false
}

// knownModules returns every known module and the generation of that set.
func (t *sourceTable) knownModules() (mods []string, gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mods = make([]string, 0, len(t.known))
	for m := range t.known {
		mods = append(mods, m)
	}
	return mods, t.knownGen
}

// serve marks slot served if the known modules are still those of
// generation gen, and reports whether it did; otherwise onKernelReady
// takes another pass.
func (t *sourceTable) serve(slot int, gen uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.knownGen != gen {
		return false
	}
	t.served[slot] = true
	return true
}
