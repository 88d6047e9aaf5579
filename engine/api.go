package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// Client is how the engine reaches one connected client (a WebSocket
// session, the watch terminal view, the batch runner). Notify must not
// block: the transport queues the notification and applies its own memory
// bound (dropping output, keeping the latest update per expression).
// params is one of the protocol package's notification params types, by
// value (never a pointer).
type Client interface {
	Notify(method string, params any)
}

// Config configures an Engine.
type Config struct {
	// Root is the project directory.
	Root string
	// Python is the --python flag ("" = RIPPLE_PYTHON, .venv, python3).
	Python string
	// Kernels is the pool size (0 = number of CPUs).
	Kernels int
	// Launcher provides the kernels (nil = LocalLauncher, children of
	// this process; docs/scale-out.md).
	Launcher Launcher
	// Logger receives structured logs (nil = discard).
	Logger *slog.Logger
	// FlushInterval is how often expression updates of a context are
	// flushed to clients (0 = 20 ms).
	FlushInterval time.Duration
	// DisconnectGrace is how long a disconnected client's contexts are kept
	// (0 = 5 min).
	DisconnectGrace time.Duration
	// InterruptTimeout is how long an interrupt may take before the kernel
	// is restarted (0 = 2 s).
	InterruptTimeout time.Duration
	// Watch starts a file watcher on Root: changes on disk become edits.
	Watch bool
	// WatchDebounce is the watcher's debounce (0 = 50 ms).
	WatchDebounce time.Duration
	// ExecuteTimeout bounds every Execute job (0 = none); a run past it ends
	// with executionFailed {kind: "timeout"}. The clock starts when the
	// context's kernel is ready to take the run: waiting for a kernel to
	// boot or restart (after another context crashed it) is not the run's
	// time.
	ExecuteTimeout time.Duration
	// CompileTimeout bounds the load of a module's top level (0 = 10 s,
	// PROTOCOL.md 5.1): past it the load is interrupted (the kernel
	// restarted if the interrupt does not take) and the module reported
	// broken until it changes.
	CompileTimeout time.Duration
	// RestartTimeout bounds runtime/restartKernel (0 = CompileTimeout +
	// 20 s): a kernel that is not back by then is answered with 5001.
	RestartTimeout time.Duration
	// StateLog, if set, receives every acknowledged buffer and context
	// change before the reply (durable.go); RestoreBuffers and
	// RestoreContexts bring them back at start.
	StateLog StateLog
	// StateStatus, if set, is runtime/status's state: whether .ripple/
	// records changes now, and the damage found there at start.
	StateStatus func() *protocol.StateStatus
	// ValueJournal, if set, is the file of the value journal (durable
	// values, kernel/python/ripple_kernel/journal.py): every kernel keeps its frames'
	// computed values there and a frame new to a kernel (after a restart
	// of the server or of the kernel) gets them back instead of running
	// its statements again. Empty: no journal (ripple run, tests).
	ValueJournal string
	// ValueJournalIdle is how long a kernel waits for a next request
	// before it writes the journal (0 = 150 ms). Negative: right after
	// each result, done before the kernel reads its next request, so a
	// test knows the journal holds a run once a later request returned.
	ValueJournalIdle time.Duration
	// KernelEnv holds extra "KEY=value" entries of every kernel's
	// environment, and KernelPreload modules every kernel imports at
	// start (kernel.Config's Env and Preload): ripple jupyter kernel
	// gives its kernels the notebook's directory and its stdin socket.
	KernelEnv     []string
	KernelPreload []string
	// Batch turns off the automatic re-runs after a kernel restart (ripple
	// run reports a crash instead of running the entry again) and the warm
	// spare kernel, and takes the project as a snapshot: a module, once
	// compiled, is not looked up and read from disk again at every push
	// (as pytest imports a test module once; ripple run pushes thousands).
	Batch bool
}

// The methods below are the engine's API, one per client protocol method
// (../shared/PROTOCOL.md section 3). clientID is the id the client gave in
// session/initProtocolConnection. Errors map to protocol codes with
// ProtocolError. Each returns after the synchronous state change; the jobs
// it enqueues run afterwards.

