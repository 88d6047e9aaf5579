package jobs

import (
	"fmt"
	"slices"
)

// This file is the API-to-jobs table of DESIGN.md ("Jobs and scheduling"),
// one Call type per row. Each Plan method is a plain function of the
// contexts' state and the call, so the table is testable without a server.
//
// The engine's order for a call is: validate it, apply its synchronous state
// update, build the plan from the updated state, and hand the plan to
// queue.Queue.Apply, which aborts and then enqueues atomically. (DESIGN.md
// aborts before the state update; the aborts here do not depend on the state,
// and a job that starts in between is cancelled by the same plan.)

// Call is one API call that may abort and enqueue jobs.
type Call interface {
	// Plan translates the call, given every context's state after the
	// call's own state update.
	Plan(cs Contexts) (Plan, error)
}

// Contexts is the state the translations read: every execution context, as
// it stands after the call's synchronous state update.
type Contexts map[ContextID]ContextInfo

// ContextInfo is what the translations need to know about one context.
type ContextInfo struct {
	// Slot is the kernel slot the context lives on.
	Slot Slot
	// StackEmpty: nothing to run until something is pushed.
	StackEmpty bool
	// BottomModule is the module of the bottom frame's method ("" when the
	// stack is empty): what EnsureCompiled must bring up to date before the
	// context can run.
	BottomModule Module
	// Imports are the project modules the bottom module imports, directly
	// or transitively, itself included, when ImportsKnown; an edit of
	// another module does not affect the context. Unknown (the module was
	// never compiled) counts as affected by every edit.
	Imports      ModuleSet
	ImportsKnown bool
}

// AffectedBy reports whether a change of mods reaches the context (DESIGN.md
// "Edit a file": a frame's module imports a changed module, directly or
// transitively). A change of no module (a data file) reaches every
// context, as does any change while the context's imports are unknown.
func (info ContextInfo) AffectedBy(mods ModuleSet) bool {
	if mods.IsEmpty() || mods.IsAll() || !info.ImportsKnown {
		return true
	}
	for _, m := range mods.Items() {
		if info.Imports.Contains(m) {
			return true
		}
	}
	return false
}

// lookup returns the context's state or an error naming the call and the
// context.
func (cs Contexts) lookup(call string, id ContextID) (ContextInfo, error) {
	info, ok := cs[id]
	if !ok {
		return ContextInfo{}, fmt.Errorf("%s: %w %s", call, ErrUnknownContext, id)
	}
	return info, nil
}

// runContext is the plan shared by stack changes, recompute and the
// visualization calls: the given aborts, then EnsureCompiled(bottom module)
// and the Execute; nothing to enqueue while the stack is empty.
func runContext(info ContextInfo, exec Execute, aborts ...Abort) Plan {
	p := Plan{Aborts: aborts}
	if info.StackEmpty {
		return p
	}
	exec.Slot = info.Slot
	p.EnsureCompiled = EnsureCompiled{Modules: SetOf(info.BottomModule), Slots: []Slot{info.Slot}}
	p.Executes = []Execute{exec}
	return p
}

// Origin says where an edit came from.
type Origin uint8

const (
	// OriginTyping: text/applyEdit with execute:true (typing, an LSP
	// didChange); its runs are automatic (ReasonEdit). The zero Origin,
	// so an edit that forgets to say runs as the safe kind.
	OriginTyping Origin = iota
	// OriginClient: any other change by a client: file/write,
	// file/delete, a buffer closed back to its disk version
	// (ReasonClientWrite, explicit).
	OriginClient
	// OriginDisk: a change seen on disk (ripple watch, or a file changed
	// under a running server; ReasonFileWatch, explicit).
	OriginDisk
	// OriginRestore: a buffer restored from the state log after a server
	// restart (ReasonRestore, automatic).
	OriginRestore
)

// Edit is a change to project files. Only the contexts it affects
// (ContextInfo.AffectedBy) are touched: their Executes are aborted
// (ErrEdited), EnsureCompiled(the changed modules) is enqueued on their
// kernels, and an Execute of each (PriorityUser, or PriorityBatch for
// OriginDisk, with the Origin's reason); other contexts keep running
// (DESIGN.md "Edit a file").
//
// With NoExecute (text/applyEdit with execute:false) nothing is aborted or
// scheduled (PROTOCOL.md: "nothing is scheduled until a later edit or
// recompute"); the caller must then remember the changed modules and add
// them to the next EnsureCompiled it enqueues.
type Edit struct {
	// Modules are the changed modules; empty when only non-module files
	// changed (then only the Executes are enqueued).
	Modules   ModuleSet
	Origin    Origin
	NoExecute bool
}

