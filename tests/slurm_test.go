package tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
	"github.com/ripple-run/ripple/slurm/slurmtest"
)

// End-to-end tests of the slurm launcher: a one-node Slurm
// cluster from Debian's slurm-wlm and munge (slurm/slurmtest), `ripple
// serve` and `ripple run` with --launcher slurm submitting real `ripple
// agent` jobs with real python3 kernels. The only skip: a daemon that
// cannot start on this machine, with its own error text.

// startSlurm brings up the cluster for the test, stopped (every job
// cancelled, nothing left running) when it ends.
func startSlurm(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	if m := slurmtest.Missing(); len(m) > 0 {
		testenv.NeedOrSkip(t, "%s needs %s on PATH (apt-get install slurm-wlm munge; .ci/run does)", t.Name(), strings.Join(m, ", "))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cl, err := slurmtest.Start(ctx)
	var de *slurmtest.DaemonError
	if errors.As(err, &de) {
		t.Skipf("SKIPPED, NOT RUN: this machine cannot run a Slurm cluster: %v", de)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Error(err)
		}
	})
	return cl
}

// status calls runtime/status.
func (c *client) status() protocol.RuntimeStatusResult {
	c.t.Helper()
	var st protocol.RuntimeStatusResult
	c.call(protocol.MethodRuntimeStatus, struct{}{}, &st)
	return st
}

// agentOf returns the agent of runtime/status that serves kernel id.
func agentOf(st protocol.RuntimeStatusResult, kernel int) (protocol.AgentStatus, bool) {
	for _, a := range st.Agents {
		if slices.Contains(a.Kernels, kernel) {
			return a, true
		}
	}
	return protocol.AgentStatus{}, false
}

// waitStatusOf polls runtime/status through c until ok holds.
func waitStatusOf(t *testing.T, c *client, what string, ok func(protocol.RuntimeStatusResult) bool) protocol.RuntimeStatusResult {
	t.Helper()
	var st protocol.RuntimeStatusResult
	if !testenv.PollEvery(stepDeadline(t), 50*time.Millisecond, func() bool {
		st = c.status()
		return ok(st)
	}) {
		b, _ := json.Marshal(st)
		t.Fatalf("waiting for %s: runtime/status %s", what, b)
	}
	return st
}

