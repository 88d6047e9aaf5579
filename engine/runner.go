package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/queue"
)

// runner is the engine as the queue sees it (queue.Runner).
type runner struct{ e *Engine }

func (r runner) EnsureCompiled(ctx context.Context, job *jobs.EnsureCompiled) error {
	return r.e.ensureCompiled(ctx, job)
}

func (r runner) Execute(ctx context.Context, job *jobs.Execute) error {
	return r.e.execute(ctx, job)
}

// kernelFrame is a stack item as the kernel's execute takes it
// (kernel/PROTOCOL.md).
type kernelFrame struct {
	Type                           protocol.StackItemType `json:"type"`
	Module                         string                 `json:"module,omitempty"`
	DefinedOnType                  string                 `json:"definedOnType,omitempty"`
	Name                           string                 `json:"name,omitempty"`
	ThisArgumentExpression         string                 `json:"thisArgumentExpression,omitempty"`
	PositionalArgumentsExpressions []string               `json:"positionalArgumentsExpressions,omitempty"`
	ExpressionID                   protocol.ExpressionID  `json:"expressionId,omitempty"`
}

type kernelVisualization struct {
	VisualizationID                protocol.VisualizationID `json:"visualizationId"`
	ExpressionID                   protocol.ExpressionID    `json:"expressionId"`
	Expression                     string                   `json:"expression"`
	PositionalArgumentsExpressions []string                 `json:"positionalArgumentsExpressions"`
	Apply                          bool                     `json:"apply"`
	OneShot                        bool                     `json:"oneshot"`
}

type executeParams struct {
	ContextID protocol.ContextID `json:"contextId"`
	// Generation is the context's CreateIndex (see contextDrop).
	Generation uint64 `json:"generation"`
	// Drop are destroyed contexts of this kernel to forget first.
	Drop           []contextDrop         `json:"drop,omitempty"`
	Stack          []kernelFrame         `json:"stack"`
	Invalidate     any                   `json:"invalidate"` // null, "all" or [ids]
	Wanted         []string              `json:"wanted"`     // null = all
	Visualizations []kernelVisualization `json:"visualizations"`
	// StopAtSkip: a skip or xfail outcome ends the run (batch mode).
	StopAtSkip bool `json:"stopAtSkip,omitempty"`
	// Finalize: run the tear-downs of the test's set-up after the run
	// (batch mode; kernel/PROTOCOL.md).
	Finalize bool `json:"finalize,omitempty"`
	// RunOnce: cache no statement, the context runs once (batch mode).
	RunOnce bool `json:"runOnce,omitempty"`
	// Effects: "hold" for an automatic run under policy hold, else
	// "allow" (runpolicy.go; kernel/PROTOCOL.md execute).
	Effects protocol.RunEffects `json:"effects"`
}

type executeResult struct {
	Status string                    `json:"status"` // complete | failed
	Result *protocol.ExecutionResult `json:"result"`
}

// progressEvent is one `prog` frame of an execute request.
type progressEvent struct {
	Type            string                      `json:"type"`
	Depth           int                         `json:"depth"`
	Updates         []protocol.ExpressionUpdate `json:"updates"`
	Diagnostic      *protocol.Diagnostic        `json:"diagnostic"`
	VisualizationID protocol.VisualizationID    `json:"visualizationId"`
	ExpressionID    protocol.ExpressionID       `json:"expressionId"`
	Data            json.RawMessage             `json:"data"`
	Message         string                      `json:"message"`
	// Paths: the files the context's cached values read ("reads", reads.go).
	Paths []string `json:"paths"`
	// Items: the output of statements restored from the journal ("replay", replay.go).
	Items []replayItem `json:"items"`
}