// Status answers runtime/status.
func (e *Engine) Status(ctx context.Context) (protocol.RuntimeStatusResult, error) {
	if err := e.checkRunning(); err != nil {
		return protocol.RuntimeStatusResult{}, err
	}
	res := protocol.RuntimeStatusResult{Kernels: []protocol.KernelStatus{}, Agents: []protocol.AgentStatus{}}
	for _, k := range e.pool.Status() {
		if k.Slot < 0 {
			continue // the warm spare serves no context
		}
		ks := protocol.KernelStatus{ID: k.Slot, PID: k.PID, State: k.State, Contexts: []protocol.ContextID{}, Launcher: e.cfg.Launcher.Name()}
		if ak, ok := e.pool.(AgentKernels); ok {
			ks.Launcher = protocol.LauncherLocal
			if ks.Agent = ak.SlotAgent(k.Slot); ks.Agent != nil {
				ks.Launcher = protocol.LauncherAgents
				if e.cfg.Launcher.Name() == protocol.LauncherSlurm && ks.Agent.Launcher == protocol.LauncherSlurm {
					ks.Launcher = protocol.LauncherSlurm // an agent of a job it submitted
				}
			}
		}
		if cs, err := e.store.ContextsOnSlot(nil, k.Slot); err == nil {
			for _, c := range cs {
				ks.Contexts = append(ks.Contexts, c.ID)
			}
		}
		res.Kernels = append(res.Kernels, ks)
	}
	if ak, ok := e.pool.(AgentKernels); ok {
		res.Agents = ak.Agents()
	}
	qs := e.queue.Status()
	res.Queue = protocol.QueueStatus{Pending: qs.Pending(), Running: qs.Running()}
	if e.cfg.StateStatus != nil {
		res.State = e.cfg.StateStatus()
	}
	return res, nil
}

// Compile brings modules up to date in every kernel ahead of the runs that
// need them (not a client protocol method). It enqueues one EnsureCompiled
// of the modules that some kernel does not have in their current version
// and returns without waiting: by the queue's rule 5 it runs before any
// Execute enqueued after it. A module not in the project is refused with
// ErrModuleNotFound and nothing is enqueued.
//
// In batch mode it only announces the modules, which ripple run does with
// every entry's module before its first push: a push finds its module
// current and enqueues no EnsureCompiled of its own (being exclusive, it
// would wait for every running entry to end), and each kernel compiles a
// module right before its first run there that needs it, outside the
// run's time (loadEntryModule; a compile failure fails that run with
// compileError and the diagnostic). Compiling ahead would make every
// entry wait for every kernel to compile every module, the ones its kernel
// never runs included.
func (e *Engine) Compile(ctx context.Context, modules []string) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	mods := make([]jobs.Module, 0, len(modules))
	for _, m := range modules {
		if _, err := e.ws.ModulePath(m); err != nil {
			return fmt.Errorf("%w: %s", ErrModuleNotFound, m)
		}
		mods = append(mods, jobs.Module(m))
	}
	if e.cfg.Batch {
		e.sources.addSnapshot(modules)
		return nil
	}
	stale := e.staleModules(jobs.SetOf(mods...), nil)
	if stale.IsEmpty() {
		return nil
	}
	return e.queue.Apply(jobs.Plan{EnsureCompiled: jobs.EnsureCompiled{Modules: stale}})
}

// RestartKernel restarts the kernel of a context (runtime/restartKernel):
// every context on it is recomputed from scratch.
func (e *Engine) RestartKernel(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	e.subscribe(clientID, id)
	c, err := e.store.Context(nil, id)
	if err != nil {
		return err
	}
	// Restart is reset (PROTOCOL.md: the values of every context on that
	// kernel are recomputed from scratch): each context on the slot runs
	// its next run with everything invalidated, so the value journal,
	// which serves the restarts nobody asked for (a crash, a server
	// restart), does not hand the old values back.
	if cs, err := e.store.ContextsOnSlot(nil, c.KernelSlot); err == nil {
		for _, other := range cs {
			_ = e.store.Invalidate(other.ID, protocol.InvalidatedExpressions{All: true})
			// The user asked for these re-runs: they are explicit
			// (PROTOCOL.md 8.2), also for a context whose last run was
			// typing's.
			e.policies.restarted(other.ID)
		}
	}
	// Bounded: a kernel that cannot come back (its start keeps failing) is
	// answered with 5001 rather than never; the slot goes on trying.
	rctx, cancel := context.WithTimeoutCause(ctx, e.cfg.RestartTimeout,
		fmt.Errorf("the kernel did not come back within %s", e.cfg.RestartTimeout))
	defer cancel()
	if err := e.pool.Restart(rctx, c.KernelSlot, "restart requested by client "+clientID); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("restartKernel: %w", context.Cause(ctx))
		}
		return fmt.Errorf("%w: slot %d: %w", ErrKernelUnavailable, c.KernelSlot, err)
	}
	return nil
}

