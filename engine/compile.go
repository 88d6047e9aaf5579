package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

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
// Writers: the EnsureCompiled runners (one per slot at a time, the
// queue's rule 1 per kernel; runners of different slots at once),
// onKernelReady (a slot's owner goroutine, before the kernel serves
// requests) and, in batch mode, each slot's Execute runner for its own
// slot (loadEntryModule: never beside an EnsureCompiled of its slot). mu
// guards every field; the per-slot maps are written for their own slot.
type sourceTable struct {
	mu sync.Mutex
	// kernelID[slot] is the kernel the slot's map describes; a map of
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

func newSourceTable(slots int) *sourceTable {
	t := &sourceTable{
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

// defer records modules to compile with the next EnsureCompiled.
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
	// Load are modules to import even if the kernel never did: what the
	// slot's contexts run. Others are only reloaded if in service.
	Load []string `json:"load,omitempty"`
	// Faulty are the modules out of service, with their diagnostics.
	Faulty map[string]*protocol.Diagnostic `json:"faulty,omitempty"`
	// Timeout bounds each module's top level, in seconds.
	Timeout float64 `json:"timeout,omitempty"`
	// Lazy: import only Load and modules in service (always set here).
	Lazy bool `json:"lazy"`
}

type compileResult struct {
	Modules []struct {
		Name       string               `json:"name"`
		Path       string               `json:"path"`
		OK         bool                 `json:"ok"`
		Diagnostic *protocol.Diagnostic `json:"diagnostic"`
		// TimedOut: the kernel's timer cut the module's top level; it is
		// kept out of service until it changes, like one that hangs
		// where the timer cannot reach it.
		TimedOut bool `json:"timedOut"`
	} `json:"modules"`
	Reloaded []string `json:"reloaded"`
	// Graph is the static project import graph of the modules the kernel
	// has imported.
	Graph map[string][]string `json:"graph"`
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
// current version (or that vanished but a kernel still has), or has not
// imported while a context of cs on it runs the module (cs may be nil).
func (e *Engine) staleModules(mods jobs.ModuleSet, cs jobs.Contexts) jobs.ModuleSet {
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
			if ok && !e.sources.loaded[slot][string(m)] && runsOn(cs, slot, m) {
				stale = append(stale, m)
				break
			}
		}
		e.sources.mu.Unlock()
	}
	return jobs.SetOf(stale...)
}

// importClosure returns module and the project modules it imports,
// directly or transitively, as the kernels last reported them; known is
// false when some module on the way was never reported or is broken (its
// imports may be incomplete), and then an edit must count as reaching
// everything.
func (e *Engine) importClosure(module string) (mods []jobs.Module, known bool) {
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	seen := map[string]bool{module: true}
	todo := []string{module}
	known = true
	for len(todo) > 0 {
		m := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		mods = append(mods, jobs.Module(m))
		deps, ok := e.sources.imports[m]
		if !ok {
			known = false
		}
		if _, broken := e.sources.broken[m]; broken {
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

// runsOn reports whether a context of cs on slot runs module m.
func runsOn(cs jobs.Contexts, slot int, m jobs.Module) bool {
	for _, info := range cs {
		if int(info.Slot) == slot && !info.StackEmpty && info.BottomModule == m {
			return true
		}
	}
	return false
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

// compileOn brings k (the kernel of slot) to the current version of mods,
// importing load, and records what it now has and which modules are
// broken. A module whose top level hangs past the compile timeout or kills
// the kernel is put out of service (sourceTable.faulty) and the compile
// tried again without it while the kernel lives; a kernel that died is
// the pool's to replace (onKernelReady then compiles without the module).
func (e *Engine) compileOn(ctx context.Context, slot int, k *kernel.Kernel, mods, load []string) error {
	for {
		culprit, err := e.compileOnce(ctx, slot, k, mods, load)
		if err == nil || culprit == "" || ctx.Err() != nil {
			return err
		}
		if !errors.Is(err, kernel.ErrInterrupted) {
			return err // the kernel is gone: its replacement skips the module
		}
	}
}

// errCompileStuck cancels a compile whose kernel sent nothing for longer
// than the compile timeout allows (code blocked where SIGALRM cannot
// reach it).
var errCompileStuck = errors.New("compile timed out")

// compileOnce sends one compile request. When it fails while a module is
// loading (the kernel died, or the watchdog interrupted it), that module
// is marked faulty and named as culprit.
func (e *Engine) compileOnce(ctx context.Context, slot int, k *kernel.Kernel, mods, load []string) (culprit string, err error) {
	params, after := e.compileRequest(slot, k.ID(), mods)
	params.Load = load
	params.Faulty = e.faultyModules()
	if len(params.Modules) == 0 && len(params.Removed) == 0 && !e.needsLoad(slot, k.ID(), load) {
		return "", nil
	}
	params.Timeout = e.cfg.CompileTimeout.Seconds()
	params.Lazy = true
	sink := &compileSink{reset: make(chan struct{}, 1)}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The watchdog: the kernel's own timer ends a hanging top level at
	// CompileTimeout; if the kernel sends nothing for a second more, the
	// request is interrupted (and the kernel restarted if that does not
	// take, kernel.Config.InterruptTimeout).
	limit := e.cfg.CompileTimeout + time.Second
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(limit)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-sink.reset:
				t.Reset(limit)
			case <-t.C:
				cancel(errCompileStuck)
				return
			}
		}
	}()
	raw, err := k.Call(cctx, "compile", params, sink)
	close(done)
	if err != nil {
		// The module loading is at fault when the watchdog fired or the
		// kernel died by itself; not when the compile was cancelled or the
		// kernel replaced (a restart, the pool stopping).
		var exit *kernel.ExitError
		stuck := errors.Is(context.Cause(cctx), errCompileStuck)
		died := errors.As(err, &exit) && exit.Killed == ""
		if ctx.Err() == nil && (stuck || died) {
			if m := sink.loading(); m != "" {
				e.markFaulty(m, err, context.Cause(cctx))
				return m, fmt.Errorf("compile on kernel %s: %w", k.ID(), err)
			}
		}
		return "", fmt.Errorf("compile on kernel %s: %w", k.ID(), err)
	}
	var res compileResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("compile on kernel %s: bad result: %w", k.ID(), err)
	}
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	if e.sources.kernelID[slot] != k.ID() {
		e.sources.kernelID[slot] = k.ID()
		e.sources.installed[slot] = make(map[string]string)
		e.sources.loaded[slot] = make(map[string]bool)
	}
	for m, src := range after {
		e.sources.installed[slot][m] = src
		if !e.sources.known[m] {
			e.sources.known[m] = true
			e.sources.knownGen++
		}
	}
	for _, m := range load {
		e.sources.loaded[slot][m] = true
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
		if m.TimedOut && m.Diagnostic != nil {
			src, sent := after[m.Name]
			if !sent {
				_, src, _ = e.current(m.Name) // loaded from disk: the current text
			}
			e.sources.faulty[m.Name] = faultyModule{source: src, diag: m.Diagnostic}
			e.log.Warn("module out of service", "module", m.Name, "reason", m.Diagnostic.Message)
		}
	}
	for m, deps := range res.Graph {
		e.sources.imports[m] = deps
	}
	return "", nil
}

// needsLoad reports whether some module of load was never imported by
// slot's kernel k (through a compile's load).
func (e *Engine) needsLoad(slot int, kernelID string, load []string) bool {
	e.sources.mu.Lock()
	defer e.sources.mu.Unlock()
	if e.sources.kernelID[slot] != kernelID {
		return len(load) > 0
	}
	for _, m := range load {
		if !e.sources.loaded[slot][m] {
			return true
		}
	}
	return false
}

// compileSink follows a compile's module loads (the kernel's "load"
// progress events): which module is loading now, and a tick for the
// watchdog on every event.
type compileSink struct {
	reset chan struct{}
	mu    sync.Mutex
	stack []string // guarded by mu: modules loading, innermost last
}

func (s *compileSink) Output(kernel.Stream, []byte) {}

func (s *compileSink) Progress(raw json.RawMessage) {
	var ev struct {
		Type, Module, Phase string
	}
	if json.Unmarshal(raw, &ev) != nil || ev.Type != "load" {
		return
	}
	s.mu.Lock()
	if ev.Phase == "start" {
		s.stack = append(s.stack, ev.Module)
	} else if n := len(s.stack); n > 0 && s.stack[n-1] == ev.Module {
		s.stack = s.stack[:n-1]
	}
	s.mu.Unlock()
	select {
	case s.reset <- struct{}{}:
	default:
	}
}

// loading is the innermost module loading ("" when none).
func (s *compileSink) loading() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.stack) == 0 {
		return ""
	}
	return s.stack[len(s.stack)-1]
}