// execute is the Execute job: run the context's stack on its kernel and
// turn what the kernel reports into store records and notifications. Its
// phases, in order:
//
//   - prepareRun reads the context (stack, visualizations, pending
//     invalidations) and builds the kernel's execute request;
//   - beginRun marks the context running on its slot and takes the slot's
//     pending drops along; endRun undoes that when the run ends;
//   - callKernel loads the entry module (batch mode), starts the run's
//     timeout once the kernel is ready, and sends the request;
//   - a run the kernel answered ends in takeResult (complete, stopped at
//     a statement boundary, failed); one it did not ends in runFailed,
//     which tells a kernel death, an interrupt, a timeout, a replaced
//     kernel and a superseded run apart.
func (e *Engine) execute(ctx context.Context, job *jobs.Execute) error {
	r, err := e.prepareRun(job)
	if r == nil || err != nil {
		return err // destroyed, or popped to empty meanwhile (nil)
	}
	e.beginRun(ctx, r)
	defer e.endRun(r)
	ctx, stopClock, raw, callErr := e.callKernel(ctx, r)
	defer stopClock()
	if callErr != nil {
		e.requeueDrops(r.slot, r.params.Drop, callErr)
	}
	r.stream.endOutput(r.slot)
	if callErr == nil {
		if callErr = e.takeResult(r, raw); callErr == nil {
			return nil
		}
	}
	return e.runFailed(ctx, r, callErr)
}

// execRun is one Execute on its way through execute's phases.
type execRun struct {
	id    protocol.ContextID
	slot  int // the context's kernel slot when the run started
	jobID jobs.ID
	// reason is why the run was asked for (its kind, runpolicy.go); a
	// re-run that replaces it carries it on.
	reason jobs.Reason
	stack  []*contexts.Frame
	// params is the kernel's execute request.
	params executeParams
	// invalidate is what the run was handed to recompute: put back as
	// pending when the run does not finish.
	invalidate protocol.InvalidatedExpressions
	// seen is the modify index of each visualization at the start.
	seen   map[protocol.VisualizationID]uint64
	stream *stream
}

// prepareRun reads what the run needs from the store and builds its
// request. It returns nil and no error when the stack is empty (popped to
// empty meanwhile: nothing to run). The pending invalidations it takes
// are the run's to recompute from here on.
func (e *Engine) prepareRun(job *jobs.Execute) (*execRun, error) {
	id := protocol.ContextID(job.Context)
	c, err := e.store.Context(nil, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", jobs.ErrContextDestroyed, err)
	}
	stack, err := e.store.Stack(nil, id)
	if err != nil || len(stack) == 0 {
		return nil, nil
	}
	vis, err := e.store.VisualizationsOfContext(nil, id)
	if err != nil {
		return nil, err
	}
	pending, err := e.store.TakePending(id)
	if err != nil {
		return nil, err
	}
	r := &execRun{id: id, slot: c.KernelSlot, reason: job.Reason, stack: stack, invalidate: pending}
	if !job.Invalidate.IsEmpty() {
		r.invalidate = r.invalidate.Merge(fromExpressionSet(job.Invalidate))
	}
	r.params = executeParams{ContextID: id, Generation: c.CreateIndex, Stack: make([]kernelFrame, len(stack)), StopAtSkip: e.cfg.Batch, Finalize: e.cfg.Batch, RunOnce: e.cfg.Batch,
		Effects: runEffects(job.Reason, e.policies.effects(id, ownerIDs(c)), e.cfg.Batch)}
	for i, f := range stack {
		r.params.Stack[i] = toKernelFrame(f.Item)
	}
	switch {
	case r.invalidate.All:
		r.params.Invalidate = "all"
	case len(r.invalidate.IDs) > 0:
		r.params.Invalidate = r.invalidate.IDs
	}
	if !job.WantsAll() {
		for _, x := range job.Expressions.Items() {
			r.params.Wanted = append(r.params.Wanted, string(x))
		}
	}
	r.seen = make(map[protocol.VisualizationID]uint64, len(vis))
	r.params.Visualizations = []kernelVisualization{}
	for _, v := range vis {
		r.params.Visualizations = append(r.params.Visualizations, kernelVisualization{
			VisualizationID:                v.ID,
			ExpressionID:                   v.ExpressionID,
			Expression:                     v.Config.Expression,
			PositionalArgumentsExpressions: nonNil(v.Config.PositionalArgumentsExpressions),
			Apply:                          v.NeedsInitialData,
			OneShot:                        v.OneShot,
		})
		r.seen[v.ID] = v.ModifyIndex
	}
	return r, nil
}

// beginRun marks the context running on its slot (the store's status and
// the run table), hands the run the slot's pending drops and starts the
// stream's count of the run's diagnostics.
func (e *Engine) beginRun(ctx context.Context, r *execRun) {
	_ = e.store.SetStatus(r.id, contexts.StatusRunning)
	e.runs.begin(r.slot, r.id)
	e.policies.began(r.id, r.reason)
	r.params.Drop = e.takeDrops(r.slot)
	r.jobID, _ = queue.JobID(ctx)
	r.stream = e.stream(r.id)
	r.stream.beginRun()
	e.outputShown(r.id)
}