// ReadFile answers file/read.
func (e *Engine) ReadFile(ctx context.Context, clientID, path string) (protocol.FileReadResult, error) {
	text, err := e.ws.Read(path)
	if err != nil {
		return protocol.FileReadResult{}, err
	}
	return protocol.FileReadResult{Contents: text}, nil
}

// WriteFile answers file/write: an edit of the file (a module it changes is
// recompiled and every context re-run); a clean open buffer takes the new
// contents and its clients get text/didChange.
func (e *Engine) WriteFile(ctx context.Context, clientID string, p protocol.FileWriteParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	kind := fileEventKind(e.ws.Exists(string(p.Path)))
	upd, err := e.ws.Write(string(p.Path), p.Contents)
	if err != nil {
		return err
	}
	e.broadcast(protocol.NotifyFileEvent, protocol.FileEventParams{Path: p.Path, Kind: kind})
	if upd != nil {
		e.bufferReloaded(*upd, "")
	}
	return e.edited(string(p.Path), jobs.OriginClient)
}

// ListFiles answers file/list.
func (e *Engine) ListFiles(ctx context.Context, clientID, path string) (protocol.FileListResult, error) {
	entries, err := e.ws.List(path)
	if err != nil {
		return protocol.FileListResult{}, err
	}
	res := protocol.FileListResult{Entries: make([]protocol.FileEntry, 0, len(entries))}
	for _, en := range entries {
		res.Entries = append(res.Entries, protocol.FileEntry{Path: protocol.Path(en.Path), Kind: protocol.FileKind(en.Kind)})
	}
	return res, nil
}

// DeleteFile answers file/delete (an edit when it removes a module).
func (e *Engine) DeleteFile(ctx context.Context, clientID, path string) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	files, err := e.ws.FilesAt(path)
	if err != nil {
		return err
	}
	if err := e.ws.Delete(path); err != nil {
		return err
	}
	for _, f := range files {
		e.broadcast(protocol.NotifyFileEvent, protocol.FileEventParams{Path: protocol.Path(f), Kind: protocol.FileRemoved})
	}
	return e.edited(path, jobs.OriginClient)
}

// OpenFile answers text/openFile.
func (e *Engine) OpenFile(ctx context.Context, clientID, path string) (protocol.OpenFileResult, error) {
	content, version, err := e.ws.OpenBuffer(workspace.ClientID(clientID), path)
	if err != nil {
		return protocol.OpenFileResult{}, err
	}
	e.recordBuffer(ctx, path) // a new client of a buffer with unsaved edits
	e.tellChangedWhileDown(clientID, path)
	res := protocol.OpenFileResult{Content: content, CurrentVersion: string(version)}
	// Unsaved work a stopped server kept (7.4): offered back, never applied.
	if r, err := e.ws.Recovery(path); err != nil {
		e.log.Warn("unreadable recovery file", "path", path, "err", err)
	} else if r != nil && r.Version != version { // not what the buffer holds already (restored from the state log)
		res.Recovered = &protocol.RecoveredBuffer{Content: r.Content, Version: string(r.Version),
			SavedAt: r.SavedAt.UTC().Format(time.RFC3339), Path: r.Path}
	}
	return res, nil
}

// ApplyEdit answers text/applyEdit; other clients with the file open get
// text/didChange. With execute:false the module is compiled by the next
// edit or recompute.
func (e *Engine) ApplyEdit(ctx context.Context, clientID string, p protocol.ApplyEditParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	edits := make([]workspace.TextEdit, len(p.Edit.Edits))
	for i, te := range p.Edit.Edits {
		edits[i] = workspace.TextEdit{Range: toWorkspaceRange(te.Range), Text: te.Text}
	}
	res, err := e.ws.ApplyEdit(workspace.ClientID(clientID), string(p.Edit.Path), edits,
		workspace.Version(p.Edit.OldVersion), workspace.Version(p.Edit.NewVersion))
	if err != nil {
		return err
	}
	// A run request (no edits, the version unchanged: what the page and
	// ripple lsp send when typing pauses) changes nothing others must apply.
	changed := len(p.Edit.Edits) > 0 || p.Edit.OldVersion != p.Edit.NewVersion
	if len(res.Others) > 0 && changed {
		e.notifyClients(clientIDs(res.Others), protocol.NotifyTextDidChange,
			protocol.DidChangeParams{Edits: []protocol.FileEdit{p.Edit.Clone()}})
	}
	var runErr error
	if p.Execute {
		runErr = e.edited(string(p.Edit.Path), jobs.OriginTyping) // automatic: it may hold effects
	} else if name, ok := workspace.ModuleName(string(p.Edit.Path)); ok {
		e.sources.deferModules(name)
	}
	// The edit is in the state log before the reply (durable state, 8.5),
	// but its run does not wait for the fsync: the jobs are queued first, so
	// the log's write overlaps the compile and run. The run's notifications
	// reach this client after the reply (the transport holds them: 8.6's
	// causal order), so they wait for the fsync only when the run is faster.
	if err := e.recordBuffer(ctx, string(p.Edit.Path)); err != nil {
		e.undoEdit(clientID, string(p.Edit.Path), res) // PROTOCOL.md 8.5: as it was
		return err
	}
	return runErr
}