// markFaulty puts a module whose load killed or hung its kernel out of
// service, with a diagnostic saying which.
func (e *Engine) markFaulty(module string, err, cause error) {
	path, src, ok := e.current(module)
	if !ok {
		return
	}
	var msg string
	var exit *kernel.ExitError
	switch {
	case errors.Is(cause, errCompileStuck) || errors.Is(err, kernel.ErrKernelRestarted):
		msg = fmt.Sprintf("the top level of %s did not return within the compile timeout (%s) and could not be interrupted; the kernel was restarted", module, e.cfg.CompileTimeout)
	case errors.As(err, &exit):
		msg = fmt.Sprintf("importing %s killed the kernel (%s)", module, exit.Status())
	default:
		msg = fmt.Sprintf("importing %s failed: %v", module, err)
	}
	msg += "; it is not imported again until it changes"
	d := &protocol.Diagnostic{Kind: protocol.DiagnosticError, Message: msg, Path: path}
	e.log.Warn("module out of service", "module", module, "reason", msg)
	e.sources.mu.Lock()
	e.sources.faulty[module] = faultyModule{source: src, diag: d}
	e.sources.broken[module] = d
	e.sources.mu.Unlock()
}

// faultyModules returns the modules out of service, dropping those whose
// text changed since (they get another chance).
func (e *Engine) faultyModules() map[string]*protocol.Diagnostic {
	e.sources.mu.Lock()
	names := make([]string, 0, len(e.sources.faulty))
	for m := range e.sources.faulty {
		names = append(names, m)
	}
	e.sources.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	out := make(map[string]*protocol.Diagnostic, len(names))
	for _, m := range names {
		_, src, ok := e.current(m)
		e.sources.mu.Lock()
		if f, still := e.sources.faulty[m]; still {
			if ok && src == f.source {
				out[m] = f.diag
			} else {
				delete(e.sources.faulty, m)
			}
		}
		e.sources.mu.Unlock()
	}
	return out
}