// endRun is beginRun's counterpart, whatever the run's end: the run's
// soft stop and its entry in the run table are forgotten, and drops
// queued while it ran are flushed.
func (e *Engine) endRun(r *execRun) {
	e.endSoftStop(r.id, r.jobID)
	e.runs.end(r.slot, r.id)
	if e.hasDrops(r.slot) {
		e.scheduleFlush(r.slot) // none was sent while the run went on
	}
}

// callKernel sends the run's request to its slot's kernel (after loading
// the entry module in batch mode) and returns the kernel's answer. The
// context it returns is the run's: with Config.ExecuteTimeout, it ends at
// the timeout (cause jobs.ErrTimeout), counted from when the kernel could
// take the run; stop releases it and must be called once the run's end
// has been read from it (context.Cause).
func (e *Engine) callKernel(ctx context.Context, r *execRun) (runCtx context.Context, stop context.CancelFunc, raw json.RawMessage, err error) {
	stop = func() {}
	if err := e.loadEntryModule(ctx, r.slot, r.stack); err != nil {
		return ctx, stop, nil, err
	}
	if t := e.cfg.ExecuteTimeout; t > 0 {
		// The timeout is the run's own time, so its clock starts once
		// the slot's kernel can take the run: a kernel restarting after
		// another context crashed it, reloading the project's modules,
		// may take longer than one run may. (pool.Call below finds the
		// kernel at once; a wait cut short by an abort is reported
		// there.)
		_, _ = e.pool.Kernel(ctx, r.slot)
		ctx, stop = context.WithTimeoutCause(ctx, t, jobs.ErrTimeout)
	}
	sink := &runSink{e: e, id: r.id, slot: r.slot, stack: r.stack, stream: r.stream, seen: r.seen}
	e.log.Debug("run start", "context", r.id, "slot", r.slot)
	raw, err = e.pool.Call(ctx, r.slot, "execute", r.params, sink)
	e.log.Debug("run end", "context", r.id, "slot", r.slot, "err", err)
	return ctx, stop, raw, err
}

// takeResult ends a run the kernel answered: complete, stopped at a
// statement boundary, or failed with the kernel's result. It returns an
// error only when the answer cannot be read (the run then ends in
// runFailed).
func (e *Engine) takeResult(r *execRun, raw json.RawMessage) error {
	var res executeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("execute on slot %d: bad result: %w", r.slot, err)
	}
	id, st := r.id, r.stream
	e.crashes.Observe(string(id), nil)
	if res.Status == "complete" {
		e.finish(id, r.slot, st, nil)
		return nil
	}
	if res.Result != nil && res.Result.Kind == stoppedKind {
		// Stopped at a statement boundary (softstop.go): the run the edit
		// queued goes on from here. What this one was handed to recompute
		// is not handed on: the kernel dropped those cache entries before
		// running anything (kernel/PROTOCOL.md execute), so what the run
		// did not reach is still to do there, and what it recomputed is
		// cached; handing it on would run it twice.
		st.flush()
		_ = e.store.SetStatus(id, contexts.StatusQueued)
		if !e.endSoftStop(id, r.jobID) {
			// Not asked of this run (a stop meant for a run that had just
			// ended on this kernel): run again.
			e.rerun(id, r.reason)
		}
		return nil
	}
	if res.Result == nil {
		res.Result = &protocol.ExecutionResult{Kind: protocol.ResultFailure, Message: "the kernel reported a failure without a reason"}
	}
	if d := res.Result.Diagnostic; d != nil {
		st.send(protocol.NotifyExecutionStatus, protocol.ExecutionStatusParams{ContextID: id, Diagnostics: []protocol.Diagnostic{*d}})
	}
	e.finish(id, r.slot, st, res.Result)
	return nil
}

