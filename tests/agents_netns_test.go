package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/protocol"
)

// netHost is a network namespace joined to this one by a veth pair: a
// second host on this machine, reached at agentAddr's peer hostAddr.
type netHost struct {
	name     string // the namespace
	hostAddr string // this side's address, in the coordinator's namespace
	link     string // this side's end of the veth pair
}

// newNetHost makes a namespace with its own address. It needs what `ip
// netns add` needs (root, or CAP_SYS_ADMIN and CAP_NET_ADMIN): without it
// the test is skipped with the command's own error.
func newNetHost(t *testing.T) *netHost {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (Debian's iproute2): no network namespaces for a second host")
	}
	n := rand.IntN(200) + 20
	h := &netHost{name: fmt.Sprintf("ripple-test-%d-%d", os.Getpid(), n), hostAddr: fmt.Sprintf("10.231.%d.1", n)}
	outer, inner := fmt.Sprintf("rpl%dh%d", n, os.Getpid()%1000), fmt.Sprintf("rpl%da%d", n, os.Getpid()%1000)
	h.link = outer
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := ip("netns", "add", h.name); err != nil {
		t.Skipf("cannot make a network namespace for a second host: %v", err)
	}
	t.Cleanup(func() {
		// The veth pair goes with its end in the namespace.
		if err := ip("netns", "del", h.name); err != nil {
			t.Errorf("removing the namespace: %v", err)
		}
	})
	for _, args := range [][]string{
		{"link", "add", outer, "type", "veth", "peer", "name", inner},
		{"link", "set", inner, "netns", h.name},
		{"addr", "add", h.hostAddr + "/30", "dev", outer},
		{"link", "set", outer, "up"},
		{"-n", h.name, "addr", "add", fmt.Sprintf("10.231.%d.2/30", n), "dev", inner},
		{"-n", h.name, "link", "set", inner, "up"},
		{"-n", h.name, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			exec.Command("ip", "link", "del", outer).Run() // if it was made
			t.Fatalf("setting up the second host: %v", err)
		}
	}
	return h
}

// exec is the prefix that runs a command on the second host.
func (h *netHost) exec() []string { return []string{"ip", "netns", "exec", h.name} }

// setLink takes the link to the second host down or up: down, packets
// are dropped without a word to either side (a partition, not a close).
func (h *netHost) setLink(t *testing.T, state string) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", h.link, state).CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s %s: %v: %s", h.link, state, err, out)
	}
}

// An agent on another host (a network namespace, so the coordinator's
// address is not loopback): the coordinator speaks TLS only; an agent
// that does not pin its certificate is refused by its own side, naming
// the flag; one that pins it by fingerprint connects across the veth link
// and its kernel runs a context whose every notification names it.
func TestAgentsOnAnotherHostUseTLS(t *testing.T) {
	t.Parallel()
	h := newNetHost(t)
	s := serveAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Listen: h.hostAddr + ":0"})
	fp := s.coord.Fingerprint()
	if !strings.HasPrefix(fp, "sha256:") {
		t.Fatalf("a coordinator on %s serves without TLS (fingerprint %q)", s.coord.Addr(), fp)
	}

	bare := startAgentVia(t, h.exec(), s.coord.Addr(), "", "--host", "unpinned")
	select {
	case <-bare.done:
	case <-time.After(60 * time.Second):
		t.Fatal("an agent with no pinned certificate did not give up")
	}
	if bare.err == nil || !strings.Contains(bare.stderr.String(), "--coordinator-fingerprint") {
		t.Fatalf("agent without a pin: %v, stderr:\n%s\nwant a refusal naming --coordinator-fingerprint", bare.err, bare.stderr.String())
	}

	startAgentVia(t, h.exec(), s.coord.Addr(), "", "--host", "far", "--coordinator-fingerprint", fp)
	st := s.waitStatus(t, "the far agent's kernel", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	if len(st.Agents) != 1 || st.Agents[0].Host != "far" {
		t.Fatalf("agents %+v, want the one on host far", st.Agents)
	}
	c, _ := connect(t, s.url, "ide")
	id, k, r := (&agentsSetup{agentsStack: s, c: c}).runFirst(t)
	if k.Agent == nil || k.Agent.Host != "far" {
		t.Fatalf("the context runs on %+v, want the far agent's kernel", k)
	}
	if got := r.updates.Values()["main:first/y"]; got != "12" {
		t.Fatalf("y = %q, want 12", got)
	}
	ids := kernelIDs(t, r.messages, id)
	if len(ids) == 0 {
		t.Fatal("no notification of the run names its kernel")
	}
	for kid, n := range ids {
		if kid != k.ID {
			t.Fatalf("%d notifications name kernel %d, the context is on %d", n, kid, k.ID)
		}
	}
}

// A network partition between the coordinator and an agent (the link
// drops every packet; neither side is told): the agent's lease runs out
// and it is fenced, its context suspended; when the link comes back the
// agent reconnects with the same kernels and the context goes on with its
// state (no kernelRestarted, same kernel process).
func TestAgentsNetworkPartition(t *testing.T) {
	t.Parallel()
	h := newNetHost(t)
	s := serveAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Listen: h.hostAddr + ":0",
		Lease: time.Second, Heartbeat: 100 * time.Millisecond, Grace: time.Minute})
	startAgentVia(t, h.exec(), s.coord.Addr(), "", "--host", "far", "--coordinator-fingerprint", s.coord.Fingerprint())
	s.waitStatus(t, "the far agent's kernel", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	c, _ := connect(t, s.url, "ide")
	id, k0, _ := (&agentsSetup{agentsStack: s, c: c}).runFirst(t)

	h.setLink(t, "down")
	s.waitStatus(t, "the partitioned agent fenced", func(st protocol.RuntimeStatusResult) bool {
		k, _ := kernelOfContext(st, id)
		return k.State == "suspended"
	})
	h.setLink(t, "up")
	s.waitStatus(t, "the agent back after the partition", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	r := c.waitRun(id)
	if r.failed != nil {
		t.Fatalf("recompute after the partition: %+v", r.failed)
	}
	noKernelRestarted(t, "after the partition", r.messages)
	st, err := s.eng.Status(stepCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := kernelOfContext(st, id); k.PID != k0.PID {
		t.Errorf("kernel pid %d after the partition, want %d (its state kept)", k.PID, k0.PID)
	}
}