// Plan implements Call.
func (e Edit) Plan(cs Contexts) (Plan, error) {
	if e.NoExecute {
		return Plan{}, nil
	}
	priority, reason := PriorityUser, ReasonEdit
	switch e.Origin {
	case OriginClient:
		reason = ReasonClientWrite
	case OriginDisk:
		priority, reason = PriorityBatch, ReasonFileWatch
	case OriginRestore:
		reason = ReasonRestore
	}
	var p Plan
	ids := make([]ContextID, 0, len(cs))
	for id, info := range cs {
		if !info.StackEmpty && info.AffectedBy(e.Modules) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids) // a stable order for the queue's FIFO
	p.Executes = make([]Execute, 0, len(ids))
	var slots []Slot
	for _, id := range ids {
		p.Aborts = append(p.Aborts, AbortContext(id, ErrEdited))
		p.Executes = append(p.Executes, Execute{Context: id, Slot: cs[id].Slot,
			Expressions: All[ExpressionID](), Priority: priority, Reason: reason})
		if !slices.Contains(slots, cs[id].Slot) {
			slots = append(slots, cs[id].Slot)
		}
	}
	if !e.Modules.IsEmpty() && len(slots) > 0 {
		slices.Sort(slots)
		p.EnsureCompiled = EnsureCompiled{Modules: e.Modules, Slots: slots}
	}
	return p, nil
}

// Push is executionContext/push: abort the context's Executes
// (ErrStackChanged), then EnsureCompiled(bottom module) and Execute(all).
type Push struct{ Context ContextID }

// Plan implements Call.
func (c Push) Plan(cs Contexts) (Plan, error) {
	info, err := cs.lookup("push", c.Context)
	if err != nil {
		return Plan{}, err
	}
	if info.StackEmpty {
		return Plan{}, fmt.Errorf("%w: push: context %s has an empty stack after the push", ErrInvalidJob, c.Context)
	}
	return runContext(info, Execute{Context: c.Context, Expressions: All[ExpressionID](),
		Priority: PriorityUser, Reason: ReasonPush}, AbortContext(c.Context, ErrStackChanged)), nil
}

// Restore is the first run of a context restored from the state log after
// a server restart: Push's jobs, with ReasonRestore (an automatic run: it
// holds effects, as the typing that made the values did).
type Restore struct{ Context ContextID }

// Plan implements Call.
func (c Restore) Plan(cs Contexts) (Plan, error) {
	info, err := cs.lookup("restore", c.Context)
	if err != nil {
		return Plan{}, err
	}
	return runContext(info, Execute{Context: c.Context, Expressions: All[ExpressionID](),
		Priority: PriorityUser, Reason: ReasonRestore}, AbortContext(c.Context, ErrStackChanged)), nil
}

// Pop is executionContext/pop: abort the context's Executes
// (ErrStackChanged), then, unless the stack is now empty,
// EnsureCompiled(bottom module) and Execute(all).
type Pop struct{ Context ContextID }

// Plan implements Call.
func (c Pop) Plan(cs Contexts) (Plan, error) {
	info, err := cs.lookup("pop", c.Context)
	if err != nil {
		return Plan{}, err
	}
	return runContext(info, Execute{Context: c.Context, Expressions: All[ExpressionID](),
		Priority: PriorityUser, Reason: ReasonPop}, AbortContext(c.Context, ErrStackChanged)), nil
}

// Recompute is executionContext/recompute: abort the context's Executes
// (ErrRecomputed), then EnsureCompiled(bottom module) and Execute(all)
// carrying the invalidated expressions. Nothing runs on an empty stack.
type Recompute struct {
	Context ContextID
	// Invalidate: empty when the call names none, All() for "all".
	Invalidate ExpressionSet
	// Reason is ReasonRecompute when zero (a client's recompute). A
	// refresh the engine asks on its own (a reconnected client's context)
	// gives the reasons of the run it replaces, so it keeps that run's
	// kind (Reason.Automatic).
	Reason Reason
}

// Plan implements Call.
func (c Recompute) Plan(cs Contexts) (Plan, error) {
	info, err := cs.lookup("recompute", c.Context)
	if err != nil {
		return Plan{}, err
	}
	reason := c.Reason
	if reason == 0 {
		reason = ReasonRecompute
	}
	return runContext(info, Execute{Context: c.Context, Expressions: All[ExpressionID](),
		Invalidate: c.Invalidate, Priority: PriorityUser, Reason: reason},
		AbortContext(c.Context, ErrRecomputed)), nil
}

