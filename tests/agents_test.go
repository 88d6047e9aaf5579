package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// End-to-end tests of runtime agents (docs/scale-out.md): an
// in-process coordinator (engine + WebSocket server + agents launcher on
// loopback) and real `ripple agent` processes, each in a working
// directory of its own, with real python3 kernels.

const agentToken = "agent-e2e-token"

// agentsStack is a coordinator serving a project to WebSocket clients,
// its kernels coming from agents.
type agentsStack struct {
	*stack
	coord *agent.Coordinator
}

func serveAgents(t *testing.T, files map[string]string, cfg agent.CoordinatorConfig) *agentsStack {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Token = agentToken
	if cfg.Slots == 0 {
		cfg.Slots = 4
	}
	coord, err := agent.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(coord.Close)
	s := serveProject(t, files, engine.Config{Kernels: coord.Size(), Launcher: coord})
	return &agentsStack{stack: s, coord: coord}
}

// agentProc is a running `ripple agent`.
type agentProc struct {
	cmd    *exec.Cmd
	dir    string
	stderr *syncbuf.Buffer
	done   chan struct{}
	err    error
	seen   map[int]bool // its kernels, killed at cleanup if still alive
}

// startAgent runs `ripple agent` against addr in dir (a new temp dir when
// empty) with extra flags.
func startAgent(t *testing.T, addr, dir string, args ...string) *agentProc {
	t.Helper()
	return startAgentVia(t, nil, addr, dir, args...)
}

// startAgentVia is startAgent with the command run through prefix (ip
// netns exec NS, which execs it: the process is the agent's).
func startAgentVia(t *testing.T, prefix []string, addr, dir string, args ...string) *agentProc {
	t.Helper()
	return startAgentEnv(t, nil, prefix, addr, dir, args...)
}

// startAgentEnv is startAgentVia with env added to the agent's environment.
func startAgentEnv(t *testing.T, env, prefix []string, addr, dir string, args ...string) *agentProc {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	bin := buildBinary(t)
	all := append(append(slices.Clone(prefix), bin, "agent", "--coordinator", addr, "--token", agentToken, "--root", dir, "--spare=false"), args...)
	p := &agentProc{cmd: exec.Command(all[0], all[1:]...), dir: dir, stderr: &syncbuf.Buffer{}, done: make(chan struct{}), seen: map[int]bool{}}
	p.cmd.Stderr = p.stderr
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kernels()
		select {
		case <-p.done:
		default:
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(20 * time.Second):
				p.cmd.Process.Kill()
				<-p.done
			}
		}
		var pids []int
		for pid := range p.seen {
			pids = append(pids, pid)
		}
		waitGone(t, pids) // no kernel outlives its agent
		if t.Failed() {
			t.Logf("ripple agent %s stderr:\n%s", dir, p.stderr.String())
		}
	})
	return p
}

