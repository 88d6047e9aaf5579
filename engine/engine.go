package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/queue"
	"github.com/ripple-run/ripple/workspace"
)

// batchMaxStartFailures is how many failed starts in a row retire a
// kernel slot in batch mode (kernel.PoolConfig.MaxStartFailures).
const batchMaxStartFailures = 3

const (
	defaultFlushInterval   = 20 * time.Millisecond
	defaultDisconnectGrace = 5 * time.Minute
	// defaultCompileTimeout bounds a module's top level (PROTOCOL.md 5.1).
	defaultCompileTimeout = 10 * time.Second
)

// Errors of the engine's own (the workspace, contexts and queue packages
// have theirs; ProtocolError maps them all).
var (
	// ErrNotStarted: an API call before Start or after Stop.
	ErrNotStarted = errors.New("engine not running")
	// ErrModuleNotFound: a stack item or visualization names a module that
	// is not in the project.
	ErrModuleNotFound = errors.New("module not found")
	// ErrInvalidStackItem: a push that the stack cannot take.
	ErrInvalidStackItem = errors.New("invalid stack item")
	// ErrExpressionNotFound: an expression id that is not in the frame.
	ErrExpressionNotFound = errors.New("expression not found")
	// ErrVisualizationExpression: a visualization expression that cannot
	// be used (a pointer to a missing module or function).
	ErrVisualizationExpression = errors.New("invalid visualization expression")
	// ErrKernelUnavailable: the context's kernel cannot be reached.
	ErrKernelUnavailable = errors.New("kernel unavailable")
)

// Engine is ripple's execution engine. Create it with New, then Start it;
// Stop shuts it down (running jobs cancelled, kernels stopped). All methods
// are safe for concurrent use.
type Engine struct {
	cfg     Config
	log     *slog.Logger
	ws      *workspace.Workspace
	store   *contexts.Store
	queue   *queue.Queue
	pool    Kernels            // from cfg.Launcher
	watcher *workspace.Watcher // nil unless cfg.Watch
	// python is the interpreter the kernels start on; Start, or later the
	// launcher's answer (confirmLater), may replace it. Guarded by
	// pythonMu; read it through interpreter().
	pythonMu sync.Mutex
	python   kernel.Interpreter
	// confirmPython, when not nil, asks the launcher python came from
	// again (kernel.FindPythonQuick); Start calls it beside the kernels'
	// start and clears it.
	confirmPython func(context.Context) (kernel.Interpreter, error)
	poolCfg       kernel.PoolConfig // what the pool was made with, for a remake in Start
	sources       *sourceTable      // what each kernel was given (sources.go)
	dur           durableState      // the state log's ordering (durable.go)
	crashes       kernel.CrashStreak

	// bg is the per-owner context of the engine's own goroutines (watch
	// batches, kernel drops, grace expiry); Stop cancels it and waits on wg.
	bg     context.Context
	stopBg context.CancelFunc
	wg     sync.WaitGroup

	lifeMu  sync.Mutex
	started bool // guarded by lifeMu
	stopped bool // guarded by lifeMu

	// clients, runs, sources and drops each guard their own state with
	// their own lock; none of them is held while another is taken, except
	// that a stream's mutex is held while clients sends (clienttable.go).
	clients *clientTable // connected clients and grace timers (clienttable.go)

	streamsMu sync.Mutex
	streams   map[protocol.ContextID]*stream // guarded by streamsMu

	runs *runTable // the runs in flight and their soft stops (runtable.go)

	policies *runPolicies // run policies and each context's last run kind (runpolicy.go)

	drops *dropQueue // destroyed contexts their kernels have not forgotten yet

	// slotsMu makes CreateContext's choice of a slot and
	// RetireIdleKernels's check that a slot serves no context one step
	// each, so no context lands on a slot being closed.
	slotsMu sync.Mutex
	retired map[int]bool // guarded by slotsMu: slots closed by RetireIdleKernels

	// applyMu makes apply's read of the contexts and its queue.Apply one
	// step with respect to every other apply. Without it, an edit that read
	// the contexts before a concurrent push stored its frame could run its
	// queue.Apply after the push's: its abort-all would cancel the push's
	// Execute and enqueue none for that context (its stack looked empty),
	// and the context would never run. With it, of two applies the later
	// one reads a state that includes the earlier one's change, so the last
	// plan applied always covers every context's current stack.
	applyMu sync.Mutex

	// afterEnqueue, when set (tests only, export_test.go), is called by
	// apply right after queue.Apply: a test lets a run end there.
	afterEnqueue atomic.Pointer[func()]

	exprIDs exprIDCache // statement ids read from source (exprids.go)

	reads readSets    // the files each context's cached values read (reads.go)
	kept  keptOutputs // what each context's statements printed (replay.go)
}