// SaveFile answers text/save: the buffer is written atomically. What runs
// does not change (the kernel already runs the buffer), so nothing is
// scheduled unless edits were deferred.
func (e *Engine) SaveFile(ctx context.Context, clientID string, p protocol.SaveParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	kind := fileEventKind(e.ws.Exists(string(p.Path)))
	if err := e.ws.Save(workspace.ClientID(clientID), string(p.Path), workspace.Version(p.CurrentVersion)); err != nil {
		return err
	}
	e.recordBuffer(ctx, string(p.Path))
	e.broadcast(protocol.NotifyFileEvent, protocol.FileEventParams{Path: p.Path, Kind: kind})
	return nil
}

// fileEventKind is the file/event kind of a write to a file that existed
// or not (PROTOCOL.md 4: file/event reports changes from any source, the
// engine's own writes included; the watcher ignores those, so they are
// reported here).
func fileEventKind(existed bool) protocol.FileEventKind {
	if existed {
		return protocol.FileModified
	}
	return protocol.FileAdded
}

// CloseFile answers text/closeFile. Unsaved edits of the last client are
// dropped: the module goes back to its disk version.
func (e *Engine) CloseFile(ctx context.Context, clientID, path string) error {
	// Closing a buffer with unsaved edits changes what a restart restores;
	// a clean one records nothing, so a full disk does not keep it open.
	if dirty, _ := e.ws.Dirty(path); dirty {
		if err := e.stateGate(); err != nil {
			return err
		}
	}
	reverted, err := e.ws.CloseBuffer(workspace.ClientID(clientID), path)
	if err != nil {
		return err
	}
	e.recordBuffer(ctx, path)
	if reverted {
		return e.edited(path, jobs.OriginClient)
	}
	return nil
}

// edited schedules the jobs of an edit of path: abort everything, compile
// the module, run every context. Files that are not modules schedule
// nothing (no statement can depend on them through the caches).
func (e *Engine) edited(path string, origin jobs.Origin) error {
	name, ok := workspace.ModuleName(path)
	if !ok {
		return nil
	}
	return e.apply(jobs.Edit{Modules: jobs.SetOf(jobs.Module(name)), Origin: origin})
}

// CreateContext answers executionContext/create (idempotent: an existing id
// gains the client as an owner).
func (e *Engine) CreateContext(ctx context.Context, clientID string, p protocol.CreateContextParams) (protocol.CreateContextResult, error) {
	if err := e.checkRunning(); err != nil {
		return protocol.CreateContextResult{}, err
	}
	if err := e.stateGate(); err != nil {
		return protocol.CreateContextResult{}, err
	}
	id := p.ContextID
	if id == "" {
		id = protocol.NewContextID()
	}
	_, created, err := e.store.CreateContext(id, clientID)
	if err != nil {
		return protocol.CreateContextResult{}, err
	}
	if created {
		_, err := e.assignSlot(id)
		if errors.Is(err, contexts.ErrNoSlot) {
			_ = e.store.DestroyContext(id)
			return protocol.CreateContextResult{}, fmt.Errorf("%w: %w", ErrKernelUnavailable, err)
		}
		if err != nil {
			return protocol.CreateContextResult{}, err
		}
	}
	if err := e.recordContext(ctx, id); err != nil { // created, or a new owner
		if created {
			_ = e.store.DestroyContext(id) // PROTOCOL.md 8.5: as it was
		}
		return protocol.CreateContextResult{}, err
	}
	return protocol.CreateContextResult{ContextID: id}, nil
}

