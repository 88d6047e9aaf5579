package engine

import (
	"context"
	"errors"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// Connect registers a client (session/initProtocolConnection). A client
// that reconnects with the same id within the grace period (or to a
// restarted server) gets its contexts back and receives the current state
// of each: every latest value of the top frame. A client that did not see
// the context's last run end gets that run as it reported it (fromCache
// true only for values it did not compute, PROTOCOL.md 8.4), the output
// that computed them (replayed, 8.3) and the run's end (executionComplete
// or executionFailed); one that saw it end gets the values fromCache true
// (nothing is computed for it now) and no second end. A
// second connection with an id that is connected replaces the first as the
// receiver of notifications.
func (e *Engine) Connect(ctx context.Context, clientID string, c Client) (protocol.InitProtocolConnectionResult, error) {
	if err := e.checkRunning(); err != nil {
		return protocol.InitProtocolConnectionResult{}, err
	}
	mods, err := e.ws.Modules()
	if err != nil {
		return protocol.InitProtocolConnectionResult{}, err
	}
	py := e.interpreter()
	res := protocol.InitProtocolConnectionResult{Version: protocol.Version, ProjectRoot: e.ws.Root(), Modules: make([]string, 0, len(mods)),
		Python: &protocol.PythonInfo{Version: py.Version, Path: py.Path}}
	for _, m := range mods {
		res.Modules = append(res.Modules, m.Name)
	}

	e.clients.connect(clientID, c)
	e.tellChangedWhileDown(clientID, "") // its restored buffers (downchange.go)

	restored, err := e.store.ClientConnected(clientID)
	if err != nil {
		return protocol.InitProtocolConnectionResult{}, err
	}
	for _, rc := range restored {
		top, err := e.store.TopFrame(nil, rc.ID)
		if err != nil {
			continue // empty stack: nothing to show or run
		}
		if e.kept.sawEnd(rc.ID, clientID) {
			// It saw its last run to the end (it left afterwards, within
			// the grace period): nothing runs for it now, so the values
			// are the state it had (fromCache true), and that run does
			// not end a second time.
			e.resend(rc.ID, top)
		} else {
			// Values computed in a run it did not see (it ran while the
			// client was away, or before the server restarted): that run
			// as it reported them (8.4), its output (8.3) and its end.
			e.resendAsRun(rc.ID, top)
			e.replayTo(clientID, rc.ID)
			if rc.LastResult != nil {
				e.stream(rc.ID).send(protocol.NotifyExecutionFailed, protocol.ExecutionFailedParams{ContextID: rc.ID, KernelID: rc.KernelSlot, Result: *rc.LastResult})
			} else if rc.Status == contexts.StatusIdle {
				e.stream(rc.ID).send(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: rc.ID, KernelID: rc.KernelSlot})
			}
		}
		// A run stopped when the client left is run again; values still
		// current come from the cache and cost nothing. A context whose
		// last run completed is current already. Nobody asked for this
		// run: it keeps the kind of the run it replaces (runpolicy.go).
		if rc.LastResult != nil || rc.Status == contexts.StatusQueued || rc.Status == contexts.StatusRunning {
			if err := e.apply(jobs.Recompute{Context: jobs.ContextID(rc.ID), Reason: e.policies.rerunReason(rc.ID)}); err != nil {
				e.log.Warn("refresh reconnected context", "context", rc.ID, "err", err)
			}
		}
	}
	return res, nil
}

// Disconnect starts the grace period of the client's contexts. c is the
// Client given to Connect: a stale connection of a client id that has
// already reconnected does not disconnect the new one. When the grace
// period ends without a reconnect, the contexts no other connected client
// uses are destroyed and the client's text buffers are closed.
func (e *Engine) Disconnect(clientID string, c Client) {
	if !e.clients.disconnect(clientID, c) {
		return
	}

	orphaned, err := e.store.ClientDisconnected(clientID, time.Now())
	if err != nil {
		e.log.Warn("disconnect", "client", clientID, "err", err)
	}
	// Nobody watches these contexts any more: stop their runs so they do
	// not hold a kernel other clients share for the whole grace period. A
	// reconnect brings them up to date again (Connect).
	for _, id := range orphaned {
		if err := e.queue.AbortContext(jobs.ContextID(id), jobs.ErrInterrupted); err != nil && !errors.Is(err, jobs.ErrShutdown) {
			e.log.Debug("interrupt disconnected context", "context", id, "err", err)
		}
	}
	e.lifeMu.Lock()
	stopped := e.stopped
	e.lifeMu.Unlock()
	if stopped {
		return
	}
	e.clients.startGrace(clientID, e.cfg.DisconnectGrace, func() {
		e.goBackground(func(context.Context) { e.expire(clientID) })
	})
}

// expire ends a client's grace period.
func (e *Engine) expire(clientID string) {
	if e.clients.endGrace(clientID) {
		return
	}
	e.policies.forgetClient(clientID)
	ids, err := e.store.Expired(nil, time.Now().Add(-e.cfg.DisconnectGrace+time.Millisecond))
	if err != nil {
		return
	}
	for _, id := range ids {
		if err := e.destroy(id); err != nil {
			e.log.Debug("expire context", "context", id, "err", err)
		}
	}
	for _, p := range e.ws.CloseClient(workspace.ClientID(clientID)) {
		e.recordBuffer(e.bg, p)
		// Unsaved edits dropped: the module goes back to its disk version.
		if err := e.edited(p, jobs.OriginClient); err != nil {
			e.log.Debug("revert closed buffer", "path", p, "err", err)
		}
	}
}