// New returns an engine for cfg.Root. It finds the Python interpreter and
// opens the workspace; nothing runs until Start.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Launcher == nil {
		cfg.Launcher = LocalLauncher{}
	}
	if cfg.Kernels <= 0 {
		cfg.Kernels = runtime.NumCPU()
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = defaultFlushInterval
	}
	if cfg.CompileTimeout <= 0 {
		cfg.CompileTimeout = defaultCompileTimeout
	}
	if cfg.RestartTimeout <= 0 {
		cfg.RestartTimeout = cfg.CompileTimeout + 20*time.Second
	}
	if cfg.DisconnectGrace <= 0 {
		cfg.DisconnectGrace = defaultDisconnectGrace
	}
	ws, err := workspace.Open(cfg.Root, workspace.Options{Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("open project %s: %w", cfg.Root, err)
	}
	// A launcher's remembered answer is confirmed by Start, beside the
	// kernels' start, for the local launcher, whose pool Start can remake;
	// another launcher's kernels (agents) are made once, on a confirmed
	// interpreter.
	var py kernel.Interpreter
	var confirm func(context.Context) (kernel.Interpreter, error)
	if _, local := cfg.Launcher.(LocalLauncher); local {
		py, confirm, err = kernel.FindPythonQuick(ctx, cfg.Python, ws.Root())
	} else {
		py, err = kernel.FindPython(ctx, cfg.Python, ws.Root())
	}
	if err != nil {
		ws.Close()
		return nil, err
	}
	store, err := contexts.NewStore()
	if err != nil {
		ws.Close()
		return nil, err
	}
	e := &Engine{
		cfg:           cfg,
		log:           cfg.Logger,
		ws:            ws,
		store:         store,
		python:        py,
		confirmPython: confirm,
		sources:       newSourceTable(cfg.Kernels, workspaceSource(ws)),
		clients:       newClientTable(),
		streams:       make(map[protocol.ContextID]*stream),
		runs:          newRunTable(),
		policies:      newRunPolicies(),
		drops:         newDropQueue(),
		retired:       make(map[int]bool),
	}
	maxStartFailures := 0 // a server keeps trying
	if cfg.Batch {
		// A batch run fails the entries of a slot that cannot start a
		// kernel rather than wait for it forever.
		maxStartFailures = batchMaxStartFailures
	}
	e.poolCfg = kernel.PoolConfig{
		Kernel: kernel.Config{
			Python:           py,
			Root:             ws.Root(),
			InterruptTimeout: cfg.InterruptTimeout,
			Env:              append(journalEnv(cfg), cfg.KernelEnv...),
			Preload:          cfg.KernelPreload,
		},
		Size: cfg.Kernels,
		// A batch run restarts a kernel only after a crash: a spare would
		// cost a start and a stop on every run for a rare case.
		NoSpare:          cfg.Batch,
		SpareDelay:       spareDelay,
		MaxStartFailures: maxStartFailures,
		OnReady:          e.onKernelReady,
		OnRestart:        e.onKernelRestart,
	}
	e.pool = cfg.Launcher.Kernels(e.poolCfg)
	e.countContexts()
	e.reportWaits()
	// ExecuteTimeout is applied by execute, not by the queue: its clock
	// starts when the run's kernel is ready (see execute).
	e.queue = queue.New(runner{e}, queue.Options{
		MaxRunning: cfg.Kernels,
		OnEnd:      e.onJobEnd,
		// A burst of edits costs about two compiles however long it
		// lasts (queue/hold.go); typing that never pauses still gets a
		// compile and a run every CompileTimeout, the bound an edit
		// stream already has on a long statement (softstop.go).
		MaxCompileHold: cfg.CompileTimeout,
	})
	if cfg.Watch {
		e.watcher = workspace.NewWatcher(ws, workspace.WatchOptions{Debounce: cfg.WatchDebounce})
	}
	return e, nil
}

// Root is the project root.
func (e *Engine) Root() string { return e.ws.Root() }