// kernels records and returns the python processes below the agent.
func (p *agentProc) kernels() []int {
	var out []int
	for _, pid := range descendants(p.cmd.Process.Pid) {
		if strings.Contains(cmdline(pid), "python") {
			p.seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// kill9 kills the agent (its kernels go with it: death pipe) and waits.
func (p *agentProc) kill9(t *testing.T) {
	t.Helper()
	ks := p.kernels()
	p.cmd.Process.Kill()
	<-p.done
	waitGone(t, ks)
}

// waitStatus polls runtime/status until ok holds.
func (s *agentsStack) waitStatus(t *testing.T, what string, ok func(protocol.RuntimeStatusResult) bool) protocol.RuntimeStatusResult {
	t.Helper()
	ctx := stepCtx(t)
	var st protocol.RuntimeStatusResult
	if !testenv.PollEvery(stepDeadline(t), 10*time.Millisecond, func() bool {
		var err error
		if st, err = s.eng.Status(ctx); err != nil {
			t.Fatal(err)
		}
		return ok(st)
	}) {
		b, _ := json.Marshal(st)
		t.Fatalf("waiting for %s: runtime/status %s", what, b)
	}
	return st
}

// readyAgentKernels counts agent kernels that serve (ready or busy).
func readyAgentKernels(st protocol.RuntimeStatusResult) int {
	n := 0
	for _, k := range st.Kernels {
		if k.Agent != nil && (k.State == "ready" || k.State == "busy") {
			n++
		}
	}
	return n
}

func kernelOfContext(st protocol.RuntimeStatusResult, id protocol.ContextID) (protocol.KernelStatus, bool) {
	for _, k := range st.Kernels {
		if slices.Contains(k.Contexts, id) {
			return k, true
		}
	}
	return protocol.KernelStatus{}, false
}

// agentsSetup is what most agent tests start from: a coordinator serving
// a project, agents of one kernel each, ready, and an IDE client.
type agentsSetup struct {
	*agentsStack
	agents []*agentProc
	c      *client
}

// setupAgents serves files with cfg, starts one agent per host name (a
// working directory of its own each), waits for their kernels and
// connects a client.
func setupAgents(t *testing.T, files map[string]string, cfg agent.CoordinatorConfig, hosts ...string) *agentsSetup {
	t.Helper()
	f := &agentsSetup{agentsStack: serveAgents(t, files, cfg)}
	for _, h := range hosts {
		f.agents = append(f.agents, startAgent(t, f.coord.Addr(), "", "--host", h))
	}
	f.waitStatus(t, fmt.Sprintf("%d agent kernels", len(hosts)), func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == len(hosts) })
	f.c, _ = connect(t, f.url, "ide")
	return f
}

// runFirst runs main:first in a new context and returns it, the kernel
// runtime/status puts it on and the run.
func (f *agentsSetup) runFirst(t *testing.T) (protocol.ContextID, protocol.KernelStatus, *run) {
	t.Helper()
	a, r := f.c.newContext("main:first")
	if r.failed != nil {
		t.Fatalf("first failed: %+v", r.failed)
	}
	st, err := f.eng.Status(stepCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := kernelOfContext(st, a)
	return a, k, r
}

// waitValue waits until context id has a value for expression expr (on
// kernel kernelID when it is not -1): the run is past that statement.
func (c *client) waitValue(id protocol.ContextID, expr protocol.ExpressionID, kernelID int) {
	c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var p protocol.ExpressionUpdatesParams
		_ = json.Unmarshal(raw, &p)
		return p.ContextID == id && (kernelID < 0 || p.KernelID == kernelID) && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == expr && u.Payload.Type == protocol.PayloadValue
		})
	})
}

// kernelIDs returns the kernelId of every provenance notification of
// context id among messages.
func kernelIDs(t *testing.T, messages []servertest.Message, id protocol.ContextID) map[int]int {
	t.Helper()
	got := map[int]int{}
	for _, m := range messages {
		if !m.IsNotification() || !slices.Contains(provenanceMethods, m.Method) {
			continue
		}
		var p struct {
			ContextID            protocol.ContextID `json:"contextId"`
			VisualizationContext struct {
				ContextID protocol.ContextID `json:"contextId"`
			} `json:"visualizationContext"`
			KernelID *int `json:"kernelId"`
		}
		mustDecode(t, m.Params, &p)
		if p.ContextID != id && p.VisualizationContext.ContextID != id {
			continue
		}
		if p.KernelID == nil {
			t.Fatalf("%s without kernelId: %s", m.Method, trim(string(m.Params)))
		}
		got[*p.KernelID]++
	}
	return got
}

const agentsMain = `import os, time


def first():
    x = 6
    print("first ran in", os.getcwd())
    y = x * 2


def second():
    a = 5
    print("second ran")
    b = a + 1


def slow():
    n = 1
    time.sleep(60)
    m = n + 1
`