// assignSlot gives context id an open kernel slot (it keeps its own if that
// is open), the least loaded; contexts.ErrNoSlot when none is open.
func (e *Engine) assignSlot(id protocol.ContextID) (int, error) {
	e.slotsMu.Lock()
	defer e.slotsMu.Unlock()
	return e.store.AssignSlotAmong(id, e.pool.Size(), func(slot int) bool { return e.retired[slot] || e.pool.Retired(slot) })
}

// RetireIdleKernels closes every kernel slot that serves no context: its
// kernel is stopped in the background, and new contexts go to the other
// slots (none left: CreateContext fails with ErrKernelUnavailable). A batch
// run calls it once no entry is left to start, so that each kernel exits
// while the others run their last entries rather than all at the end. It
// returns the slots it closed.
func (e *Engine) RetireIdleKernels() []int {
	if e.checkRunning() != nil {
		return nil
	}
	e.slotsMu.Lock()
	defer e.slotsMu.Unlock()
	// While a slot that has contexts has no kernel up (starting it,
	// restarting it, or given up on it), its contexts may yet move to
	// another slot: keep every slot open.
	for _, k := range e.pool.Status() {
		if k.Slot < 0 || k.State == kernel.StateReady || k.State == kernel.StateBusy {
			continue
		}
		if cs, err := e.store.ContextsOnSlot(nil, k.Slot); err != nil || len(cs) > 0 {
			return nil
		}
	}
	var closed []int
	for slot := range e.pool.Size() {
		if e.retired[slot] {
			continue
		}
		if cs, err := e.store.ContextsOnSlot(nil, slot); err != nil || len(cs) > 0 {
			continue
		}
		if e.runs.busy(slot) {
			continue // a destroyed context's run is still ending
		}
		e.retired[slot] = true
		if err := e.pool.Retire(slot); err != nil {
			e.log.Warn("retire kernel", "slot", slot, "err", err)
		}
		closed = append(closed, slot)
	}
	return closed
}

// ContextStatus says where a context is in its run cycle: a run whose
// status is running has been handed to its kernel's slot (batch runs tell
// an interrupted entry from one that never started by it; notifications
// may still be on their way).
func (e *Engine) ContextStatus(id protocol.ContextID) (contexts.Status, error) {
	if err := e.checkRunning(); err != nil {
		return "", err
	}
	c, err := e.store.Context(nil, id)
	if err != nil {
		return "", err
	}
	return c.Status, nil
}

// DestroyContext answers executionContext/destroy: its jobs are aborted and
// the kernel forgets its values.
func (e *Engine) DestroyContext(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	return e.destroy(id)
}

func (e *Engine) destroy(id protocol.ContextID) error {
	c, err := e.store.Context(nil, id)
	if err != nil {
		return err
	}
	if err := e.store.DestroyContext(id); err != nil {
		return err
	}
	e.recordContext(context.Background(), id)
	e.crashes.Reset(string(id))
	e.policies.forget(id)
	if err := e.queue.AbortContext(jobs.ContextID(id), jobs.ErrContextDestroyed); err != nil && !errors.Is(err, jobs.ErrShutdown) {
		e.log.Warn("abort destroyed context", "context", id, "err", err)
	}
	e.dropStream(id)
	e.queueDrops(c.KernelSlot, contextDrop{ContextID: id, Generation: c.CreateIndex})
	return nil
}

// Push answers executionContext/push. An ExplicitCall must name a module of
// the project; a LocalCall must name a statement of the top frame whose
// last value was a direct call of a project function.
func (e *Engine) Push(ctx context.Context, clientID string, p protocol.PushParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	e.subscribe(clientID, p.ContextID)
	item := p.StackItem
	if item.Type == protocol.ExplicitCall && !e.snapshotted(item.MethodPointer.Module) {
		if _, err := e.ws.ModulePath(item.MethodPointer.Module); err != nil {
			return fmt.Errorf("%w: %s (in %s)", ErrModuleNotFound, item.MethodPointer.Module, item.MethodPointer)
		}
	}
	if item.Type == protocol.ExplicitCall && item.MethodPointer.IsScript() &&
		(len(item.PositionalArgumentsExpressions) > 0 || item.ThisArgumentExpression != "") {
		return fmt.Errorf("%w: %s runs module %s as a script: it takes no arguments",
			ErrInvalidStackItem, item.MethodPointer, item.MethodPointer.Module)
	}
	if item.Type == protocol.LocalCall {
		top, err := e.store.TopFrame(nil, p.ContextID)
		if errors.Is(err, contexts.ErrEmptyStack) {
			// PROTOCOL.md 3: a LocalCall on an empty stack is 2004, not 2003.
			return fmt.Errorf("%w: context %s: a LocalCall needs a non-empty stack", ErrInvalidStackItem, p.ContextID)
		}
		if err != nil {
			return err
		}
		u, err := e.store.ExpressionUpdate(nil, p.ContextID, top.Depth, item.ExpressionID)
		if err != nil || u.Update.MethodCall == nil {
			return fmt.Errorf("%w: %s of context %s is not a call of a project function", ErrInvalidStackItem, item.ExpressionID, p.ContextID)
		}
	}
	if _, err := e.store.Push(p.ContextID, item); err != nil {
		return err
	}
	if err := e.recordContext(ctx, p.ContextID); err != nil {
		_, _ = e.store.Pop(p.ContextID) // PROTOCOL.md 8.5: as it was
		return err
	}
	e.crashes.Reset(string(p.ContextID))
	return e.apply(jobs.Push{Context: jobs.ContextID(p.ContextID)})
}

