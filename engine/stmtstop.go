package engine

import (
	"context"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// An edit of a module holding the code of a frame of a running context
// interrupts the running statement only when the change may invalidate it
// (DESIGN.md "Edit a file"): its source or a statement before it in its
// function changed, or a changed part of the module is something it can
// reach (kernel.StatementsAffected reads that from the version the kernel
// runs and the new one). The run is first asked to stop at its next
// statement boundary (softstop.go) and the check runs on a goroutine of
// the engine's; when it says affected, or cannot tell, the run is
// interrupted at once (the same escalation as softstop.go's timer). So an
// edit elsewhere in the module no longer restarts a long statement, and
// an edit that does invalidate it costs the time of the check (a short
// python3 process) before the interrupt.
//
// What "may be running" is, is known from the store: a lower frame is
// suspended in the call statement of the frame above it; in the top frame
// the first statement in source order still reported Pending is the one
// running (a run reports the statements it will run Pending, then each
// one's value in order). When
// that is not known (a LocalCall not reported, no Pending statement yet,
// the kernel's version of the module not recorded), the edit interrupts
// as before.

// stmtCheck is one edited module holding frames of a running context.
type stmtCheck struct {
	module   string
	old, new string
	frames   []kernel.FrameStatements
}

// runningStatements returns the checks for the edit of mods of context
// id's running frames; ok is false when what runs is not known.
func (e *Engine) runningStatements(id protocol.ContextID, mods jobs.ModuleSet) ([]stmtCheck, bool) {
	c, err := e.store.Context(nil, id)
	if err != nil {
		return nil, false
	}
	stack, err := e.store.Stack(nil, id)
	if err != nil || len(stack) == 0 {
		return nil, false
	}
	byModule := map[string]*stmtCheck{}
	var order []string
	for i, f := range stack {
		mp, err := protocol.ParseMethodPointer(e.frameFunction(id, f))
		if err != nil {
			return nil, false
		}
		if !mods.Contains(jobs.Module(mp.Module)) {
			continue
		}
		var ids []string
		if i < len(stack)-1 {
			next := stack[i+1]
			if next.Item.Type != protocol.LocalCall {
				return nil, false
			}
			ids = []string{string(next.Item.ExpressionID)}
		} else {
			us, err := e.currentFrameUpdates(id, f)
			if err != nil {
				return nil, false
			}
			sortBySource(us)
			for _, u := range us {
				// A run reports its statements Pending, then each one's
				// value as it ends, in source order: the first still
				// Pending is the one running ("not reached" ones are not).
				if u.Payload.Type == protocol.PayloadPending && u.Payload.Message == "" && u.Range != nil {
					ids = append(ids, string(u.ExpressionID))
					break
				}
			}
			if len(ids) == 0 {
				return nil, false
			}
		}
		chk := byModule[mp.Module]
		if chk == nil {
			old, have := e.sources.installedSource(c.KernelSlot, mp.Module)
			_, cur, found := e.current(mp.Module)
			if !have || !found {
				return nil, false
			}
			chk = &stmtCheck{module: mp.Module, old: old, new: cur}
			byModule[mp.Module] = chk
			order = append(order, mp.Module)
		}
		chk.frames = append(chk.frames, kernel.FrameStatements{Qualname: mp.Qualname(), IDs: ids})
	}
	if len(order) == 0 {
		return nil, false
	}
	out := make([]stmtCheck, 0, len(order))
	for _, m := range order {
		out = append(out, *byModule[m])
	}
	return out, true
}

// checkRunningStatements interrupts context id's running Execute (job),
// already asked to stop at its boundary, when one of checks says the
// edit may invalidate what runs, or cannot tell.
func (e *Engine) checkRunningStatements(id protocol.ContextID, job jobs.ID, checks []stmtCheck) {
	e.goBackground(func(ctx context.Context) {
		for _, chk := range checks {
			affected, why, err := kernel.StatementsAffected(ctx, e.interpreter(), chk.module, chk.old, chk.new, chk.frames)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				why = err.Error()
			}
			if !affected && err == nil {
				e.log.Debug("an edit leaves the running statement alone", "context", id, "module", chk.module, "why", why)
				continue
			}
			if e.runs.softStopping(id, job) && e.queue.CancelRunning(jobs.ContextID(id), job, jobs.ErrEdited) {
				e.log.Info("interrupting a run: the edit may invalidate its running statement", "context", id, "module", chk.module, "why", why)
			}
			return
		}
	})
}
