package engine

import (
	"errors"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
)

// An edit that affects a running context (DESIGN.md "Edit a file")
// interrupts the statement running now only when the change may
// invalidate it; otherwise the run stops at its next statement boundary,
// after that statement's value is cached, so an edit never repeats the
// side effects of a statement it did not touch and a stream of edits does
// not restart a long statement over and over. The run that follows the
// edit (queued by the same plan, it waits for this one: one Execute per
// context) goes on from there.
//
// "May invalidate" is decided by modules first: an edit of another module
// the context imports stops the run at its boundary; an edit of a module
// holding the code of one of the context's frames (the running statement
// is in the top frame, the frames below are suspended in a statement that
// called it) is decided per statement (stmtstop.go): stop at the
// boundary, interrupted once a check of the running statements against
// the change says it reaches them (or, when what runs is not known,
// interrupted at once as before); the whole project interrupts. The running
// statement may still call into the edited module, where the old code
// goes on running; if it has not reached its boundary within
// Config.CompileTimeout (a loop being fixed there, say), it is interrupted
// after all.
//
// The stops asked for are kept in the run table (runtable.go). The kernel
// side is kernel.Pool.StopAtBoundary.

// softStopRuns turns the aborts of running Executes that the edit of mods
// leaves their running statement alone into stops at the next statement
// boundary, and returns the aborts that remain.
func (e *Engine) softStopRuns(mods jobs.ModuleSet, aborts []jobs.Abort) []jobs.Abort {
	if e.cfg.Batch || mods.IsEmpty() || mods.IsAll() {
		return aborts // a data file may be what the running statement reads
	}
	out := aborts[:0:0]
	for _, a := range aborts {
		if a.All || !errors.Is(a.Cause, jobs.ErrEdited) {
			out = append(out, a)
			continue
		}
		id := protocol.ContextID(a.Context)
		job, running := e.queue.RunningJob(a.Context)
		if !running {
			out = append(out, a)
			continue
		}
		if e.editReachesFrames(id, mods) {
			// Per statement (stmtstop.go): stop at the boundary, and
			// interrupt once the check says the edit reaches what runs.
			checks, ok := e.runningStatements(id, mods)
			if !ok {
				out = append(out, a)
				continue
			}
			e.stopAtBoundary(id, job)
			e.checkRunningStatements(id, job, checks)
			continue
		}
		e.stopAtBoundary(id, job)
	}
	return out
}

// editReachesFrames reports whether mods hold the code of a frame of the
// context (or a frame whose module is unknown).
func (e *Engine) editReachesFrames(id protocol.ContextID, mods jobs.ModuleSet) bool {
	stack, err := e.store.Stack(nil, id)
	if err != nil {
		return true
	}
	for _, f := range stack {
		module := ""
		switch f.Item.Type {
		case protocol.ExplicitCall:
			module = f.Item.MethodPointer.Module
		case protocol.LocalCall:
			if f.Depth > 0 {
				if u, err := e.store.ExpressionUpdate(nil, id, f.Depth-1, f.Item.ExpressionID); err == nil && u.Update.MethodCall != nil {
					module = u.Update.MethodCall.MethodPointer.Module
				}
			}
		}
		if module == "" || mods.Contains(jobs.Module(module)) {
			return true
		}
	}
	return false
}

// stopAtBoundary asks context id's running Execute (job) to stop at its
// next statement boundary, and arms the interrupt that follows if it does
// not within CompileTimeout.
func (e *Engine) stopAtBoundary(id protocol.ContextID, job jobs.ID) {
	c, err := e.store.Context(nil, id)
	if err != nil {
		return
	}
	// Asked again, the clock runs on.
	e.runs.armSoftStop(id, job, e.cfg.CompileTimeout, func() {
		if e.queue.CancelRunning(jobs.ContextID(id), job, jobs.ErrEdited) {
			e.log.Info("interrupting a run that did not reach a statement boundary after an edit", "context", id, "after", e.cfg.CompileTimeout)
		}
	})
	e.pool.StopAtBoundary(c.KernelSlot)
}

// endSoftStop forgets the stop of context id's run (it ended); it reports
// whether the run had been asked to stop.
func (e *Engine) endSoftStop(id protocol.ContextID, job jobs.ID) bool {
	return e.runs.endSoftStop(id, job)
}

// stoppedKind is the result kind of a run that stopped at a statement
// boundary (kernel/PROTOCOL.md); it never reaches a client.
const stoppedKind protocol.ResultKind = "stopped"
