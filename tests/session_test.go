package tests

import (
	"slices"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server"
)

// A client that reconnects with its clientId gets its contexts back and
// the current state of each (every current value, fromCache true).
func TestWireReconnectRestoresContexts(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper}, engine.Config{})
	c, _ := connect(t, s.url, "ide")
	id, first := c.newContext("main:main")
	c.c.Close()

	c2, _ := connect(t, s.url, "ide")
	m := c2.waitFor(protocol.NotifyExpressionUpdates, nil)
	var p protocol.ExpressionUpdatesParams
	mustDecode(t, m.Params, &p)
	if p.ContextID != id {
		t.Fatalf("state resend for %s, want %s", p.ContextID, id)
	}
	got := map[string]string{}
	for _, u := range p.Updates {
		if !u.FromCache {
			t.Errorf("resent %s without fromCache", u.ExpressionID)
		}
		got[string(u.ExpressionID)] = u.Payload.Preview
	}
	expect(t, "resent values", got, first.updates.Values())
	// The context is usable again.
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	expect(t, "z", c2.waitRun(id).updates.Values()["main:main/z"], "35")
}

// A reconnect that arrives while the server still holds the old
// connection takes the client id over: the old connection is closed with
// 4001 and the new one gets the state.
func TestWireReconnectTakesOver(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper}, engine.Config{})
	old, _ := connect(t, s.url, "ide")
	id, _ := old.newContext("main:main")
	fresh, _ := connect(t, s.url, "ide")
	if code, err := old.c.CloseCode(stepCtx(t)); err != nil || code != server.CloseTakenOver {
		t.Fatalf("old connection closed with %d (%v), want %d", code, err, server.CloseTakenOver)
	}
	fresh.waitFor(protocol.NotifyExpressionUpdates, nil)
	fresh.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	if r := fresh.waitRun(id); r.failed != nil {
		t.Fatalf("run after the takeover: %+v", r.failed)
	}
}

// After the grace period a disconnected client's contexts are destroyed.
func TestWireGracePeriodEnds(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper},
		engine.Config{DisconnectGrace: 200 * time.Millisecond})
	c, _ := connect(t, s.url, "ide")
	id, _ := c.newContext("main:main")
	observer, _ := connect(t, s.url, "observer")
	c.c.Close()
	if !testenv.PollEvery(stepDeadline(t), 20*time.Millisecond, func() bool {
		var st protocol.RuntimeStatusResult
		observer.call(protocol.MethodRuntimeStatus, nil, &st)
		return !slices.ContainsFunc(st.Kernels, func(k protocol.KernelStatus) bool { return slices.Contains(k.Contexts, id) })
	}) {
		t.Fatal("the context outlived the grace period")
	}
	back, _ := connect(t, s.url, "ide")
	back.callErr(protocol.CodeContextNotFound, protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, string(id))
}