// Two agents of one kernel each: two contexts go one to each agent, every
// notification names the kernel runtime/status puts the context on, the
// agents are listed with their kernels, and an interrupt and a restart
// reach a kernel through its agent.
func TestAgentsSpreadProvenanceInterruptRestart(t *testing.T) {
	t.Parallel()
	s := serveAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{})
	a1 := startAgent(t, s.coord.Addr(), "", "--host", "alpha", "--job-id", "j1")
	startAgent(t, s.coord.Addr(), "", "--host", "beta", "--launcher", "test")
	s.waitStatus(t, "two agent kernels", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 2 })

	c, _ := connect(t, s.url, "ide")
	a, ra := c.newContext("main:first")
	if ra.failed != nil {
		t.Fatalf("first failed: %+v", ra.failed)
	}
	b, rb := c.newContext("main:second")
	if rb.failed != nil {
		t.Fatalf("second failed: %+v", rb.failed)
	}
	st, err := s.eng.Status(stepCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	ka, _ := kernelOfContext(st, a)
	kb, _ := kernelOfContext(st, b)
	if ka.Agent == nil || kb.Agent == nil || ka.Agent.ID == kb.Agent.ID {
		t.Fatalf("contexts not spread over the two agents: %+v / %+v", ka, kb)
	}
	for _, k := range []protocol.KernelStatus{ka, kb} {
		if k.Launcher != protocol.LauncherAgents {
			t.Errorf("kernel %d launcher %q, want %q", k.ID, k.Launcher, protocol.LauncherAgents)
		}
	}
	if !strings.Contains(ra.output, a1.dir) && !strings.Contains(rb.output, "second ran") {
		t.Errorf("outputs %q / %q", ra.output, rb.output)
	}
	expect(t, "a's kernelIds", kernelIDs(t, ra.messages, a), map[int]int{ka.ID: kernelIDs(t, ra.messages, a)[ka.ID]})
	expect(t, "b's kernelIds", kernelIDs(t, rb.messages, b), map[int]int{kb.ID: kernelIDs(t, rb.messages, b)[kb.ID]})
	if len(kernelIDs(t, ra.messages, a)) == 0 {
		t.Error("no provenance notification for a")
	}
	if len(st.Agents) != 2 {
		t.Fatalf("runtime/status agents: %+v", st.Agents)
	}
	hosts := map[string]protocol.AgentStatus{}
	for _, ag := range st.Agents {
		hosts[ag.Host] = ag
	}
	if al := hosts["alpha"]; al.JobID != "j1" || al.Launcher != "manual" || len(al.Kernels) != 1 || al.LeaseAgeMs < 0 {
		t.Errorf("agent alpha: %+v", al)
	}
	if be := hosts["beta"]; be.Launcher != "test" || len(be.Kernels) != 1 {
		t.Errorf("agent beta: %+v", be)
	}

	// Interrupt through the agent: the run is in its sleep.
	d, _ := createPushed(c, "main:slow")
	c.waitValue(d, "main:slow/n", -1)
	c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: d}, nil)
	r := c.waitRun(d)
	if r.failed == nil || r.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("slow ended %+v, want interrupted", r.failed)
	}

	// Restart through the agent: a's kernel is replaced, a re-runs on the
	// same kernelId, and its owner is told.
	c.call(protocol.MethodRestartKernel, protocol.RestartKernelParams{ContextID: a}, nil)
	m := c.waitFor(protocol.NotifyKernelRestarted, nil)
	var kr protocol.KernelRestartedParams
	mustDecode(t, m.Params, &kr)
	if kr.KernelID != ka.ID || kr.StatePreserved {
		t.Errorf("kernelRestarted %+v, want kernel %d, state lost", kr, ka.ID)
	}
	r = c.waitRun(a)
	if r.failed != nil {
		t.Fatalf("a's re-run after the restart: %+v", r.failed)
	}
	for id := range kernelIDs(t, r.messages, a) {
		if id != ka.ID {
			t.Errorf("a's re-run on kernel %d, want %d", id, ka.ID)
		}
	}
	st2, _ := s.eng.Status(stepCtx(t))
	if k, _ := kernelOfContext(st2, a); k.PID == ka.PID {
		t.Errorf("a's kernel pid %d unchanged after the restart", k.PID)
	}
}

// createPushed creates a context with an ExplicitCall of pointer and does
// not wait for its run.
func createPushed(c *client, pointer string) (protocol.ContextID, error) {
	var res protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
	mp, err := protocol.ParseMethodPointer(pointer)
	if err != nil {
		return "", err
	}
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: res.ContextID, StackItem: protocol.NewExplicitCall(mp)}, nil)
	return res.ContextID, nil
}