// neededModules are the modules slot's kernel must have imported: the
// bottom module of every context on it with a non-empty stack (a module no
// context needs is not imported, PROTOCOL.md 5.1). Batch runs load each
// entry's module right before its run instead (loadEntryModule).
func (e *Engine) neededModules(slot int) []string {
	if e.cfg.Batch {
		return nil
	}
	cs, err := e.store.ContextsOnSlot(nil, slot)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cs {
		stack, err := e.store.Stack(nil, c.ID)
		if err != nil || len(stack) == 0 || stack[0].Item.Type != protocol.ExplicitCall {
			continue
		}
		out = append(out, stack[0].Item.MethodPointer.Module)
	}
	slices.Sort(out)
	return slices.Compact(out)
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
		err = e.compileOn(ctx, slot, k, []string{module}, []string{module})
		if !kernel.WasNotSent(err) {
			return err
		}
		// The kernel was gone before the request reached it: the slot's
		// next kernel gets it (onKernelReady may have compiled it there).
	}
}

// ensureCompiled is the EnsureCompiled job: bring the kernels of its slots
// (every kernel when it names none) up to date with its modules plus each
// slot's dirty ones, importing what the slot's contexts run, slots in
// parallel. A kernel that dies meanwhile is not an error here: its
// replacement gets every known module in onKernelReady.
//
// Modules whose last compile failed are tried again with every
// EnsureCompiled that has work: what broke them may be what changed. The
// case that needs it is a module that failed because a project module it
// imports was missing: when that module comes back, the kernel, whose
// import graph only has edges to modules that existed when the importer
// was last parsed, would not reload the importer by itself.
func (e *Engine) ensureCompiled(ctx context.Context, job *jobs.EnsureCompiled) error {
	var base []string
	for _, m := range job.Modules.Items() {
		base = append(base, string(m))
	}
	base = append(base, e.sources.brokenModules()...)
	slots := make([]int, 0, e.pool.Size())
	if len(job.Slots) == 0 {
		for slot := 0; slot < e.pool.Size(); slot++ {
			slots = append(slots, slot)
		}
	} else {
		for _, s := range job.Slots {
			slots = append(slots, int(s))
		}
	}
	e.sources.mu.Lock()
	for _, m := range base {
		if !e.sources.known[m] {
			e.sources.known[m] = true
			e.sources.knownGen++
		}
	}
	served := slices.Clone(e.sources.served)
	e.sources.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	for _, slot := range slots {
		if slot >= len(served) || !served[slot] {
			continue // its first kernel is starting: onKernelReady compiles mods
		}
		g.Go(func() error {
			k, err := e.pool.Kernel(gctx, slot)
			if err != nil {
				return nil // restarting: onKernelReady installs everything
			}
			mods := append(slices.Clone(base), e.sources.takeDirty(slot)...)
			slices.Sort(mods)
			mods = slices.Compact(mods)
			err = e.compileOn(gctx, slot, k, mods, e.neededModules(slot))
			if err != nil && (errors.Is(err, kernel.ErrKernelDied) || errors.Is(err, kernel.ErrStopped) || errors.Is(err, kernel.ErrKernelRestarted)) {
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
	e.sources.loaded[slot] = make(map[string]bool)
	clear(e.sources.dirty[slot]) // every known module is compiled below
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
		if err := e.compileOn(ctx, slot, k, mods, e.neededModules(slot)); err != nil {
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
