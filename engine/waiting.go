package engine

import (
	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/protocol"
)

// Waiting is visible: a run that waits for its kernel (a lost agent
// within its grace, a Slurm job pending in the queue, agents not yet
// reconnected after a restart) shows it. Its context's statements become
// Pending {message: "waiting for a kernel", reason: {kind:
// "waitingForKernel", detail}} with the launcher's detail, each time it
// changes; the kernel's own updates replace them once the run starts.

// reportWaits gives a launcher that can make runs wait (WaitReporting)
// the engine's callback. Called with countContexts, before Start.
func (e *Engine) reportWaits() {
	if wr, ok := e.pool.(WaitReporting); ok {
		wr.ReportWaits(e.kernelWaiting)
	}
}

// kernelWaiting tells the clients of the contexts whose run waits for
// slot's kernel (the one running on it, and those queued there) why.
func (e *Engine) kernelWaiting(slot int, detail string) {
	cs, err := e.store.ContextsOnSlot(nil, slot)
	if err != nil {
		return
	}
	running := e.runs.on(slot)
	for _, c := range cs {
		if c.ID != running && c.Status != contexts.StatusRunning && c.Status != contexts.StatusQueued {
			continue
		}
		top, err := e.store.TopFrame(nil, c.ID)
		if err != nil {
			continue
		}
		var ids []string
		ok := false
		if fn := e.frameFunction(c.ID, top); fn != "" {
			if mp, err := protocol.ParseMethodPointer(fn); err == nil {
				ids, ok = e.staticIDs(mp)
			}
		}
		if !ok {
			ids = nil
			us, _ := e.currentFrameUpdates(c.ID, top)
			for _, u := range us {
				ids = append(ids, string(u.ExpressionID))
			}
		}
		if len(ids) == 0 {
			continue
		}
		us := make([]protocol.ExpressionUpdate, len(ids))
		for i, id := range ids {
			us[i] = protocol.ExpressionUpdate{ExpressionID: protocol.ExpressionID(id), ProfilingInfo: []protocol.ProfilingInfo{},
				Payload: protocol.Payload{Type: protocol.PayloadPending, Message: protocol.MessageWaitingForKernel,
					Reason: &protocol.PendingReason{Kind: protocol.ReasonWaitingForKernel, Detail: detail}}}
		}
		e.log.Info("run waits for its kernel", "context", c.ID, "slot", slot, "why", detail)
		e.stream(c.ID).updates(slot, us)
		e.stream(c.ID).flush()
	}
}