// ripple serve --launcher slurm: a context's run makes the coordinator
// submit a job, whose agent's kernel runs it (runtime/status names the
// job, its state and the slurm launcher); scancel of the job of a
// context whose run is in flight is a lost agent, handled at once (the
// grace is ten minutes here): the owner gets kernelRestarted
// {statePreserved: false} and the context re-runs on a new job's kernel.
// A job whose kernels have no context left is cancelled after the idle
// timeout.
func TestSlurmServe(t *testing.T) {
	t.Parallel()
	cl := startSlurm(t)
	dir := t.TempDir()
	writeFile(t, dir, "main.py", agentsMain)
	srv := startServe(t, cl.Env(), "--launcher", "slurm", "--agents-listen", "127.0.0.1:0", "--agents-tls",
		"--max-kernels", "2", "--idle-timeout", "2s", "--agents-grace", "10m", dir)
	if !strings.Contains(srv.stderr.String(), "TLS; --coordinator-fingerprint sha256:") {
		t.Errorf("no TLS fingerprint line:\n%s", srv.stderr.String())
	}
	c, _ := connect(t, srv.url, "ide")

	// The first run waits for the first job's kernel.
	a, r := c.newContext("main:first")
	if r.failed != nil {
		t.Fatalf("first failed: %+v", r.failed)
	}
	st := c.status()
	ka, _ := kernelOfContext(st, a)
	ja, ok := agentOf(st, ka.ID)
	if ka.Launcher != protocol.LauncherSlurm || ka.Agent == nil || !ok || ja.JobID == "" || ja.JobState != "RUNNING" ||
		!strings.HasPrefix(ja.JobName, "ripple-agent-") || ja.Launcher != protocol.LauncherSlurm || ja.ID != ja.JobName {
		b, _ := json.Marshal(st)
		t.Fatalf("runtime/status %s: want a's kernel from a running slurm job", b)
	}
	if !strings.Contains(r.output, "first ran in "+dir) {
		t.Errorf("first's output %q, want it run in %s", r.output, dir)
	}
	// While it waited, its statements said so, naming the job (issue 26).
	if !slices.ContainsFunc(r.messages, func(m servertest.Message) bool {
		p := string(m.Params)
		return m.Method == protocol.NotifyExpressionUpdates && strings.Contains(p, `"kind":"waitingForKernel"`) && strings.Contains(p, `"detail":"slurm job `)
	}) {
		t.Errorf("first's run waited for its job without a word (no Pending waitingForKernel naming the slurm job)")
	}
	// The token reached the job by file, not on its command line.
	script, err := os.ReadFile(filepath.Join(dir, ".ripple", "slurm", ja.JobName+".sh"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(dir, ".ripple", "slurm", "agent-token"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, ".ripple", "slurm", "agent-token")); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if strings.Contains(string(script), strings.TrimSpace(string(tok))) || !strings.Contains(string(script), "--token-file") {
		t.Errorf("job script carries the token or no --token-file:\n%s", script)
	}

	// slow runs on a second job's kernel (max 2); its job is cancelled
	// mid-run.
	d, _ := createPushed(c, "main:slow")
	c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var p protocol.ExpressionUpdatesParams
		_ = json.Unmarshal(raw, &p)
		return p.ContextID == d && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == "main:slow/n" && u.Payload.Type == protocol.PayloadValue
		})
	})
	st = c.status()
	kd, _ := kernelOfContext(st, d)
	jd, ok := agentOf(st, kd.ID)
	if !ok || jd.JobID == "" || jd.JobID == ja.JobID {
		b, _ := json.Marshal(st)
		t.Fatalf("runtime/status %s: want slow on a second job", b)
	}
	if err := cl.Cancel(stepCtx(t), jd.JobID); err != nil {
		t.Fatal(err)
	}
	kr := waitKernelRestarted(t, c)
	// The cancelled job is named by its id and state (issue 26), then
	// its agent as lost. The state is squeue's when the loss is seen:
	// CANCELLED, or COMPLETING while slurmd still kills the job's
	// processes (which is also when the agent's connection drops).
	cancelled := strings.HasPrefix(kr.Reason, "slurm job "+jd.JobID+" CANCELLED") || strings.HasPrefix(kr.Reason, "slurm job "+jd.JobID+" COMPLETING")
	if kr.KernelID != kd.ID || kr.StatePreserved || !cancelled || !strings.HasSuffix(kr.Reason, " lost") || !slices.Contains(kr.ContextIDs, d) {
		t.Errorf("kernelRestarted %+v, want kernel %d, state lost, job %s CANCELLED (or COMPLETING) and its agent lost, naming %s", kr, kd.ID, jd.JobID, d)
	}
	// slow runs again, on a new job's kernel (busy with it). Status, not
	// the next update of slow: one the first run sent may arrive late.
	waitStatusOf(t, c, "slow re-run on a new job", func(st protocol.RuntimeStatusResult) bool {
		k, _ := kernelOfContext(st, d)
		j, ok := agentOf(st, k.ID)
		return ok && k.State == "busy" && j.JobID != "" && j.JobID != jd.JobID && j.JobID != ja.JobID && j.JobState == "RUNNING"
	})
	if s := cl.JobState(stepCtx(t), jd.JobID); s != "CANCELLED" && s != "" {
		t.Errorf("the cancelled job %s is %s", jd.JobID, s)
	}
	c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: d}, nil)
	if r := c.waitRun(d); r.failed == nil || r.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("slow ended %+v, want interrupted", r.failed)
	}

	// a's job goes idle once a is destroyed: cancelled after 2 s.
	c.call(protocol.MethodDestroyContext, protocol.DestroyContextParams{ContextID: a}, nil)
	waitStatusOf(t, c, "a's job cancelled as idle", func(st protocol.RuntimeStatusResult) bool {
		_, still := agentOf(st, ka.ID)
		return !still
	})
	ctx := stepCtx(t)
	var s string
	if !testenv.PollEvery(stepDeadline(t), 50*time.Millisecond, func() bool {
		s = cl.JobState(ctx, ja.JobID)
		return s == "CANCELLED" || s == ""
	}) {
		t.Fatalf("idle job %s still %s", ja.JobID, s)
	}
}

