package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/protocol"
)

// waitingUpdate waits for an expressionUpdates of context id that says
// its run waits for a kernel, and returns the reason's detail.
func (c *client) waitingUpdate(id protocol.ContextID) string {
	c.t.Helper()
	var detail string
	c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var p protocol.ExpressionUpdatesParams
		_ = json.Unmarshal(raw, &p)
		i := slices.IndexFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.Payload.Type == protocol.PayloadPending && u.Payload.Reason != nil && u.Payload.Reason.Kind == protocol.ReasonWaitingForKernel
		})
		if p.ContextID != id || i < 0 {
			return false
		}
		detail = p.Updates[i].Payload.Reason.Detail
		return true
	})
	return detail
}

// Waiting is visible: while a context's run waits for a lost agent to
// come back (its grace), its statements are Pending with reason
// waitingForKernel naming the agent; before, clients heard nothing for
// up to the grace. Once the agent is back, the run completes.
func TestAgentsWaitingForKernelIsVisible(t *testing.T) {
	t.Parallel()
	s := setupAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Grace: time.Minute}, "zeta")
	a1, c := s.agents[0], s.c
	id, _, _ := s.runFirst(t)
	a1.kill9(t)
	s.waitStatus(t, "the agent suspended", func(st protocol.RuntimeStatusResult) bool {
		k, _ := kernelOfContext(st, id)
		return k.State == "suspended"
	})
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	if d := c.waitingUpdate(id); !strings.Contains(d, "agent zeta lost") || !strings.Contains(d, "1m0s") {
		t.Errorf("waiting detail %q, want the lost agent and its grace", d)
	}
	startAgent(t, s.coord.Addr(), a1.dir, "--host", "zeta")
	if r := c.waitRun(id); r.failed != nil || r.updates.Values()["main:first/y"] != "12" {
		t.Fatalf("run after the agent came back: failed %+v, values %v", r.failed, r.updates.Values())
	}
}