// waitKernelRestarted reads messages until runtime/kernelRestarted.
func waitKernelRestarted(t *testing.T, c *client) protocol.KernelRestartedParams {
	t.Helper()
	m := c.waitFor(protocol.NotifyKernelRestarted, nil)
	var kr protocol.KernelRestartedParams
	mustDecode(t, m.Params, &kr)
	return kr
}

func noKernelRestarted(t *testing.T, what string, messages []servertest.Message) {
	t.Helper()
	for _, m := range messages {
		if m.IsNotification() && m.Method == protocol.NotifyKernelRestarted {
			t.Errorf("%s: unexpected %s", what, trim(string(m.Params)))
		}
	}
}

// An agent killed with kill -9 (its kernels die with it) and started
// again as the same agent gets its slots back with new kernels: the
// context's owner is told the state was lost ("agent HOST lost") and the
// context re-runs on the same kernelId. A dropped connection whose agent
// and kernels survive comes back with the state: no kernelRestarted, the
// same kernel process.
func TestAgentsKill9AndReconnect(t *testing.T) {
	t.Parallel()
	s := setupAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Grace: time.Minute}, "gamma")
	a1, c := s.agents[0], s.c
	a, k0, _ := s.runFirst(t)

	// The connection drops; the agent and its kernel live on.
	if !s.coord.DropAgent(k0.Agent.ID) {
		t.Fatal("DropAgent: agent not connected")
	}
	s.waitStatus(t, "the agent back", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: a}, nil)
	r := c.waitRun(a)
	if r.failed != nil {
		t.Fatalf("recompute after the reconnect: %+v", r.failed)
	}
	noKernelRestarted(t, "after a dropped connection", r.messages)
	st, _ := s.eng.Status(stepCtx(t))
	if k, _ := kernelOfContext(st, a); k.ID != k0.ID || k.PID != k0.PID {
		t.Errorf("after the reconnect the context is on kernel %d pid %d, want %d pid %d", k.ID, k.PID, k0.ID, k0.PID)
	}

	// kill -9: the kernel dies with its agent; the same agent comes back.
	a1.kill9(t)
	s.waitStatus(t, "the agent suspended", func(st protocol.RuntimeStatusResult) bool {
		k, _ := kernelOfContext(st, a)
		return k.State == "suspended"
	})
	startAgent(t, s.coord.Addr(), a1.dir, "--host", "gamma") // the same agent: its id is kept in its directory
	kr := waitKernelRestarted(t, c)
	if kr.KernelID != k0.ID || kr.StatePreserved || kr.Reason != "agent gamma lost" || !slices.Contains(kr.ContextIDs, a) {
		t.Errorf("kernelRestarted %+v, want kernel %d, state lost, reason %q, naming %s", kr, k0.ID, "agent gamma lost", a)
	}
	r = c.waitRun(a)
	if r.failed != nil {
		t.Fatalf("re-run after the agent came back: %+v", r.failed)
	}
	for id := range kernelIDs(t, r.messages, a) {
		if id != k0.ID {
			t.Errorf("re-run on kernel %d, want %d", id, k0.ID)
		}
	}
}