// Move is the run of a context the engine moved to another kernel slot
// (its slot closed: an agent's, lost for good): no abort (nothing of it
// runs), EnsureCompiled(bottom module) on the new slot, whose kernel may
// never have had it (an agent's kernel imports nothing from disk: its
// host has its own directory), and Execute(all).
type Move struct{ Context ContextID }

// Plan implements Call.
func (c Move) Plan(cs Contexts) (Plan, error) {
	info, err := cs.lookup("move", c.Context)
	if err != nil {
		return Plan{}, err
	}
	return runContext(info, Execute{Context: c.Context, Expressions: All[ExpressionID](),
		Priority: PriorityUser, Reason: ReasonRestart}), nil
}

// AttachVisualization is executionContext/attachVisualization: no abort;
// EnsureCompiled(bottom module) and Execute(the visualized expression) at
// PriorityInteractive. The engine applies the visualization from the cache
// if the value is there; the Execute computes it otherwise.
type AttachVisualization struct {
	Context    ContextID
	Expression ExpressionID
}

// Plan implements Call.
func (c AttachVisualization) Plan(cs Contexts) (Plan, error) {
	return visualize(cs, "attachVisualization", c.Context, c.Expression, ReasonVisualization)
}

// ModifyVisualization is executionContext/modifyVisualization: the same
// jobs as AttachVisualization.
type ModifyVisualization struct {
	Context    ContextID
	Expression ExpressionID
}

// Plan implements Call.
func (c ModifyVisualization) Plan(cs Contexts) (Plan, error) {
	return visualize(cs, "modifyVisualization", c.Context, c.Expression, ReasonVisualization)
}

// ExecuteExpression is executionContext/executeExpression: the same jobs as
// AttachVisualization (the engine evaluates the expression once, as a
// visualization that detaches itself).
type ExecuteExpression struct {
	Context    ContextID
	Expression ExpressionID
}

// Plan implements Call.
func (c ExecuteExpression) Plan(cs Contexts) (Plan, error) {
	return visualize(cs, "executeExpression", c.Context, c.Expression, ReasonExecuteExpression)
}

func visualize(cs Contexts, call string, id ContextID, expr ExpressionID, reason Reason) (Plan, error) {
	info, err := cs.lookup(call, id)
	if err != nil {
		return Plan{}, err
	}
	if expr == "" {
		return Plan{}, fmt.Errorf("%w: %s on context %s names no expression", ErrInvalidJob, call, id)
	}
	return runContext(info, Execute{Context: id, Expressions: SetOf(expr),
		Priority: PriorityInteractive, Reason: reason}), nil
}

// DetachVisualization is executionContext/detachVisualization: state only,
// no jobs.
type DetachVisualization struct{ Context ContextID }

// Plan implements Call.
func (c DetachVisualization) Plan(cs Contexts) (Plan, error) {
	_, err := cs.lookup("detachVisualization", c.Context)
	return Plan{}, err
}

// CreateContext is executionContext/create: no jobs. DESIGN.md lists an
// abort for create too; it is left out on purpose: a new context has no
// jobs, and create is idempotent (PROTOCOL.md), so creating an existing
// context must not disturb its work.
type CreateContext struct{ Context ContextID }

// Plan implements Call.
func (c CreateContext) Plan(cs Contexts) (Plan, error) {
	_, err := cs.lookup("create", c.Context)
	return Plan{}, err
}

// DestroyContext is executionContext/destroy: abort the context's Executes
// (ErrContextDestroyed); no jobs. The context is gone from the state, so it
// is not looked up.
type DestroyContext struct{ Context ContextID }

// Plan implements Call.
func (c DestroyContext) Plan(Contexts) (Plan, error) {
	if c.Context == "" {
		return Plan{}, fmt.Errorf("%w: destroy names no execution context", ErrInvalidJob)
	}
	return Plan{Aborts: []Abort{AbortContext(c.Context, ErrContextDestroyed)}}, nil
}

// Interrupt is executionContext/interrupt: abort the context's Executes
// (ErrInterrupted); no jobs.
type Interrupt struct{ Context ContextID }

// Plan implements Call.
func (c Interrupt) Plan(cs Contexts) (Plan, error) {
	if _, err := cs.lookup("interrupt", c.Context); err != nil {
		return Plan{}, err
	}
	return Plan{Aborts: []Abort{AbortContext(c.Context, ErrInterrupted)}}, nil
}