// runFailed ends a run that did not finish (callErr says why; ctx is the
// run's, whose cause tells an interrupt, a timeout and a superseded run
// apart): what it was handed to recompute must still be recomputed by the
// next run, and the context fails, is run again, or waits for the run
// that replaces it. It returns callErr (the job's error).
func (e *Engine) runFailed(ctx context.Context, r *execRun, callErr error) error {
	id, slot, st := r.id, r.slot, r.stream
	if !r.invalidate.Empty() {
		_ = e.store.Invalidate(id, r.invalidate)
	}
	cause := context.Cause(ctx)
	switch {
	case errors.Is(callErr, kernel.ErrSlotRetired):
		e.slotRetired(r, callErr)
	case errors.Is(callErr, kernel.ErrKernelDied):
		retry := e.crashes.Observe(string(id), callErr)
		if e.cfg.Batch {
			retry = false
		}
		msg := callErr.Error()
		var exit *kernel.ExitError
		if errors.As(callErr, &exit) {
			msg = "the kernel died (" + exit.Status() + ") while running this context"
		}
		e.finish(id, slot, st, &protocol.ExecutionResult{Kind: protocol.ResultKernelDied, Message: msg})
		if retry {
			e.rerun(id, r.reason) // a crash keeps the kind of the run it cut short
		}
	case cause != nil && errors.Is(cause, jobs.ErrInterrupted):
		e.finish(id, slot, st, &protocol.ExecutionResult{Kind: protocol.ResultInterrupted, Message: interruptMessage(callErr, "interrupted by the user")})
	case cause != nil && errors.Is(cause, jobs.ErrTimeout):
		e.finish(id, slot, st, &protocol.ExecutionResult{Kind: protocol.ResultTimeout, Message: interruptMessage(callErr, fmt.Sprintf("timed out after %s", e.cfg.ExecuteTimeout))})
	case errors.Is(callErr, kernel.ErrStopped) && cause == nil:
		e.kernelReplaced(r, callErr)
	case cause != nil:
		// Superseded, destroyed or shutting down: the run that replaces it
		// (if any) reports; send what this one computed.
		st.flush()
		_ = e.store.SetStatus(id, contexts.StatusQueued)
	default:
		var remote *kernel.RemoteError
		msg := callErr.Error()
		if errors.As(callErr, &remote) {
			e.log.Error("kernel engine error", "context", id, "err", callErr)
			msg = "internal error in the kernel: " + remote.Type + ": " + remote.Message
		}
		e.finish(id, slot, st, &protocol.ExecutionResult{Kind: protocol.ResultFailure, Message: msg})
	}
	return callErr
}

// slotRetired ends a run whose slot gave up starting a kernel (batch
// mode): nothing ran. The context moves to a slot that has one and runs
// there; with none left, the run fails saying why.
func (e *Engine) slotRetired(r *execRun, callErr error) {
	if _, err := e.assignSlot(r.id); err == nil {
		r.stream.flush()
		if err := e.apply(jobs.Move{Context: jobs.ContextID(r.id)}); err != nil && !errors.Is(err, jobs.ErrShutdown) {
			e.log.Warn("re-run on another kernel", "context", r.id, "err", err)
		}
		return
	}
	e.finish(r.id, r.slot, r.stream, &protocol.ExecutionResult{Kind: protocol.ResultFailure,
		Message: fmt.Sprintf("no kernel to run this context: %v", callErr)})
}

// kernelReplaced ends a run whose kernel the pool replaced
// (restartKernel), or whose kernel's agent was lost, without the run
// being cancelled: it runs again on the new kernel. Batch mode re-runs
// nothing: the run fails, so that ripple run gets its result.
func (e *Engine) kernelReplaced(r *execRun, callErr error) {
	id, slot, st := r.id, r.slot, r.stream
	if e.cfg.Batch {
		e.finish(id, slot, st, &protocol.ExecutionResult{Kind: protocol.ResultFailure,
			Message: "the kernel was replaced while running this context: " + callErr.Error()})
		return
	}
	if host, lost := agentLost(callErr); lost && !e.crashes.Observe(string(id), fmt.Errorf("%w: agent %s lost", kernel.ErrKernelDied, host)) {
		// The crash-loop rule (PROTOCOL.md 5.6) for agents: a run that
		// was in flight when its agent was lost, twice in a row, is not
		// run a third time. The run may be what ends its agent (a Slurm
		// job killed for its memory, a statement that kills the agent);
		// each re-run would otherwise cost a new agent (a new batch job)
		// forever.
		e.finish(id, slot, st, &protocol.ExecutionResult{Kind: protocol.ResultKernelDied,
			Message: fmt.Sprintf("agent %s was lost while running this context, the second time in a row: not run again until you edit, recompute or push", host)})
		return
	}
	st.flush()
	// The run's own kind, or explicit when a runtime/restartKernel
	// replaced the kernel (RestartKernel says so).
	e.rerun(id, e.policies.rerunReason(id))
}