// ripple run --launcher slurm: the run submits a job per kernel, runs the
// entries on them and ends its jobs; --tests runs pytest on them. A job
// that sbatch refuses is a clear error naming sbatch's.
func TestSlurmBatchRun(t *testing.T) {
	t.Parallel()
	cl := startSlurm(t)
	dir := t.TempDir()
	writeFile(t, dir, "main.py", agentsMain)
	report := filepath.Join(t.TempDir(), "report.json")
	code, stderr := runRipple(t, cl.Env(), "run", dir, "--entry", "main:first", "--entry", "main:second",
		"--launcher", "slurm", "--kernels", "2", "--json", report, "--log-level", "info")
	if code != 0 {
		t.Fatalf("ripple run: exit %d\n%s", code, stderr)
	}
	reportPassed(t, report, 2, 2)
	if n := len(regexp.MustCompile(`msg="job submitted"`).FindAllString(stderr, -1)); n != 2 {
		t.Errorf("%d jobs submitted, want 2:\n%s", n, stderr)
	}
	// The run's jobs ended with it.
	ctx := stepCtx(t)
	var jobs [][3]string
	if !testenv.PollEvery(stepDeadline(t), 50*time.Millisecond, func() bool {
		var err error
		if jobs, err = cl.Jobs(ctx); err != nil {
			t.Fatal(err)
		}
		return len(jobs) == 0
	}) {
		t.Fatalf("jobs left after ripple run: %v", jobs)
	}

	// The project's tests (pytest in the kernels) on two jobs' kernels.
	writeFile(t, dir, "test_a.py", "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    assert 'a' * 2 == 'aa'\n")
	writeFile(t, dir, "test_b.py", "def test_three():\n    assert True\n")
	entryJobs := jobScripts(t, dir)
	for _, s := range entryJobs {
		if strings.Contains(s, "--preload") {
			t.Errorf("an entries run's agent preloads modules:\n%s", s)
		}
	}
	code, stderr = runRipple(t, cl.Env(), "run", dir, "--tests", "--launcher", "slurm", "--kernels", "2", "--python", pytestPython(t), "--json", report)
	if code != 0 {
		t.Fatalf("ripple run --tests: exit %d\n%s", code, stderr)
	}
	// A test run's agents import pytest as their kernels start.
	testJobs := 0
	for name, s := range jobScripts(t, dir) {
		if _, old := entryJobs[name]; old {
			continue
		}
		testJobs++
		if !strings.Contains(s, "'--preload' 'pytest'") {
			t.Errorf("a test run's agent does not preload pytest:\n%s", s)
		}
	}
	if testJobs != 2 {
		t.Errorf("%d job scripts for the test run, want 2", testJobs)
	}
	var trep struct {
		Kernels int
		Summary struct{ Total, Passed int }
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, b, &trep)
	if trep.Kernels != 2 || trep.Summary.Total != 3 || trep.Summary.Passed != 3 {
		t.Fatalf("tests report %s", b)
	}

	// sbatch refuses the job: the run fails naming sbatch's error.
	code, stderr = runRipple(t, cl.Env(), "run", dir, "--entry", "main:first", "--launcher", "slurm", "--sbatch-arg=--partition=nosuch")
	if code != 2 || !strings.Contains(stderr, "sbatch") || !strings.Contains(stderr, "nvalid partition") {
		t.Fatalf("ripple run with a bad partition: exit %d, want 2 naming sbatch's error:\n%s", code, stderr)
	}
}

// runRipple runs the binary to its end and returns its exit code and
// stderr.
func runRipple(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(stepCtx(t), buildBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	case err != nil:
		t.Fatalf("ripple %s: %v\n%s", args[0], err, stderr.String())
	}
	return 0, stderr.String()
}

// jobScripts is the slurm launcher's job scripts of project dir, by name.
func jobScripts(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, ".ripple", "slurm", "*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = string(b)
	}
	return out
}