// Pop answers executionContext/pop: the caller frame's updates are sent
// again (fromCache true), then it runs to bring them up to date.
func (e *Engine) Pop(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	e.subscribe(clientID, id)
	popped, err := e.store.Pop(id)
	if err != nil {
		return err
	}
	if err := e.recordContext(ctx, id); err != nil {
		_, _ = e.store.Push(id, popped.Item) // PROTOCOL.md 8.5: as it was
		return err
	}
	if top, err := e.store.TopFrame(nil, id); err == nil {
		e.resend(id, top)
	}
	e.crashes.Reset(string(id))
	return e.apply(jobs.Pop{Context: jobs.ContextID(id)})
}

// resend sends the latest updates of a frame as fromCache.
func (e *Engine) resend(id protocol.ContextID, f *contexts.Frame) {
	us, err := e.currentFrameUpdates(id, f)
	if err != nil || len(us) == 0 {
		return
	}
	sortBySource(us)
	for i := range us {
		us[i].FromCache = true
	}
	e.stream(id).send(protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{ContextID: id, KernelID: e.kernelOf(id), Updates: us})
}

// kernelOf is the kernel a context is on: the kernelId of what is sent
// about it outside a run (PROTOCOL.md 7.5); -1 once it is destroyed, when
// nothing is sent about it.
func (e *Engine) kernelOf(id protocol.ContextID) int {
	c, err := e.store.Context(nil, id)
	if err != nil {
		return -1
	}
	return c.KernelSlot
}

// Recompute answers executionContext/recompute.
func (e *Engine) Recompute(ctx context.Context, clientID string, p protocol.RecomputeParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	e.subscribe(clientID, p.ContextID)
	if _, err := e.store.Context(nil, p.ContextID); err != nil {
		return err
	}
	if p.InvalidatedExpressions != nil && len(p.InvalidatedExpressions.IDs) > 0 {
		stack, err := e.store.Stack(nil, p.ContextID)
		if err != nil {
			return err
		}
		for _, x := range p.InvalidatedExpressions.IDs {
			if !e.expressionKnown(p.ContextID, stack, x) {
				return fmt.Errorf("%w: %s is not a statement of any frame of context %s", ErrExpressionNotFound, x, p.ContextID)
			}
		}
	}
	if p.InvalidatedExpressions != nil && !p.InvalidatedExpressions.Empty() {
		if err := e.store.Invalidate(p.ContextID, *p.InvalidatedExpressions); err != nil {
			return err
		}
	}
	e.crashes.Reset(string(p.ContextID))
	// The invalidation travels in the store (TakePending), which survives
	// the job being superseded before it runs.
	return e.apply(jobs.Recompute{Context: jobs.ContextID(p.ContextID)})
}

// Interrupt answers executionContext/interrupt: the context's running or
// queued run ends with executionFailed {kind:"interrupted"}.
func (e *Engine) Interrupt(ctx context.Context, clientID string, id protocol.ContextID) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	e.subscribe(clientID, id)
	if _, err := e.store.Context(nil, id); err != nil {
		return err
	}
	return e.queue.AbortContext(jobs.ContextID(id), jobs.ErrInterrupted)
}

