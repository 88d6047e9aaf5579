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
	return e.sources.current(module)
}

// snapshotted reports whether module is taken as compiled (Config.Batch):
// no disk lookup is needed to know it exists and is current.
func (e *Engine) snapshotted(module string) bool {
	return e.cfg.Batch && e.sources.snapshotted(module)
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
		if e.sources.stale(m, src, ok, cs) {
			stale = append(stale, m)
		}
	}
	return jobs.SetOf(stale...)
}

// importClosure returns module and the project modules it imports
// (sourceTable.importClosure).
func (e *Engine) importClosure(module string) (mods []jobs.Module, known bool) {
	return e.sources.importClosure(module)
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
	params, after := e.sources.compileRequest(slot, k.ID(), mods, e.scriptModules())
	params.Load = load
	params.Faulty = e.sources.faultyModules()
	if len(params.Modules) == 0 && len(params.Removed) == 0 && !e.sources.needsLoad(slot, k.ID(), load) {
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
	for m, d := range e.sources.recordCompile(slot, k.ID(), params, after, &res) {
		e.log.Warn("module out of service", "module", m, "reason", d.Message)
	}
	return "", nil
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
	e.sources.setFaulty(module, src, d)
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
		if e.sources.hasInstalled(slot, k.ID(), module) {
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
	served := e.sources.announce(base)
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
	e.sources.beginSync(slot, k.ID())
	defer e.sources.endSync(slot)
	for {
		mods, gen := e.sources.knownModules()
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
		if e.sources.serve(slot, gen) {
			return nil
		}
	}
}