// Python is the interpreter the kernels run.
func (e *Engine) Python() kernel.Interpreter { return e.interpreter() }

// Start starts the kernels, the queue and, if configured, the watcher. It
// returns once the queue accepts work; kernels finish starting in the
// background (jobs wait for them).
func (e *Engine) Start(ctx context.Context) error {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if e.started {
		return errors.New("engine: already started")
	}
	e.started = true
	e.bg, e.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	if err := e.startKernels(ctx); err != nil {
		return err
	}
	if err := e.queue.Start(e.bg); err != nil {
		e.pool.Stop(ctx)
		return fmt.Errorf("start queue: %w", err)
	}
	if e.watcher != nil {
		if err := e.watcher.Start(e.bg); err != nil {
			e.queue.Stop(ctx)
			e.pool.Stop(ctx)
			return fmt.Errorf("watch %s: %w", e.ws.Root(), err)
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.consumeBatches(e.watcher.Batches())
		}()
	}
	return nil
}

// spareDelay holds a server's warm spare back at start (PoolConfig): a
// restart's restored values wait on the first kernel's compile and run,
// which a spare booting beside them slowed by ~50 ms on 2 cores
// (bench/durable).
const spareDelay = time.Second

// confirmDelay is how long a server runs on a launcher's remembered
// interpreter before it asks the launcher again (startKernels).
const confirmDelay = time.Second

// startKernels starts the pool. When the interpreter is a launcher's
// remembered answer (kernel.FindPythonQuick), the launcher is asked again
// meanwhile: a pyenv shim takes 100-300 ms to answer, longer than a
// kernel's start, so waiting for it would put it on the path of every
// start (a restart's restored values among them).
//
// So a server (not a batch run) speculates: once the pool is up, Start
// returns, and the launcher is asked confirmDelay later, in the background
// (confirmLater): its shell and Python would otherwise take the CPU of the
// start's first compile and run. The remembered answer is keyed by the launcher's path,
// the project and the environment (kernel/probecache.go), so it is
// nearly always still right; when it is not (pyenv was pointed at another
// version since), the kernels are restarted on the interpreter the
// launcher names now, as a reset: contexts re-run there, and clients are
// told why (runtime/kernelRestarted). What ran on the old interpreter in
// between (at most the launcher's answer time) is discarded with the
// kernels' state. A batch run, whose results must all come from the right
// interpreter, waits for the answer; so does a start whose pool failed
// (the remembered interpreter may be gone): if the launcher now names
// another, the pool, on which nothing has run, is made again on that one.
// The caller holds lifeMu.
func (e *Engine) startKernels(ctx context.Context) error {
	confirm := e.confirmPython
	e.confirmPython = nil
	type answer struct {
		py  kernel.Interpreter
		err error
	}
	confirmed := make(chan answer, 1)
	ask := func() {
		go func() { // ends with confirm, which probeTimeout (or Stop) bounds
			py, err := confirm(e.bg)
			confirmed <- answer{py, err}
		}()
	}
	sw, speculate := e.pool.(pythonSwitcher)
	speculate = speculate && confirm != nil && !e.cfg.Batch
	if confirm != nil && !speculate {
		ask() // beside the kernels' start
	}
	startErr := e.pool.Start(e.bg)
	if confirm == nil {
		if startErr != nil {
			return fmt.Errorf("start kernels: %w", startErr)
		}
		return nil
	}
	if speculate {
		if startErr == nil {
			// The launcher is asked once the start's first compile and
			// run are past (confirmDelay): its process (a shell script
			// and a Python) would take the CPU they need.
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				select {
				case <-time.After(confirmDelay):
				case <-e.bg.Done():
					return
				}
				py, err := confirm(e.bg)
				e.confirmLater(sw, py, err)
			}()
			return nil
		}
		ask() // the remembered interpreter did not start: ask now, and wait
	}
	var a answer
	select {
	case a = <-confirmed:
	case <-ctx.Done():
		a.err = context.Cause(ctx)
	}
	switch {
	case a.err != nil:
		if startErr == nil {
			e.pool.Stop(ctx)
		}
		return a.err
	case a.py == e.interpreter():
		if startErr != nil {
			return fmt.Errorf("start kernels: %w", startErr)
		}
		return nil
	}
	was := e.interpreter()
	e.log.Info("python: the launcher now runs another interpreter; starting the kernels on it",
		"was", was.Path+" "+was.Version, "now", a.py.Path+" "+a.py.Version)
	if startErr == nil {
		e.pool.Stop(ctx)
	}
	e.setInterpreter(a.py)
	e.poolCfg.Kernel.Python = a.py
	e.pool = e.cfg.Launcher.Kernels(e.poolCfg)
	e.countContexts()
	e.reportWaits()
	if err := e.pool.Start(e.bg); err != nil {
		return fmt.Errorf("start kernels: %w", err)
	}
	return nil
}