// AttachVisualization answers executionContext/attachVisualization.
func (e *Engine) AttachVisualization(ctx context.Context, clientID string, p protocol.AttachVisualizationParams) error {
	if err := e.stateGate(); err != nil {
		return err
	}
	err := e.visualize(clientID, p.VisualizationID, p.ExpressionID, p.VisualizationConfig, false, jobs.AttachVisualization{
		Context: jobs.ContextID(p.VisualizationConfig.ExecutionContextID), Expression: jobs.ExpressionID(p.ExpressionID)})
	if err == nil {
		if err = e.recordContext(ctx, p.VisualizationConfig.ExecutionContextID); err != nil {
			_ = e.store.DetachVisualization(p.VisualizationConfig.ExecutionContextID, p.VisualizationID, p.ExpressionID)
		}
	}
	return err
}

// ModifyVisualization answers executionContext/modifyVisualization. On
// error the old configuration stays in force.
func (e *Engine) ModifyVisualization(ctx context.Context, clientID string, p protocol.ModifyVisualizationParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	e.subscribe(clientID, p.VisualizationConfig.ExecutionContextID)
	v, err := e.store.Visualization(nil, p.VisualizationID)
	if err != nil {
		return err
	}
	if p.VisualizationConfig.ExecutionContextID != "" && p.VisualizationConfig.ExecutionContextID != v.ContextID {
		return fmt.Errorf("%w: visualization %s belongs to context %s, not %s", ErrVisualizationExpression,
			p.VisualizationID, v.ContextID, p.VisualizationConfig.ExecutionContextID)
	}
	if err := e.checkVisualizationExpression(p.VisualizationConfig.Expression); err != nil {
		return err
	}
	if _, err := e.store.ModifyVisualization(p.VisualizationID, p.VisualizationConfig); err != nil {
		return err
	}
	if err := e.recordContext(ctx, v.ContextID); err != nil {
		_, _ = e.store.ModifyVisualization(p.VisualizationID, v.Config) // PROTOCOL.md 8.5: as it was
		return err
	}
	return e.apply(jobs.ModifyVisualization{Context: jobs.ContextID(v.ContextID), Expression: jobs.ExpressionID(v.ExpressionID)})
}

// DetachVisualization answers executionContext/detachVisualization (state
// only).
func (e *Engine) DetachVisualization(ctx context.Context, clientID string, p protocol.DetachVisualizationParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	e.subscribe(clientID, p.ExecutionContextID)
	v, verr := e.store.Visualization(nil, p.VisualizationID)
	if err := e.store.DetachVisualization(p.ExecutionContextID, p.VisualizationID, p.ExpressionID); err != nil {
		return err
	}
	if err := e.recordContext(ctx, p.ExecutionContextID); err != nil {
		if verr == nil { // PROTOCOL.md 8.5: as it was
			_, _ = e.store.AttachVisualization(*v)
		}
		return err
	}
	return nil
}

// ExecuteExpression answers executionContext/executeExpression: a one-shot
// visualization evaluated in the frame's scope right after the expression.
func (e *Engine) ExecuteExpression(ctx context.Context, clientID string, p protocol.ExecuteExpressionParams) error {
	cfg := protocol.VisualizationConfiguration{ExecutionContextID: p.ExecutionContextID, Expression: p.Expression}
	return e.visualize(clientID, p.VisualizationID, p.ExpressionID, cfg, true, jobs.ExecuteExpression{
		Context: jobs.ContextID(p.ExecutionContextID), Expression: jobs.ExpressionID(p.ExpressionID)})
}

func (e *Engine) visualize(clientID string, id protocol.VisualizationID, expr protocol.ExpressionID, cfg protocol.VisualizationConfiguration, oneShot bool, call jobs.Call) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	e.subscribe(clientID, cfg.ExecutionContextID)
	ctxID := cfg.ExecutionContextID
	top, err := e.store.TopFrame(nil, ctxID)
	if err != nil {
		if errors.Is(err, contexts.ErrEmptyStack) {
			return fmt.Errorf("%w: %s: context %s has an empty stack", ErrExpressionNotFound, expr, ctxID)
		}
		return err
	}
	if err := e.checkExpression(ctxID, top, expr); err != nil {
		return err
	}
	if !oneShot {
		if err := e.checkVisualizationExpression(cfg.Expression); err != nil {
			return err
		}
	}
	if _, err := e.store.AttachVisualization(contexts.Visualization{ID: id, ContextID: ctxID, ExpressionID: expr,
		Config: cfg, NeedsInitialData: true, OneShot: oneShot}); err != nil {
		return err
	}
	return e.apply(call)
}

