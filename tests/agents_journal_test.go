package tests

import (
	"testing"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/protocol"
)

// Agent kernels read and write the value journal of the project they run
// (docs/scale-out.md, "Values"): a context whose agent is lost moves to
// another agent's kernel and gets its computed values from the journal
// there, so a statement's side effect is not repeated. Before, agent
// kernels had no journal: the moved context re-ran every statement.
func TestAgentsJournalFollowsAMovedContext(t *testing.T) {
	t.Parallel()
	s := serveAgents(t, map[string]string{"main.py": journalMain, "side.py": journalSide}, agent.CoordinatorConfig{Grace: 500 * time.Millisecond})
	// Both agents run the project from its directory (a shared file
	// system), and write the journal right after each result.
	env := []string{"RIPPLE_VALUES_IDLE_MS=0"}
	a1 := startAgentEnv(t, env, nil, s.coord.Addr(), s.dir, "--host", "first")
	s.waitStatus(t, "the first agent's kernel", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	c, _ := connect(t, s.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil || r.updates.Values()["main:main/y"] != "42" {
		t.Fatalf("first run: failed %+v, values %v", r.failed, r.updates.Values())
	}
	// A recompute that returned means the journal is written.
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)
	lines := func() string { return readFile(t, s.dir, "../ran.log") }
	if got := lines(); got != "x\n" {
		t.Fatalf("ran.log after the first agent's runs: %q", got)
	}
	startAgentEnv(t, env, nil, s.coord.Addr(), s.dir, "--host", "second")
	s.waitStatus(t, "both agents' kernels", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 2 })

	a1.kill9(t)
	waitKernelRestarted(t, c)
	r = c.waitRun(id)
	if r.failed != nil || r.updates.Values()["main:main/y"] != "42" {
		t.Fatalf("run on the second agent: failed %+v, values %v", r.failed, r.updates.Values())
	}
	s.waitStatus(t, "the context on the second agent", func(st protocol.RuntimeStatusResult) bool {
		k, ok := kernelOfContext(st, id)
		return ok && k.Agent != nil && k.Agent.Host == "second"
	})
	if got := lines(); got != "x\n" {
		t.Errorf("ran.log after the move: %q: note ran again on the second agent instead of coming from the journal", got)
	}
}