// An agent that does not come back within the grace: its context moves
// to another agent's kernel and re-runs there, its owner told
// "agent HOST lost".
func TestAgentsLostAgentContextsMove(t *testing.T) {
	t.Parallel()
	s := setupAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Grace: 500 * time.Millisecond}, "delta")
	a1, c := s.agents[0], s.c
	a, k0, _ := s.runFirst(t)
	// slow is running on delta when it dies.
	d, _ := createPushed(c, "main:slow")
	c.waitValue(d, "main:slow/n", k0.ID)
	startAgent(t, s.coord.Addr(), "", "--host", "epsilon")
	s.waitStatus(t, "epsilon's kernel", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 2 })

	a1.kill9(t)
	kr := waitKernelRestarted(t, c)
	if kr.KernelID != k0.ID || kr.StatePreserved || kr.Reason != "agent delta lost" || !slices.Contains(kr.ContextIDs, a) || !slices.Contains(kr.ContextIDs, d) {
		t.Errorf("kernelRestarted %+v, want kernel %d, state lost, reason %q, naming %s and %s", kr, k0.ID, "agent delta lost", a, d)
	}
	// Both re-run on epsilon's kernel, in either order: a completes; slow
	// is interrupted once it runs there.
	var aDone, dDone bool
	var aMessages []servertest.Message
	ctx := stepCtx(t)
	for !aDone || !dDone {
		m, err := c.c.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for the re-runs on epsilon: %v", err)
		}
		aMessages = append(aMessages, m)
		if !m.IsNotification() {
			continue
		}
		var p struct {
			ContextID protocol.ContextID `json:"contextId"`
			KernelID  int                `json:"kernelId"`
			Updates   []protocol.ExpressionUpdate
		}
		_ = json.Unmarshal(m.Params, &p)
		switch {
		case p.ContextID == d && m.Method == protocol.NotifyExpressionUpdates && p.KernelID != k0.ID:
			if slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool { return u.ExpressionID == "main:slow/n" }) {
				c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: d}, nil)
			}
		case p.ContextID == d && m.Method == protocol.NotifyExecutionFailed:
			dDone = true
		case p.ContextID == a && m.Method == protocol.NotifyExecutionComplete:
			aDone = true
		case p.ContextID == a && m.Method == protocol.NotifyExecutionFailed:
			t.Fatalf("a's re-run on the other agent failed: %s", m.Params)
		}
	}
	r := &run{messages: aMessages}
	st := s.waitStatus(t, "delta gone from the agents", func(st protocol.RuntimeStatusResult) bool { return len(st.Agents) == 1 })
	k1, _ := kernelOfContext(st, a)
	if k1.Agent == nil || k1.Agent.Host != "epsilon" || k1.ID == k0.ID {
		t.Fatalf("context on %+v after delta was lost, want epsilon's kernel", k1)
	}
	for id := range kernelIDs(t, r.messages, a) {
		if id != k1.ID {
			t.Errorf("re-run on kernel %d, want %d", id, k1.ID)
		}
	}
}

// A lease that expires fences the agent (SIGSTOP stands for a hung host):
// the frames it sends once it runs again are refused, and it reconnects
// with its kernel, whose state is kept.
func TestAgentsLeaseExpiryFences(t *testing.T) {
	t.Parallel()
	s := setupAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Lease: time.Second, Heartbeat: 100 * time.Millisecond, Grace: time.Minute}, "zeta")
	a1, c := s.agents[0], s.c
	a, k0, _ := s.runFirst(t)

	a1.cmd.Process.Signal(syscall.SIGSTOP)
	s.waitStatus(t, "zeta fenced", func(st protocol.RuntimeStatusResult) bool {
		k, _ := kernelOfContext(st, a)
		return k.State == "suspended"
	})
	a1.cmd.Process.Signal(syscall.SIGCONT)
	s.waitStatus(t, "zeta back", func(st protocol.RuntimeStatusResult) bool {
		return readyAgentKernels(st) == 1 && s.coord.FencedFrames() > 0
	})
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: a}, nil)
	r := c.waitRun(a)
	if r.failed != nil {
		t.Fatalf("recompute after the fence: %+v", r.failed)
	}
	noKernelRestarted(t, "after the fence", r.messages)
	st, _ := s.eng.Status(stepCtx(t))
	if k, _ := kernelOfContext(st, a); k.PID != k0.PID {
		t.Errorf("kernel pid %d after the fence, want %d (kept)", k.PID, k0.PID)
	}
}

