package tests

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// agentIDs returns the ids of the agents runtime/status lists.
func agentIDs(st protocol.RuntimeStatusResult) []string {
	var ids []string
	for _, a := range st.Agents {
		ids = append(ids, a.ID)
	}
	return ids
}

// waitExit waits for the agent to exit and returns its exit code.
func (p *agentProc) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-stepCtx(t).Done():
		t.Fatalf("the agent did not exit:\n%s", p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// Two `ripple agent`s on one host with the same --root and no --id shared
// one id file and knocked each other off for ever (each reconnect fenced
// the other). Now each process holds its id with a lock: the second one
// generates and keeps an id of its own, and both serve.
func TestAgentsSameRootTwoAgentsTwoIDs(t *testing.T) {
	t.Parallel()
	s := serveAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{})
	root := t.TempDir()
	a1 := startAgent(t, s.coord.Addr(), root, "--host", "same")
	a2 := startAgent(t, s.coord.Addr(), root, "--host", "same")
	st := s.waitStatus(t, "two agents with two kernels", func(st protocol.RuntimeStatusResult) bool {
		return len(st.Agents) == 2 && readyAgentKernels(st) == 2
	})
	if ids := agentIDs(st); ids[0] == ids[1] {
		t.Fatalf("both agents have id %s", ids[0])
	}
	for i, a := range []*agentProc{a1, a2} {
		// The coordinator can list an agent before the agent has logged
		// its connection: wait for the log line, then count.
		testenv.Poll(stepDeadline(t), func() bool { return strings.Contains(a.stderr.String(), "msg=connected") })
		if strings.Contains(a.stderr.String(), "disconnected") || strings.Count(a.stderr.String(), "msg=connected") != 1 {
			t.Errorf("agent %d was knocked off:\n%s", i+1, a.stderr.String())
		}
	}
	// Each id is stable: the second agent, restarted, is the same agent.
	a2.kill9(t)
	s.waitStatus(t, "agent 2 suspended", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	startAgent(t, s.coord.Addr(), root, "--host", "same")
	st = s.waitStatus(t, "agent 2 back", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 2 })
	if got := agentIDs(st); len(got) != 2 {
		t.Fatalf("after agent 2's restart: agents %v, want the same two", got)
	}
}

// Two agents given the same --id: on one host and root the second is
// refused at start (the id's lock is held); on two hosts (two roots) the
// coordinator refuses the second while the first is connected, with a
// message naming the id and what to do, and the first stays connected.
func TestAgentsTakenIDRefused(t *testing.T) {
	t.Parallel()
	s := serveAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{})
	root := t.TempDir()
	a1 := startAgent(t, s.coord.Addr(), root, "--host", "one", "--id", "worker")
	s.waitStatus(t, "agent worker", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })

	local := startAgent(t, s.coord.Addr(), root, "--host", "one", "--id", "worker")
	if code := local.waitExit(t); code != 1 || !strings.Contains(local.stderr.String(), `agent id "worker" is held by another ripple agent on this host`) {
		t.Errorf("second agent with the same --id and root: exit %d, stderr:\n%s", code, local.stderr.String())
	}
	remote := startAgent(t, s.coord.Addr(), "", "--host", "two", "--id", "worker")
	if code := remote.waitExit(t); code != 1 || !strings.Contains(remote.stderr.String(), "agent id worker is in use by a connected agent on one") {
		t.Errorf("second agent with the same --id on another host: exit %d, stderr:\n%s", code, remote.stderr.String())
	}
	if strings.Contains(a1.stderr.String(), "disconnected") || strings.Count(a1.stderr.String(), "msg=connected") != 1 {
		t.Errorf("the first agent was knocked off:\n%s", a1.stderr.String())
	}
	st := s.waitStatus(t, "agent worker still serving", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	if a := st.Agents; len(a) != 1 || a[0].Host != "one" {
		t.Errorf("agents %+v, want worker on host one", a)
	}
}