// pythonSwitcher is a pool whose kernels can be moved to another
// interpreter while it runs (kernel.Pool).
type pythonSwitcher interface {
	SetPython(kernel.Interpreter)
}

// confirmLater takes the launcher's answer for a server that did not wait
// for it (startKernels): the same interpreter changes nothing; another
// one restarts every slot on it (a reset, told to clients with the
// reason); a launcher that fails now leaves the kernels on the interpreter
// it named before, which runs, and says so in the log.
func (e *Engine) confirmLater(sw pythonSwitcher, py kernel.Interpreter, err error) {
	if e.bg.Err() != nil {
		return
	}
	was := e.interpreter()
	switch {
	case err != nil:
		e.log.Error("python: asking the launcher again failed; the kernels keep running the interpreter it named before",
			"python", was.Path+" "+was.Version, "err", err)
		return
	case py == was:
		return
	}
	e.log.Info("python: the launcher now runs another interpreter; restarting the kernels on it",
		"was", was.Path+" "+was.Version, "now", py.Path+" "+py.Version)
	e.setInterpreter(py)
	sw.SetPython(py)
	reason := fmt.Sprintf("python: the launcher now runs %s (%s), not %s", py.Path, py.Version, was.Path)
	for i := range e.pool.Size() {
		if e.pool.Retired(i) {
			continue
		}
		if err := e.pool.Restart(e.bg, i, reason); err != nil && e.bg.Err() == nil {
			e.log.Warn("python: restarting a kernel on the new interpreter failed; its slot keeps trying", "slot", i, "err", err)
		}
	}
}

// interpreter is the interpreter kernels start on (see python).
func (e *Engine) interpreter() kernel.Interpreter {
	e.pythonMu.Lock()
	defer e.pythonMu.Unlock()
	return e.python
}

func (e *Engine) setInterpreter(py kernel.Interpreter) {
	e.pythonMu.Lock()
	defer e.pythonMu.Unlock()
	e.python = py
}

// Stop stops the watcher, cancels running jobs (ErrShutdown), stops the
// kernels (SIGTERM, grace, SIGKILL; the kill comes at once when ctx ends)
// and waits for every goroutine of the engine. It is idempotent.
func (e *Engine) Stop(ctx context.Context) error {
	e.lifeMu.Lock()
	if !e.started || e.stopped {
		e.lifeMu.Unlock()
		return nil
	}
	e.stopped = true
	e.lifeMu.Unlock()

	var errs []error
	if e.watcher != nil {
		errs = append(errs, e.watcher.Stop(ctx))
	}
	errs = append(errs, e.queue.Stop(ctx))
	errs = append(errs, e.pool.Stop(ctx))
	e.clients.stopGrace()
	e.stopBg()
	e.wg.Wait()
	e.streamsMu.Lock()
	for _, s := range e.streams {
		s.close()
	}
	e.streamsMu.Unlock()
	e.ws.Close()
	return errors.Join(errs...)
}

// running reports whether the engine accepts calls.
func (e *Engine) checkRunning() error {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if !e.started || e.stopped {
		return ErrNotStarted
	}
	return nil
}

// goBackground runs f on a goroutine the engine owns (Stop waits for it).
func (e *Engine) goBackground(f func(ctx context.Context)) {
	e.lifeMu.Lock()
	defer e.lifeMu.Unlock()
	if e.stopped {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f(e.bg)
	}()
}