// checkExpression refuses an expression id that cannot belong to the top
// frame: its function must be the frame's.
func (e *Engine) checkExpression(ctxID protocol.ContextID, top *contexts.Frame, expr protocol.ExpressionID) error {
	fn, _, err := expr.Split()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrExpressionNotFound, expr, err)
	}
	want := ""
	switch top.Item.Type {
	case protocol.ExplicitCall:
		want = top.Item.MethodPointer.String()
	case protocol.LocalCall:
		if top.Depth > 0 {
			if u, err := e.store.ExpressionUpdate(nil, ctxID, top.Depth-1, top.Item.ExpressionID); err == nil && u.Update.MethodCall != nil {
				want = u.Update.MethodCall.MethodPointer.String()
			}
		}
	}
	if want != "" && fn.String() != want {
		return fmt.Errorf("%w: %s is not in %s, the top frame of context %s", ErrExpressionNotFound, expr, want, ctxID)
	}
	if !e.expressionKnown(ctxID, []*contexts.Frame{top}, expr) {
		return fmt.Errorf("%w: %s is not a statement of the top frame of context %s", ErrExpressionNotFound, expr, ctxID)
	}
	return nil
}

// expressionKnown reports whether expr may be an expression of one of
// frames (PROTOCOL.md 7.6: unknown ids get 2008). An id the store has
// (a run reported it) is known; else the frame's function's source
// decides (exprids.go), whether or not a run is queued or running. Only
// when the source cannot (a syntax error, a function not found in it, a
// LocalCall frame not reported yet): while the context has a run queued
// or running, or a frame has not run yet, an id the store lacks may be a
// statement an edit just added, so it is accepted (a false 2008 would
// refuse a valid call; the run ignores an id that does not exist).
func (e *Engine) expressionKnown(ctxID protocol.ContextID, frames []*contexts.Frame, expr protocol.ExpressionID) bool {
	for _, f := range frames {
		if _, err := e.store.ExpressionUpdate(nil, ctxID, f.Depth, expr); err == nil {
			return true
		}
	}
	if known, decided := e.expressionKnownStatically(ctxID, frames, expr); decided {
		return known
	}
	// A queued run, or a running one that has not finished (its job may
	// outlive its executionComplete by a moment), may report new ids.
	queued, running := e.queue.Work(jobs.ContextID(ctxID))
	if queued {
		return true
	}
	if running {
		if c, err := e.store.Context(nil, ctxID); err != nil || c.Status == contexts.StatusRunning {
			return true
		}
	}
	for _, f := range frames {
		if us, err := e.store.FrameUpdates(nil, ctxID, f.Depth, 0); err != nil || len(us) == 0 {
			return true
		}
	}
	return false
}

// checkVisualizationExpression refuses a `module:qualname` pointer to a
// module that is not in the project (Python source is checked by the
// kernel, which reports visualizationEvaluationFailed).
func (e *Engine) checkVisualizationExpression(expr string) error {
	if strings.TrimSpace(expr) == "" {
		return fmt.Errorf("%w: empty expression", ErrVisualizationExpression)
	}
	if strings.TrimSpace(expr) == protocol.DisplayVisualization {
		return nil // built in (PROTOCOL.md 7.2)
	}
	if mp, err := protocol.ParseMethodPointer(expr); err == nil && isDottedName(mp.Module) {
		if _, err := e.ws.ModulePath(mp.Module); err != nil {
			return fmt.Errorf("%w: %s: module %s is not in the project", ErrVisualizationExpression, expr, mp.Module)
		}
		return nil
	}
	// A Python expression: one that does not compile is refused now, not
	// at the next run (issue 27). The check runs no code.
	if err := kernel.CheckExpression(context.Background(), e.interpreter(), expr); err != nil {
		if errors.Is(err, kernel.ErrExpressionSyntax) {
			return fmt.Errorf("%w: %q: %s", ErrVisualizationExpression, expr, strings.TrimPrefix(err.Error(), kernel.ErrExpressionSyntax.Error()+": "))
		}
		// The checker could not run: the run reports what is wrong.
	}
	return nil
}

// subscribe makes a connected client that calls a method on a context it
// did not create one of the context's owners, so it receives the
// context's notifications from then on (PROTOCOL.md 7.6: how an editor and
// the web page share a context). Unknown contexts are left to the method's
// own error.
func (e *Engine) subscribe(clientID string, id protocol.ContextID) {
	if clientID == "" || id == "" {
		return
	}
	c, err := e.store.Context(nil, id)
	if err != nil || c.HasOwner(clientID) {
		return
	}
	if e.clients.connected(clientID) {
		if e.store.AddOwner(id, clientID) == nil {
			e.replayTo(clientID, id) // a second tab: what the statements printed (replay.go)
		}
	}
}