// A wrong token: the agent exits 1 naming it; the coordinator goes on
// serving its local kernel and the right agents (a local kernel beside
// an agent's: each is listed with its launcher).
func TestAgentsWrongToken(t *testing.T) {
	t.Parallel()
	s := serveAgents(t, map[string]string{"main.py": agentsMain}, agent.CoordinatorConfig{Local: 1})
	bad := startAgent(t, s.coord.Addr(), "", "--token", "not-the-token")
	select {
	case <-bad.done:
	case <-stepCtx(t).Done():
		t.Fatal("an agent with a wrong token did not exit")
	}
	var ee *exec.ExitError
	if !errors.As(bad.err, &ee) || ee.ExitCode() != 1 || !strings.Contains(bad.stderr.String(), "wrong agent token") {
		t.Fatalf("wrong token: exit %v, stderr:\n%s", bad.err, bad.stderr.String())
	}
	good := startAgent(t, s.coord.Addr(), "")
	st := s.waitStatus(t, "the right agent", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	if len(st.Kernels) != 2 || st.Kernels[0].ID != 0 || st.Kernels[0].Launcher != protocol.LauncherLocal || st.Kernels[0].Agent != nil ||
		st.Kernels[1].ID != 1 || st.Kernels[1].Launcher != protocol.LauncherAgents || st.Kernels[1].Agent == nil || len(st.Agents) != 1 {
		b, _ := json.Marshal(st)
		t.Fatalf("runtime/status %s, want local kernel 0 and the agent's kernel 1", b)
	}

	// The coordinator stops: it tells the agent, which stops its kernel
	// and exits 0.
	kernels := good.kernels()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.eng.Stop(sctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-good.done:
	case <-stepCtx(t).Done():
		t.Fatal("the agent did not exit after the coordinator's shutdown")
	}
	if good.err != nil {
		t.Fatalf("agent after shutdown: %v\n%s", good.err, good.stderr.String())
	}
	waitGone(t, kernels)
}

// The coordinator killed with kill -9: the agent keeps its kernel for its
// reconnect grace, then stops it and exits 1 saying why; no kernel is
// left.
func TestAgentsCoordinatorKilled(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	srv := startServe(t, []string{"RIPPLE_AGENT_TOKEN=" + agentToken}, "--agents-listen", "127.0.0.1:0", dir)
	m := regexp.MustCompile(`ripple: agents connect to (127\.0\.0\.1:\d+) \(loopback, plain TCP\)`).FindStringSubmatch(srv.stderr.String())
	if m == nil {
		t.Fatalf("no agents address in ripple serve's stderr:\n%s", srv.stderr.String())
	}
	a := startAgent(t, m[1], "", "--reconnect-grace", "1s")
	if !testenv.PollEvery(stepDeadline(t), 10*time.Millisecond, func() bool {
		return strings.Contains(a.stderr.String(), "msg=connected") && len(a.kernels()) > 0
	}) {
		t.Fatalf("the agent did not connect:\n%s", a.stderr.String())
	}
	ctx := stepCtx(t)
	kernels := a.kernels()
	srv.cmd.Process.Kill()
	select {
	case <-a.done:
	case <-ctx.Done():
		t.Fatal("the agent outlived its reconnect grace")
	}
	var ee *exec.ExitError
	if !errors.As(a.err, &ee) || ee.ExitCode() != 1 || !strings.Contains(a.stderr.String(), "unreachable for 1s") {
		t.Fatalf("agent exit %v, stderr:\n%s", a.err, a.stderr.String())
	}
	waitGone(t, kernels)
}

const stubbornMain = `import time


def stubborn():
    n = 1
    while True:
        try:
            time.sleep(0.05)
        except KeyboardInterrupt:
            pass
`

// A run that ignores the interrupt: the agent kills its kernel after its
// interrupt timeout and starts another, as a local pool would; the run
// ends interrupted with the state loss said, and the owner is told of
// the restart.
func TestAgentsInterruptTimeoutRestartsKernel(t *testing.T) {
	t.Parallel()
	s := setupAgents(t, map[string]string{"main.py": stubbornMain}, agent.CoordinatorConfig{}, "eta")
	c := s.c
	d, _ := createPushed(c, "main:stubborn")
	c.waitValue(d, "main:stubborn/n", -1)
	st, _ := s.eng.Status(stepCtx(t))
	k0, _ := kernelOfContext(st, d)
	c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: d}, nil)
	r := c.waitRun(d)
	if r.failed == nil || r.failed.Kind != protocol.ResultInterrupted || !strings.Contains(r.failed.Message, "restarted") {
		t.Fatalf("stubborn ended %+v, want interrupted with the kernel restarted", r.failed)
	}
	kr := waitKernelRestarted(t, c)
	if kr.KernelID != k0.ID || kr.StatePreserved {
		t.Errorf("kernelRestarted %+v, want kernel %d, state lost", kr, k0.ID)
	}
	st = s.waitStatus(t, "eta's new kernel", func(st protocol.RuntimeStatusResult) bool { return readyAgentKernels(st) == 1 })
	if k, _ := kernelOfContext(st, d); k.PID == k0.PID {
		t.Errorf("kernel pid %d unchanged after the kill", k.PID)
	}
}