// agentLost reports whether a call failed because its kernel's runtime
// agent was lost (its connection ended, its lease expired, its job
// ended), naming its host; a restart that was asked for is not a loss.
func agentLost(callErr error) (host string, lost bool) {
	var a *kernel.AgentLostError
	if !errors.As(callErr, &a) {
		return "", false
	}
	return a.Host, true
}

// interruptMessage adds the state loss to an interrupt that restarted the
// kernel.
func interruptMessage(err error, msg string) string {
	if errors.Is(err, kernel.ErrKernelRestarted) {
		return msg + "; the kernel did not stop and was restarted (state lost)"
	}
	return msg
}

// finish ends a run: pending updates first, then executionComplete (result
// nil) or executionFailed, and the store's run state. kernelID is the
// kernel the run was on (PROTOCOL.md 7.5). A run ended by an interrupt, a
// timeout or a kernel death leaves no statement waiting (markNotReached).
func (e *Engine) finish(id protocol.ContextID, kernelID int, st *stream, result *protocol.ExecutionResult) {
	if result != nil {
		switch result.Kind {
		case protocol.ResultInterrupted, protocol.ResultTimeout:
			e.markNotReached(id, kernelID, st, protocol.ReasonInterrupted)
		case protocol.ResultKernelDied:
			e.markNotReached(id, kernelID, st, protocol.ReasonKernelDied)
		}
	}
	if _, err := e.store.FinishRun(id, result); err != nil {
		st.flush()
		return // destroyed meanwhile
	}
	st.endRun()
	e.kept.markEnded(id, e.connectedOwners(id)) // (Connect)
	if result == nil {
		st.send(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: id, KernelID: kernelID})
		return
	}
	st.send(protocol.NotifyExecutionFailed, protocol.ExecutionFailedParams{ContextID: id, KernelID: kernelID, Result: *result})
}

// rerun enqueues an Execute of a context (after a kernel restart), asked
// for reason: the reasons of the run it replaces keep its kind.
func (e *Engine) rerun(id protocol.ContextID, reason jobs.Reason) {
	c, err := e.store.Context(nil, id)
	if err != nil {
		return
	}
	_, err = e.queue.EnqueueExecute(jobs.Execute{Context: jobs.ContextID(id), Slot: jobs.Slot(c.KernelSlot),
		Expressions: jobs.All[jobs.ExpressionID](), Priority: jobs.PriorityUser, Reason: reason})
	if err != nil && !errors.Is(err, jobs.ErrShutdown) {
		e.log.Warn("re-run after restart", "context", id, "err", err)
	}
}

// onJobEnd is told of every job's end (from the queue's single dispatch
// goroutine). Runs never started but cancelled by the user still end with
// executionFailed, so an interrupt always gets an answer.
func (e *Engine) onJobEnd(rec jobs.Record) {
	if rec.Kind != jobs.KindExecute || !rec.Started.IsZero() {
		return
	}
	id := protocol.ContextID(rec.Execute.Context)
	switch {
	case errors.Is(rec.Cause, jobs.ErrInterrupted):
		e.finish(id, e.kernelOf(id), e.stream(id), &protocol.ExecutionResult{Kind: protocol.ResultInterrupted, Message: "interrupted by the user before it started"})
	case errors.Is(rec.Cause, jobs.ErrTimeout):
		e.finish(id, e.kernelOf(id), e.stream(id), &protocol.ExecutionResult{Kind: protocol.ResultTimeout, Message: "timed out before it started"})
	}
}

