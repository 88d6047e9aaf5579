package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// A run cut short leaves no statement pending (PROTOCOL.md 8.4): after a
// kernel death or an interrupt, the statements that will not run are
// "not reached" with the reason, in what clients receive and in the store.

// lastUpdates returns the latest update of each statement of context id
// among the notes.
func lastUpdates(notes []note, id protocol.ContextID) map[protocol.ExpressionID]protocol.ExpressionUpdate {
	out := map[protocol.ExpressionID]protocol.ExpressionUpdate{}
	for _, n := range notes {
		if p, ok := n.Params.(protocol.ExpressionUpdatesParams); ok && p.ContextID == id {
			for _, u := range p.Updates {
				out[u.ExpressionID] = u
			}
		}
	}
	return out
}

// checkNotReached fails unless every update of us is settled (neither
// waiting nor running) and each of want is not reached with reason kind.
func checkNotReached(t *testing.T, what string, us map[protocol.ExpressionID]protocol.ExpressionUpdate, kind string, want ...protocol.ExpressionID) {
	t.Helper()
	for id, u := range us {
		if u.Payload.IsWaiting() || u.Payload.IsRunning() {
			t.Errorf("%s: %s left %+v", what, id, u.Payload)
		}
	}
	for _, id := range want {
		u, ok := us[id]
		switch {
		case !ok:
			t.Errorf("%s: no update of %s", what, id)
		case !u.Payload.IsNotReached() || u.Payload.Reason == nil || u.Payload.Reason.Kind != kind:
			t.Errorf("%s: %s is %+v, want not reached, reason %s", what, id, u.Payload, kind)
		}
	}
}

func storedUpdates(t *testing.T, e *engine.Engine, id protocol.ContextID) map[protocol.ExpressionID]protocol.ExpressionUpdate {
	t.Helper()
	us, err := engine.StoredUpdates(e, id)
	must(t, err)
	out := map[protocol.ExpressionID]protocol.ExpressionUpdate{}
	for _, u := range us {
		out[u.ExpressionID] = u
	}
	return out
}

const dieLaterMain = `import os


def main():
    x = 1
    os._exit(3)
    y = x + 1
    return y
`

// The kernel dies (twice: the run and its one re-run): what it did not
// reach is not reached, reason kernelDied, sent before executionFailed
// and kept in the store; x keeps its value.
func TestKernelDeathMarksNotReached(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": dieLaterMain}, engine.Config{})
	id, m := h.startContext("main:main")
	notes := h.client.waitFrom(t, m, "executionFailed kernelDied", isFailed(id, protocol.ResultKernelDied))
	sent := lastUpdates(notes, id)
	checkNotReached(t, "sent before executionFailed", sent, protocol.ReasonKernelDied, "main:main/#1", "main:main/y", "main:main/return")
	expect(t, "x", sent["main:main/x"].Payload.Type, protocol.PayloadValue)

	h.client.waitFrom(t, m+len(notes), "the re-run's executionFailed", isFailed(id, protocol.ResultKernelDied))
	waitIdle(t, h.e)
	stored := storedUpdates(t, h.e, id)
	checkNotReached(t, "stored", stored, protocol.ReasonKernelDied, "main:main/#1", "main:main/y", "main:main/return")
}

const sleepMain = `import time


def main():
    x = 1
    time.sleep(60)
    y = x + 1
    return y
`

// An interrupt: the statements after the interrupted one are not reached,
// reason interrupted (from the kernel, or from the engine for what the
// kernel left), and nothing stays pending or running.
func TestInterruptLeavesNothingPending(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": sleepMain}, engine.Config{})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "x computed: the run sleeps", hasValue(id, "main:main/x"))
	must(t, h.e.Interrupt(h.ctx, clientID, id))
	run := h.client.waitRun(t, m, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("run ended %s, want interrupted", resultString(run.failed))
	}
	checkNotReached(t, "sent", lastUpdates(run.notes, id), protocol.ReasonInterrupted, "main:main/y", "main:main/return")
	checkNotReached(t, "stored", storedUpdates(t, h.e, id), protocol.ReasonInterrupted, "main:main/y", "main:main/return")
}

// An interrupt the kernel ignores restarts it: the kernel sends nothing
// more, the engine marks what it left.
func TestInterruptRestartLeavesNothingPending(t *testing.T) {
	t.Parallel()
	main := strings.Replace(ignoreSigintMain, "        pass\n", "        pass\n    y = x + 1\n", 1)
	h := setup(t, map[string]string{"main.py": main}, engine.Config{InterruptTimeout: 300 * time.Millisecond})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "x computed: the run is in the loop", hasValue(id, "main:main/x"))
	must(t, h.e.Interrupt(h.ctx, clientID, id))
	run := h.client.waitRun(t, m, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("run ended %s, want interrupted", resultString(run.failed))
	}
	checkNotReached(t, "sent", lastUpdates(run.notes, id), protocol.ReasonInterrupted, "main:main/#2", "main:main/y")
	checkNotReached(t, "stored", storedUpdates(t, h.e, id), protocol.ReasonInterrupted, "main:main/#2", "main:main/y")
}
