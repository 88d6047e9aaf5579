package tests

import (
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// freeAddr returns a loopback address with a port free now, so that a
// restarted coordinator listens where its agents reconnect.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Contexts of an --agents-listen coordinator come back after its restart,
// as with the Slurm launcher. Before, the state log restored them while
// no agent had reconnected yet, so every agent slot was closed: "all 16
// kernel slots are closed", the contexts were dropped and recompute
// answered 2002, on every later restart too. Now the slots stay open
// until the first agent is back and the restored contexts run on it.
func TestAgentsCoordinatorRestartContextsComeBack(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	addr := freeAddr(t)
	env := []string{"RIPPLE_AGENT_TOKEN=" + agentToken}
	srv := startServe(t, env, "--agents-listen", addr, dir)
	startAgent(t, addr, dir, "--host", "node1") // the project on a shared file system
	if !testenv.Poll(stepDeadline(t), func() bool { return strings.Contains(srv.stderr.String(), "agent connected") }) {
		t.Fatalf("the agent did not connect:\n%s", srv.stderr.String())
	}
	c, _ := connect(t, srv.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil || r.updates.Values()["main:main/z"] == "" {
		t.Fatalf("first run: failed %+v, values %v", r.failed, r.updates.Values())
	}
	// Two crashes, then a graceful restart (which tells the agent to
	// shut down: it is started again, with its id kept in the root).
	for round, stop := range []syscall.Signal{syscall.SIGKILL, syscall.SIGKILL, syscall.SIGINT} {
		srv.cmd.Process.Signal(stop)
		srv.wait(t)
		srv = startServe(t, env, "--agents-listen", addr, dir)
		if stop == syscall.SIGINT {
			startAgent(t, addr, dir, "--host", "node1")
		}
		c, _ = connect(t, srv.url, "ide")
		// The context is there: a recompute is accepted and runs on the
		// agent that reconnected.
		if !testenv.Poll(stepDeadline(t), func() bool {
			return strings.Contains(srv.stderr.String(), "agent connected")
		}) {
			t.Fatalf("round %d: the agent did not reconnect:\n%s", round, srv.stderr.String())
		}
		c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
		r := c.waitRun(id)
		for i := 0; i < 2 && r.failed == nil && r.updates.Values()["main:main/z"] == ""; i++ {
			r = c.waitRun(id) // the restored run may end first
		}
		if r.failed != nil || r.updates.Values()["main:main/z"] == "" {
			t.Fatalf("round %d: run after the coordinator's restart: failed %+v, values %v\n%s", round, r.failed, r.updates.Values(), srv.stderr.String())
		}
		if strings.Contains(srv.stderr.String(), "kernel slots are closed") {
			t.Fatalf("round %d: contexts not restored:\n%s", round, srv.stderr.String())
		}
	}
}