// ripple run --agents-listen: the run waits for two agent kernels, then
// its entries run on them. The agents' kernels imported what --preload
// names when they started.
func TestAgentsBatchRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.py", agentsMain)
	writeFile(t, dir, "probe.py", "import sys\n\n\ndef preloaded():\n    assert 'json.tool' in sys.modules\n")
	report := filepath.Join(t.TempDir(), "report.json")
	run := startBatchRun(t, dir, "--entry", "main:first", "--entry", "main:second", "--entry", "probe:preloaded", "--kernels", "2", "--json", report, "--log-level", "info")
	startAgent(t, run.addr, "", "--host", "theta", "--preload", "json.tool")
	startAgent(t, run.addr, "", "--host", "iota", "--preload", "json.tool")
	if code := run.wait(t); code != 0 {
		t.Fatalf("ripple run: exit %d", code)
	}
	reportPassed(t, report, 2, 3)
}

// reportPassed checks the JSON report of a ripple run of entries: it ran
// on kernels kernels, and its entries entries all passed.
func reportPassed(t *testing.T, report string, kernels, entries int) {
	t.Helper()
	var rep struct {
		Kernels int `json:"kernels"`
		Entries []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"entries"`
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, b, &rep)
	if rep.Kernels != kernels || len(rep.Entries) != entries {
		t.Fatalf("report %s, want %d entries on %d kernels", b, entries, kernels)
	}
	for _, r := range rep.Entries {
		if r.Status != "passed" {
			t.Errorf("entry %s: %s", r.ID, r.Status)
		}
	}
}

// killerMain's statement kills the agent that runs its kernel (the
// kernel's parent), as a Slurm job killed for the memory a run takes would.
const killerMain = `import os, time


def boom():
    n = 1
    os.kill(os.getppid(), 9)
    time.sleep(30)
`

// The crash-loop rule for agents: a run in flight when its agent is lost
// is run again on another kernel once; lost a second time in a row, it
// fails (kernelDied, naming the agent) and is not run a third time, so a
// run that ends its agents does not consume them (or batch jobs) forever.
func TestAgentsRunThatKillsItsAgentTwiceStops(t *testing.T) {
	t.Parallel()
	s := setupAgents(t, map[string]string{"main.py": killerMain}, agent.CoordinatorConfig{Grace: 300 * time.Millisecond}, "eta", "theta", "iota")
	c := s.c
	id, err := createPushed(c, "main:boom")
	if err != nil {
		t.Fatal(err)
	}
	m := c.waitFor(protocol.NotifyExecutionFailed, func(raw json.RawMessage) bool {
		var p protocol.ExecutionFailedParams
		_ = json.Unmarshal(raw, &p)
		return p.ContextID == id
	})
	var failed protocol.ExecutionFailedParams
	mustDecode(t, m.Params, &failed)
	if failed.Result.Kind != protocol.ResultKernelDied || !strings.Contains(failed.Result.Message, "the second time in a row") {
		t.Fatalf("executionFailed %+v, want kernelDied naming the second loss in a row", failed.Result)
	}
	// Two agents were lost, the third is untouched and never ran it.
	st := s.waitStatus(t, "two agents gone", func(st protocol.RuntimeStatusResult) bool { return len(st.Agents) == 1 })
	alive := 0
	for _, a := range s.agents {
		select {
		case <-a.done:
		default:
			alive++
		}
	}
	if alive != 1 {
		t.Fatalf("%d agents alive, want 1 (status %+v)", alive, st.Agents)
	}
	// Nothing more of the context: no third run.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	for {
		m, err := c.c.Next(ctx)
		if err != nil {
			break
		}
		var p struct {
			ContextID protocol.ContextID `json:"contextId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if m.IsNotification() && p.ContextID == id {
			t.Errorf("after the failure: %s %s", m.Method, trim(string(m.Params)))
		}
	}
	if st, err := s.eng.Status(stepCtx(t)); err != nil || len(st.Agents) != 1 {
		t.Fatalf("after the failure: agents %+v, err %v; want the third one still there", st.Agents, err)
	}
}