// onKernelRestart is told when a slot's kernel was replaced (pool's slot
// owner goroutine; must return quickly). The contexts on it lost their
// values: their owners are told and each is run again, except the one
// whose run was on the old kernel (its runner decides, with CrashStreak)
// and those that killed their kernel twice in a row.
func (e *Engine) onKernelRestart(ev kernel.RestartEvent) {
	// Deaths and restarts are logged at the default level: they lose
	// state, and a run of them is what an operator needs to see.
	if ev.Err != nil {
		e.log.Warn("kernel died and was restarted", "slot", ev.Slot, "old", ev.OldKernelID, "new", ev.NewKernelID, "reason", ev.Reason)
	} else {
		e.log.Info("kernel restarted", "slot", ev.Slot, "old", ev.OldKernelID, "new", ev.NewKernelID, "reason", ev.Reason)
	}
	// busy is read before the contexts: a runner finishes its run (store)
	// before it stops being busy, so a context is either still busy here
	// or its final result is in the snapshot below.
	busy := e.runs.on(ev.Slot)
	cs, err := e.store.ContextsOnSlot(nil, ev.Slot)
	if err != nil {
		return
	}
	ids := make([]protocol.ContextID, 0, len(cs))
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	params := protocol.KernelRestartedParams{KernelID: ev.Slot, ContextIDs: ids, StatePreserved: false, Reason: ev.Reason}
	notified := make(map[string]bool)
	for _, c := range cs {
		for _, o := range c.Owners {
			if !notified[o.ClientID] {
				notified[o.ClientID] = true
				e.notifyClients([]string{o.ClientID}, protocol.NotifyKernelRestarted, params)
			}
		}
	}
	if e.cfg.Batch {
		return
	}
	for _, c := range cs {
		// A context already running again (its runner re-enqueued it after
		// the death and the run waits for this kernel) needs no second run.
		if c.ID == busy || c.Status == contexts.StatusRunning || e.crashes.Count(string(c.ID)) > kernel.MaxCrashRetries || stoppedByUser(c) {
			continue
		}
		if stack, err := e.store.Stack(nil, c.ID); err == nil && len(stack) > 0 {
			e.rerun(c.ID, e.policies.rerunReason(c.ID))
		}
	}
}

// stoppedByUser reports whether a context's last run ended interrupted or
// timed out: it stays stopped until the user acts, also when the restart
// is the one its interrupt caused (the restart event may come after its
// runner has finished, so busy no longer names it). Re-running it would
// re-enter the code the user stopped, e.g. a loop that ignores SIGINT.
func stoppedByUser(c *contexts.ExecutionContext) bool {
	if c.Status != contexts.StatusFailed || c.LastResult == nil {
		return false
	}
	return c.LastResult.Kind == protocol.ResultInterrupted || c.LastResult.Kind == protocol.ResultTimeout
}

// runSink turns an execute request's output and progress into records and
// notifications. Its methods run on the kernel's reader goroutine, one at
// a time.
type runSink struct {
	e      *Engine
	id     protocol.ContextID
	slot   int // the kernel the run is on: the kernelId of what it sends (PROTOCOL.md 7.5)
	stack  []*contexts.Frame
	stream *stream
	seen   map[protocol.VisualizationID]uint64 // modify index of each visualization at the start
	// expr is the statement the kernel said the output that follows
	// belongs to (its "output" progress events, PROTOCOL.md 7.3).
	expr protocol.ExpressionID
}

func (s *runSink) Output(stream kernel.Stream, data []byte) {
	out := protocol.Stdout
	if stream == kernel.Stderr {
		out = protocol.Stderr
	}
	s.stream.output(s.slot, out, data, s.expr)
	s.e.kept.add(s.id, s.expr, keptItem{Stream: out, Text: data})
}

// LateOutput takes what a thread the run started wrote after the run
// ended (kernel.LateSink): it is the context's output, of no statement.
func (s *runSink) LateOutput(stream kernel.Stream, data []byte) {
	out := protocol.Stdout
	if stream == kernel.Stderr {
		out = protocol.Stderr
	}
	s.stream.output(s.slot, out, data, "")
}

