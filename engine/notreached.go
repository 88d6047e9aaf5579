package engine

import (
	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/protocol"
)

// markNotReached ends what a run that was cut short left waiting
// (PROTOCOL.md 8.4): every statement of the context's stack whose latest
// update is a Pending that waits or runs becomes Pending "not reached"
// with the reason kind (interrupted, kernelDied), in the store and, for
// the top frame, on the stream, so that no client keeps showing it
// pending. After an interrupt the kernel reports the statements it did
// not reach itself; this covers what it could not (a kernel that died, or
// was restarted because it did not stop). The update keeps everything
// but its payload (range, type, method call), so clients keep the last
// value they show, dimmed.
func (e *Engine) markNotReached(id protocol.ContextID, kernelID int, st *stream, kind string) {
	stack, err := e.store.Stack(nil, id)
	if err != nil {
		return // destroyed meanwhile
	}
	for i, f := range stack {
		marked := notReachedUpdates(e.frameUpdates(f), kind)
		if len(marked) == 0 {
			continue
		}
		if err := e.store.RecordUpdates(f, marked); err != nil {
			continue // popped meanwhile
		}
		if i == len(stack)-1 {
			st.updates(kernelID, marked)
		}
	}
}

// frameUpdates returns the latest update of every statement of frame f.
func (e *Engine) frameUpdates(f *contexts.Frame) []protocol.ExpressionUpdate {
	us, err := e.store.FrameUpdates(nil, f.ContextID, f.Depth, 0)
	if err != nil {
		return nil
	}
	return us
}

// notReachedUpdates returns, for each update of us that waits or runs, the
// same update turned into Pending "not reached" with the reason kind.
func notReachedUpdates(us []protocol.ExpressionUpdate, kind string) []protocol.ExpressionUpdate {
	var out []protocol.ExpressionUpdate
	for _, u := range us {
		if !u.Payload.IsWaiting() && !u.Payload.IsRunning() {
			continue
		}
		u.Payload = protocol.NotReachedPayload(kind, "")
		u.FromCache = false
		out = append(out, u)
	}
	return out
}

// ownerIDs returns the client ids of a context's owners.
func ownerIDs(c *contexts.ExecutionContext) []string {
	ids := make([]string, len(c.Owners))
	for i, o := range c.Owners {
		ids[i] = o.ClientID
	}
	return ids
}