// apply turns a call into jobs: the plan is built from the state after the
// call's synchronous change, the EnsureCompiled keeps only modules that some
// kernel does not have in their current version, and the queue aborts and
// enqueues atomically.
func (e *Engine) apply(call jobs.Call) error {
	e.applyMu.Lock()
	defer e.applyMu.Unlock()
	cs, err := e.jobContexts()
	if err != nil {
		return err
	}
	plan, err := call.Plan(cs)
	if err != nil {
		return err
	}
	if edit, ok := call.(jobs.Edit); ok {
		// Runs the edit affects whose running statement it leaves alone
		// stop at their next statement boundary instead of being
		// interrupted (DESIGN.md "Edit a file").
		plan.Aborts = e.softStopRuns(edit.Modules, plan.Aborts)
	}
	if edit, ok := call.(jobs.Edit); ok && !edit.Modules.IsEmpty() {
		// Every kernel gets the changed modules with its next compile,
		// also those this plan does not compile on (no context there is
		// affected): a module they have in service must not stay old.
		e.sources.markDirty(edit.Modules.Items())
	}
	if len(plan.Executes) > 0 && len(plan.EnsureCompiled.Slots) > 0 {
		// Edits made with execute:false are compiled before anything runs.
		for _, m := range e.sources.takeDeferred() {
			plan.EnsureCompiled.Modules.Union(jobs.SetOf(jobs.Module(m)))
		}
	}
	plan.EnsureCompiled.Modules = e.staleModules(plan.EnsureCompiled.Modules, cs)
	if err := plan.Validate(); err != nil {
		return err // before the statuses below: nothing is queued
	}
	// Status invariant: a context's status is set to queued BEFORE its
	// Execute is in the queue, never after. From the moment the queue has
	// it, the Execute may start (running) and end (idle/failed) at once;
	// a queued written after that would be the last word, and a context
	// that ran would stay "queued" for good. Written before, every later
	// write is the Execute's own, so the last one is its end. (The queue
	// refuses the plan only when it is stopping; the statuses then do not
	// matter any more.)
	for i := range plan.Executes {
		// Best effort: the context may be destroyed meanwhile.
		_ = e.store.SetStatus(protocol.ContextID(plan.Executes[i].Context), contexts.StatusQueued)
	}
	if err := e.queue.Apply(plan); err != nil {
		return err
	}
	if f := e.afterEnqueue.Load(); f != nil {
		(*f)()
	}
	return nil
}

// jobContexts is the state the translations read.
func (e *Engine) jobContexts() (jobs.Contexts, error) {
	all, err := e.store.Contexts(nil)
	if err != nil {
		return nil, err
	}
	cs := make(jobs.Contexts, len(all))
	type closure struct {
		mods  jobs.ModuleSet
		known bool
	}
	closures := make(map[string]closure)
	for _, c := range all {
		info := jobs.ContextInfo{Slot: jobs.Slot(c.KernelSlot), StackEmpty: true}
		stack, err := e.store.Stack(nil, c.ID)
		if err == nil && len(stack) > 0 {
			info.StackEmpty = false
			info.BottomModule = jobs.Module(stack[0].Item.MethodPointer.Module)
			// Batch runs never edit: their contexts need no closure.
			if !e.cfg.Batch {
				cl, ok := closures[string(info.BottomModule)]
				if !ok {
					mods, known := e.importClosure(string(info.BottomModule))
					cl = closure{jobs.SetOf(mods...), known}
					closures[string(info.BottomModule)] = cl
				}
				info.Imports, info.ImportsKnown = cl.mods, cl.known
			}
		}
		cs[jobs.ContextID(c.ID)] = info
	}
	return cs, nil
}

// journalEnv is the kernels' environment for the value journal
// (Config.ValueJournal; kernel/python/ripple_kernel/journal.py reads it).
func journalEnv(cfg Config) []string {
	if cfg.ValueJournal == "" || cfg.Batch {
		// Empty, over whatever the server's own environment says.
		return []string{"RIPPLE_VALUES_DB="}
	}
	env := []string{"RIPPLE_VALUES_DB=" + cfg.ValueJournal}
	switch {
	case cfg.ValueJournalIdle < 0:
		env = append(env, "RIPPLE_VALUES_IDLE_MS=0")
	case cfg.ValueJournalIdle > 0:
		env = append(env, fmt.Sprintf("RIPPLE_VALUES_IDLE_MS=%d", cfg.ValueJournalIdle.Milliseconds()))
	}
	return env
}

// countContexts gives a pool that starts kernels on demand and stops idle
// ones (ContextCounting: the slurm launcher) the count of contexts on a
// slot, read from the store.
func (e *Engine) countContexts() {
	cc, ok := e.pool.(ContextCounting)
	if !ok {
		return
	}
	cc.CountContexts(func(slot int) int {
		cs, err := e.store.ContextsOnSlot(nil, slot)
		if err != nil {
			return 0
		}
		return len(cs)
	})
}