func (s *runSink) Progress(raw json.RawMessage) {
	var ev progressEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		s.e.log.Error("bad progress event from kernel", "context", s.id, "err", err)
		return
	}
	switch ev.Type {
	case "output":
		s.expr = ev.ExpressionID
	case "displayData":
		s.e.kept.add(s.id, ev.ExpressionID, keptItem{Data: slices.Clone(ev.Data)})
		s.stream.send(protocol.NotifyDisplayData, protocol.DisplayDataParams{
			ContextID: s.id, KernelID: s.slot, ExpressionID: ev.ExpressionID, Data: slices.Clone(ev.Data),
		})
	case "updates":
		if ev.Depth < 0 || ev.Depth >= len(s.stack) {
			return
		}
		if err := s.e.store.RecordUpdates(s.stack[ev.Depth], ev.Updates); err != nil {
			return // the frame was popped meanwhile: stale
		}
		if ev.Depth == len(s.stack)-1 {
			s.e.kept.started(s.id, ev.Updates)
			s.stream.updates(s.slot, ev.Updates)
			if allPending(ev.Updates) {
				// The Pending of a run's start go out at once, so a client
				// sees what will run before the first values replace them.
				s.stream.flush()
			}
		}
	case "reads":
		s.e.reads.set(s.id, ev.Paths)
	case "replay":
		s.replayed(ev.Items)
	case "diagnostic":
		if ev.Diagnostic != nil {
			s.stream.send(protocol.NotifyExecutionStatus, protocol.ExecutionStatusParams{ContextID: s.id, Diagnostics: []protocol.Diagnostic{*ev.Diagnostic}})
		}
	case "visualization":
		s.stream.send(protocol.NotifyVisualizationUpdate, protocol.VisualizationUpdateParams{
			VisualizationContext: protocol.VisualizationContext{VisualizationID: ev.VisualizationID, ContextID: s.id, ExpressionID: ev.ExpressionID},
			KernelID:             s.slot,
			Data:                 slices.Clone(ev.Data),
		})
		s.visualized(ev.VisualizationID, ev.ExpressionID, true)
	case "visualizationFailed":
		s.stream.send(protocol.NotifyVisualizationEvaluationFailed, protocol.VisualizationEvaluationFailedParams{
			ContextID: s.id, KernelID: s.slot, VisualizationID: ev.VisualizationID, ExpressionID: ev.ExpressionID,
			Message: ev.Message, Diagnostic: ev.Diagnostic,
		})
		s.visualized(ev.VisualizationID, ev.ExpressionID, false)
	}
}

// visualized records that a visualization got its data: the initial-data
// flag is cleared (unless it was modified since the run started) and a
// one-shot (executeExpression) detaches itself.
func (s *runSink) visualized(id protocol.VisualizationID, expr protocol.ExpressionID, ok bool) {
	v, err := s.e.store.Visualization(nil, id)
	if err != nil {
		return
	}
	if v.OneShot {
		_ = s.e.store.DetachVisualization(s.id, id, expr)
		return
	}
	seen, known := s.seen[id]
	if !known {
		return
	}
	// A modify whose new expression fails leaves the old one in force;
	// one that works drops the fallback.
	if !ok {
		if reverted, _ := s.e.store.RevertVisualization(id, seen); reverted {
			return
		}
	} else {
		_ = s.e.store.ConfirmVisualization(id, seen)
	}
	_ = s.e.store.InitialDataSent(id, seen)
}

func toKernelFrame(item protocol.StackItem) kernelFrame {
	if item.Type == protocol.LocalCall {
		return kernelFrame{Type: protocol.LocalCall, ExpressionID: item.ExpressionID}
	}
	return kernelFrame{
		Type:                           protocol.ExplicitCall,
		Module:                         item.MethodPointer.Module,
		DefinedOnType:                  item.MethodPointer.DefinedOnType,
		Name:                           item.MethodPointer.Name,
		ThisArgumentExpression:         item.ThisArgumentExpression,
		PositionalArgumentsExpressions: item.PositionalArgumentsExpressions,
	}
}

func fromExpressionSet(set jobs.ExpressionSet) protocol.InvalidatedExpressions {
	if set.IsAll() {
		return protocol.InvalidatedExpressions{All: true}
	}
	var inv protocol.InvalidatedExpressions
	for _, x := range set.Items() {
		inv.IDs = append(inv.IDs, protocol.ExpressionID(x))
	}
	return inv
}

// allPending reports whether us is the start of a pass: every update a
// Pending that waits, or the running mark of the first statement, which
// the kernel sends with them (PROTOCOL.md 8.4).
func allPending(us []protocol.ExpressionUpdate) bool {
	for i := range us {
		if !us[i].Payload.IsWaiting() && !us[i].Payload.IsRunning() {
			return false
		}
	}
	return len(us) > 0
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
