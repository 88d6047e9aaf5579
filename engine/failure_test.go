package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// Failure handling at engine level (PROTOCOL.md 5.6, DESIGN.md
// "Supervision" and "Jobs and scheduling"), against real kernels.

// countNotes counts the notifications from index from on that match.
func (r *recorder) countNotes(from int, match func(note) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.notes[from:] {
		if match(x) {
			n++
		}
	}
	return n
}

func isFailed(id protocol.ContextID, kind protocol.ResultKind) func(note) bool {
	return func(n note) bool {
		p, ok := n.Params.(protocol.ExecutionFailedParams)
		return ok && p.ContextID == id && p.Result.Kind == kind
	}
}

func isComplete(id protocol.ContextID) func(note) bool {
	return func(n note) bool {
		p, ok := n.Params.(protocol.ExecutionCompleteParams)
		return ok && p.ContextID == id
	}
}

func isRestarted(n note) bool {
	_, ok := n.Params.(protocol.KernelRestartedParams)
	return ok
}

func hasValue(id protocol.ContextID, expr protocol.ExpressionID) func(note) bool {
	return func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == expr && u.Payload.Type == protocol.PayloadValue
		})
	}
}

// settle waits until a probe context on the same kernel has run to its end
// and the queue is idle: whatever the engine decided to run after an event
// it reported before the probe started (a re-run after a kernel restart)
// is then queued or done, and done once the queue is idle.
func (h *harness) settle(probe protocol.ContextID) {
	h.t.Helper()
	m := h.client.mark()
	must(h.t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: probe, InvalidatedExpressions: protocol.InvalidateAll()}))
	h.client.waitRun(h.t, m, probe)
	waitIdle(h.t, h.e)
}

const dieOnceMain = `import os


def main():
    x = 1
    if not os.path.exists("../died"):  # beside the project: typing may not write into it
        open("../died", "w").close()
        os._exit(3)
    y = x + 1
    return y
`

func TestKernelDiesOnceRerunOnce(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": dieOnceMain}, engine.Config{})
	id, m := h.startContext("main:main")

	failed := h.client.waitFrom(t, m, "executionFailed kernelDied", isFailed(id, protocol.ResultKernelDied))
	res := failed[len(failed)-1].Params.(protocol.ExecutionFailedParams).Result
	if !strings.Contains(res.Message, "exit status 3") {
		t.Errorf("kernelDied message %q does not name exit status 3", res.Message)
	}
	restarted := h.client.waitFrom(t, m, "runtime/kernelRestarted", isRestarted)
	kr := restarted[len(restarted)-1].Params.(protocol.KernelRestartedParams)
	if kr.StatePreserved || kr.KernelID != 0 || !slices.Contains(kr.ContextIDs, id) || kr.Reason == "" {
		t.Errorf("kernelRestarted %+v, want kernel 0, context %s, statePreserved false and a reason", kr, id)
	}
	// Re-run once, on the new kernel: it completes (the marker file exists).
	h.client.waitFrom(t, m, "the re-run to complete", isComplete(id))
	rerun := h.client.waitRun(t, m+len(failed), id)
	expect(t, "y after the re-run", rerun.updates.Values()["main:main/y"], "2")
	expect(t, "x recomputed on the new kernel", slices.Contains(rerun.updates.Computed(), "main:main/x"), true)

	waitIdle(t, h.e)
	expect(t, "kernelDied failures", h.client.countNotes(m, isFailed(id, protocol.ResultKernelDied)), 1)
	expect(t, "runs completed", h.client.countNotes(m, isComplete(id)), 1)
	expect(t, "kernel restarts", h.client.countNotes(m, isRestarted), 1)
}

const dieAlwaysMain = `import os


def main():
    x = 1
    if not os.path.exists("fixed"):
        os._exit(3)
    y = x + 1
    return y
`

func TestKernelDiesTwiceStaysFailed(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": dieAlwaysMain, "probe.py": "def main():\n    p = 1\n"}, engine.Config{})
	probe, _ := h.newContext("probe:main")
	id, m := h.startContext("main:main")

	// The run, then its one automatic re-run, kill the kernel.
	h.client.waitFrom(t, m, "two kernelDied failures", func(n note) bool {
		return isFailed(id, protocol.ResultKernelDied)(n) && h.client.countNotesLocked(m, isFailed(id, protocol.ResultKernelDied)) >= 2
	})
	h.client.waitFrom(t, m, "two kernel restarts", func(n note) bool {
		return isRestarted(n) && h.client.countNotesLocked(m, isRestarted) >= 2
	})
	h.settle(probe)
	expect(t, "kernelDied failures", h.client.countNotes(m, isFailed(id, protocol.ResultKernelDied)), 2)
	expect(t, "runs of the context after the second death", h.client.countNotes(m, isEnd(id)), 2)

	// A recompute is the user acting: it runs again, and is retried once.
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id}))
	h.client.waitFrom(t, m, "two kernelDied failures after the recompute", func(n note) bool {
		return isFailed(id, protocol.ResultKernelDied)(n) && h.client.countNotesLocked(m, isFailed(id, protocol.ResultKernelDied)) >= 2
	})
	h.settle(probe)
	expect(t, "runs after the recompute", h.client.countNotes(m, isEnd(id)), 2)

	// Fixing the cause with an edit: the context runs again and completes.
	write(t, h.dir, "fixed", "")
	m = h.client.mark()
	h.setText("main.py", strings.Replace(dieAlwaysMain, "y = x + 1", "y = x + 2", 1))
	run := h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("run after the fix: %s", resultString(run.failed))
	}
	expect(t, "y after the fix", run.updates.Values()["main:main/y"], "3")
}

// countNotesLocked is countNotes for use inside a waitFrom match (which
// holds the lock).
func (r *recorder) countNotesLocked(from int, match func(note) bool) int {
	n := 0
	for _, x := range r.notes[from:] {
		if match(x) {
			n++
		}
	}
	return n
}

func TestKernelSegfaultNamesSignal(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "import ctypes\n\n\ndef main():\n    x = 1\n    ctypes.string_at(0)\n"}, engine.Config{})
	id, m := h.startContext("main:main")
	failed := h.client.waitFrom(t, m, "executionFailed kernelDied", isFailed(id, protocol.ResultKernelDied))
	res := failed[len(failed)-1].Params.(protocol.ExecutionFailedParams).Result
	if !strings.Contains(res.Message, "SIGSEGV") {
		t.Errorf("kernelDied message %q does not name SIGSEGV", res.Message)
	}
}

const ignoreSigintMain = `import signal


def main():
    x = 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        pass
`

func TestInterruptIgnoredRestartsKernel(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": ignoreSigintMain, "probe.py": "def main():\n    p = 1\n"},
		engine.Config{InterruptTimeout: 300 * time.Millisecond})
	probe, _ := h.newContext("probe:main")
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "x computed: the run is in the loop", hasValue(id, "main:main/x"))
	pid := kernelPID(t, h.e, 0)
	must(t, h.e.Interrupt(h.ctx, clientID, id))

	run := h.client.waitRun(t, m, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("run ended %s, want interrupted", resultString(run.failed))
	}
	if !strings.Contains(run.failed.Message, "state lost") {
		t.Errorf("interrupted message %q does not say that state was lost", run.failed.Message)
	}
	afterFailure := m + len(run.notes)
	restarted := h.client.waitFrom(t, m, "runtime/kernelRestarted", isRestarted)
	kr := restarted[len(restarted)-1].Params.(protocol.KernelRestartedParams)
	if kr.StatePreserved || !slices.Contains(kr.ContextIDs, id) || !slices.Contains(kr.ContextIDs, probe) {
		t.Errorf("kernelRestarted %+v, want statePreserved false for contexts %s and %s", kr, id, probe)
	}
	if now := kernelPID(t, h.e, 0); now == pid {
		t.Errorf("kernel pid %d unchanged after the restart", now)
	}
	waitGone(t, pid)

	// The interrupted context is not run again by the restart (that would
	// re-enter the loop the user stopped); it waits for the user.
	h.settle(probe)
	again := h.client.countNotes(afterFailure, func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id || isEnd(id)(n)
	})
	expect(t, "notifications of the interrupted context after its failure", again, 0)

	// The new kernel lost x: the next run (after a fix) computes it again.
	m = h.client.mark()
	h.setText("main.py", "def main():\n    x = 1\n    y = x + 1\n")
	run = h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("run after the fix: %s", resultString(run.failed))
	}
	expect(t, "computed on the new kernel", run.updates.Computed(), []string{"main:main/x", "main:main/y"})
}

// waitGone polls until process pid no longer exists.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	testenv.EventuallyWithin(t, 30*time.Second, fmt.Sprintf("process %d to be gone", pid), func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

const restartMain = `def main():
    x = 6
    print("x ran")
    y = x * 2
`

func TestRestartKernelRecomputesEveryContext(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": restartMain}, engine.Config{Kernels: 1})
	a, _ := h.newContext("main:main")
	b, _ := h.newContext("main:main")
	pid := kernelPID(t, h.e, 0)

	m := h.client.mark()
	must(t, h.e.RestartKernel(h.ctx, clientID, a))
	runA := h.client.waitRun(t, m, a)
	runB := h.client.waitRun(t, m, b)
	if now := kernelPID(t, h.e, 0); now == pid {
		t.Errorf("kernel pid %d unchanged after runtime/restartKernel", now)
	}
	restarted := h.client.waitFrom(t, m, "runtime/kernelRestarted", isRestarted)
	kr := restarted[len(restarted)-1].Params.(protocol.KernelRestartedParams)
	want := []protocol.ContextID{a, b}
	slices.Sort(want)
	expect(t, "kernelRestarted contexts", kr.ContextIDs, want)
	expect(t, "statePreserved", kr.StatePreserved, false)
	for name, run := range map[string]*runResult{"a": runA, "b": runB} {
		if run.failed != nil {
			t.Errorf("context %s: %s", name, resultString(run.failed))
			continue
		}
		expect(t, "context "+name+" computed from scratch", run.updates.Computed(), []string{"main:main/x", "main:main/#1", "main:main/y"})
		expect(t, "context "+name+" printed again", strings.Count(run.output, "x ran"), 1)
		expect(t, "context "+name+" y", run.updates.Values()["main:main/y"], "12")
	}
}

// Each context waits until the other has started: if the two ran one
// after the other, the first would give up after 30 s and return False.
const parallelMain = `import os
import time


def main(me, other):
    started = open(me, "w").close()
    met = meet(other)
    return met


def meet(path):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.005)
    return False
`

func TestTwoKernelsRunInParallel(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": parallelMain}, engine.Config{Kernels: 2})
	a, ma := h.startContext("main:main", "'a'", "'b'")
	b, mb := h.startContext("main:main", "'b'", "'a'")
	runA := h.client.waitRun(t, ma, a)
	runB := h.client.waitRun(t, mb, b)
	expect(t, "a met b", runA.updates.Values()["main:main/met"], "True")
	expect(t, "b met a", runB.updates.Values()["main:main/met"], "True")

	st, err := h.e.Status(h.ctx)
	must(t, err)
	slotOf := map[protocol.ContextID]int{}
	for _, k := range st.Kernels {
		for _, c := range k.Contexts {
			slotOf[c] = k.ID
		}
	}
	if slotOf[a] == slotOf[b] {
		t.Errorf("both contexts on kernel %d: %+v", slotOf[a], st.Kernels)
	}
}

func TestEditSupersedesRunInProgress(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "import time\n\n\ndef main():\n    x = 1\n    y = time.sleep(60) or 2\n    z = x + y\n"}, engine.Config{})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "x computed: the run is in the sleep", hasValue(id, "main:main/x"))

	m2 := h.client.mark()
	h.setText("main.py", "import time\n\n\ndef main():\n    x = 1\n    y = 3\n    z = x + y\n")
	h.client.waitFrom(t, m2, "the new run to complete", isComplete(id))
	waitIdle(t, h.e)
	expect(t, "executionFailed after the start", h.client.countNotes(m, isEnd(id)), 1)
	run := h.client.waitRun(t, m2, id)
	v := run.updates.Values()
	expect(t, "y, z", []string{v["main:main/y"], v["main:main/z"]}, []string{"3", "4"})
	if slices.Contains(run.updates.Computed(), "main:main/x") {
		t.Errorf("x recomputed by the new run: %v", run.updates.Computed())
	}
}

// The module counts its loads (compiles) and x counts the runs that
// reached it; while the file "release" is missing, loading the module
// blocks, so the whole burst is queued behind the first compile.
const burstMain = `import os
import time

with open("compiles.log", "a") as log:
    log.write("load\n")
while not os.path.exists("release"):
    time.sleep(0.002)


def record(n):
    with open("../runs.log", "a") as log:  # beside the project: typing may not write into it
        log.write("%d\n" % n)
    return n


def main():
    x = record(0)
    y = x + 1
`

func TestEditBurstCostsOneCompileAndOneRun(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": burstMain, "release": ""}, engine.Config{})
	id, _ := h.newContext("main:main")
	waitIdle(t, h.e)
	lines := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(h.dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
	compiles, runs := len(lines("compiles.log")), len(lines("../runs.log"))

	must(t, os.Remove(filepath.Join(h.dir, "release")))
	m := h.client.mark()
	const burst = 20
	for i := 1; i <= burst; i++ {
		h.setText("main.py", strings.Replace(burstMain, "record(0)", "record("+strconv.Itoa(i)+")", 1))
	}
	write(t, h.dir, "release", "")
	run := h.client.waitRun(t, m, id)
	waitIdle(t, h.e)
	if run.failed != nil {
		t.Fatalf("run after the burst: %s", resultString(run.failed))
	}
	expect(t, "x", run.updates.Values()["main:main/x"], strconv.Itoa(burst))
	expect(t, "runs reported", h.client.countNotes(m, isEnd(id)), 1)
	newCompiles := len(lines("compiles.log")) - compiles
	newRuns := lines("../runs.log")[runs:]
	t.Logf("%d edits: %d compiles, runs of x: %v", burst, newCompiles, newRuns)
	// The first edit's compile may have started before the second edit:
	// then the other 19 collapse into one more.
	if newCompiles < 1 || newCompiles > 2 {
		t.Errorf("%d edits cost %d compiles, want 1 or 2", burst, newCompiles)
	}
	expect(t, "runs of x", newRuns, []string{strconv.Itoa(burst)})
}

func TestRuntimeStatus(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "import os\nimport time\n\n\ndef main():\n    x = 1\n    while not os.path.exists('go'):\n        time.sleep(0.005)\n    y = 2\n"},
		engine.Config{Kernels: 2})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "x computed: the run is waiting", hasValue(id, "main:main/x"))

	// The engine serves once its first kernel is ready; the other may
	// still be starting (a loaded machine), which status must say.
	var st protocol.RuntimeStatusResult
	if !testenv.Poll(testenv.Deadline(t), func() bool {
		var err error
		st, err = h.e.Status(h.ctx)
		must(t, err)
		starting := false
		for _, k := range st.Kernels {
			if k.PID == 0 {
				starting = true
				if k.State != kernel.StateStarting {
					t.Fatalf("kernel %d has no pid in state %q, want %q", k.ID, k.State, kernel.StateStarting)
				}
			}
		}
		return !starting
	}) {
		t.Fatalf("a kernel is still starting: %+v", st.Kernels)
	}
	if len(st.Kernels) != 2 {
		t.Fatalf("runtime/status kernels %+v, want 2", st.Kernels)
	}
	found := false
	for i, k := range st.Kernels {
		expect(t, "kernel id", k.ID, i)
		if k.PID <= 0 || syscall.Kill(k.PID, 0) != nil {
			t.Errorf("kernel %d: pid %d is not a live process", k.ID, k.PID)
		}
		if slices.Contains(k.Contexts, id) {
			found = true
			expect(t, "state of the kernel running the context", k.State, "busy")
		}
	}
	if !found {
		t.Errorf("context %s on no kernel: %+v", id, st.Kernels)
	}
	expect(t, "queue running", st.Queue.Running, 1)
	expect(t, "queue pending", st.Queue.Pending, 0)

	write(t, h.dir, "go", "")
	h.client.waitRun(t, m, id)
	waitIdle(t, h.e)
	st, err := h.e.Status(h.ctx)
	must(t, err)
	expect(t, "queue after the run", st.Queue, protocol.QueueStatus{})
}

// A context pushed while its slot's first kernel is still starting runs as
// soon as that kernel is ready, even while another context runs on the
// other slot: bringing the new kernel up to date is onKernelReady's work,
// not an EnsureCompiled that would wait for every running Execute (rule 5).
// The first kernel to start passes; the others wait for a gate the test
// opens once the first context runs: the two contexts must meet.
func TestPushWhileAKernelStartsDoesNotWaitForRunningContexts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	enginetest.WrapPython(t, filepath.Join(dir, ".venv", "bin", "python"),
		"while [ ! -e "+gate+" ]; do sleep 0.01; done")
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": parallelMain})
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o644) }) // never leave a kernel waiting
	e := enginetest.Start(t, dir, engine.Config{Kernels: 2})
	h := &harness{t: t, e: e, dir: dir, client: newRecorder(), ctx: t.Context()}
	if _, err := e.Connect(h.ctx, clientID, h.client); err != nil {
		t.Fatal(err)
	}

	// Two contexts, one per slot; the one on the ready slot goes first.
	var ids [2]protocol.ContextID
	for i := range ids {
		res, err := e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
		must(t, err)
		ids[i] = res.ContextID
	}
	st, err := e.Status(h.ctx)
	must(t, err)
	slotOf, ready := map[protocol.ContextID]int{}, -1
	for _, k := range st.Kernels {
		for _, c := range k.Contexts {
			slotOf[c] = k.ID
		}
		if k.State == kernel.StateReady || k.State == kernel.StateBusy { // busy: a health check
			ready = k.ID
		}
	}
	if slotOf[ids[0]] == slotOf[ids[1]] || ready < 0 {
		t.Fatalf("want the contexts on two slots, one of them ready: %+v", st.Kernels)
	}
	if slotOf[ids[1]] == ready {
		ids[0], ids[1] = ids[1], ids[0]
	}
	push := func(id protocol.ContextID, me, other string) int {
		m := h.client.mark()
		must(t, e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id,
			StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"}, me, other)}))
		return m
	}
	ma := push(ids[0], "'a'", "'b'")
	testenv.Eventually(t, "the first context to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "a"))
		return err == nil
	})
	mb := push(ids[1], "'b'", "'a'")
	must(t, os.WriteFile(gate, nil, 0o644))
	runA := h.client.waitRun(t, ma, ids[0])
	runB := h.client.waitRun(t, mb, ids[1])
	expect(t, "a met b", runA.updates.Values()["main:main/met"], "True")
	expect(t, "b met a", runB.updates.Values()["main:main/met"], "True")
}

// Stopping the engine finalizes what user code left in its kernels, as the
// end of a script would: a file a statement opened and never closed gets
// its buffered text (a cached value) and so does one held by a project
// module's global.
func TestStopFlushesFilesUserCodeLeftOpen(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		"main.py": `import logbook


def main():
    f = open("statement.txt", "w", buffering=1 << 20)
    written = f.write("from a statement")
    logbook.note("from a module")
`,
		"logbook.py": `_log = open("module.txt", "w", buffering=1 << 20)


def note(text):
    _log.write(text)
`,
	}, engine.Config{})
	_, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(t, h.e.Stop(ctx))
	for name, want := range map[string]string{"statement.txt": "from a statement", "module.txt": "from a module"} {
		if b, err := os.ReadFile(filepath.Join(h.dir, name)); string(b) != want {
			t.Errorf("%s after stop: %q, %v; want %q", name, b, err, want)
		}
	}
}

// A destroyed context's kernel forgets it: at once (a few milliseconds)
// when the kernel is idle, and with the next run when it is busy, in that
// run's request rather than a round trip of its own.
func TestDestroyedContextsAreForgottenByTheirKernel(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "import os\nimport time\n\n\ndef main():\n    x = 1\n\n\ndef wait():\n    while not os.path.exists('go'):\n        time.sleep(0.005)\n"}, engine.Config{})
	kernelHolds := func(want ...string) {
		t.Helper()
		slices.Sort(want)
		var got []string
		if !testenv.Poll(time.Now().Add(30*time.Second), func() bool {
			var err error
			got, err = engine.KernelContexts(h.ctx, h.e, 0)
			must(t, err)
			return slices.Equal(got, want)
		}) {
			t.Fatalf("kernel holds contexts %v, want %v", got, want)
		}
	}

	idle, _ := h.newContext("main:main")
	kernelHolds(string(idle))
	must(t, h.e.DestroyContext(h.ctx, clientID, idle))
	kernelHolds()

	a, _ := h.newContext("main:main")
	busy, mb := h.startContext("main:wait")
	h.client.waitFrom(t, mb, "the waiting run started", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == busy
	})
	must(t, h.e.DestroyContext(h.ctx, clientID, a))
	time.Sleep(50 * time.Millisecond) // many flush delays: the slot is busy, nothing is sent
	expect(t, "drops waiting for the busy kernel", engine.PendingDrops(h.e, 0), []string{string(a)})
	next, mn := h.startContext("main:main")
	write(t, h.dir, "go", "")
	h.client.waitRun(t, mb, busy)
	h.client.waitRun(t, mn, next)
	expect(t, "drops waiting after the next run", engine.PendingDrops(h.e, 0), []string(nil))
	kernelHolds(string(busy), string(next))
}

// RetireIdleKernels closes the slots that serve no context: their kernels
// stop, new contexts go to the open slots, and once none is open creating
// a context fails with ErrKernelUnavailable.
func TestRetireIdleKernels(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 1\n"}, engine.Config{Kernels: 2})
	kept, _ := h.newContext("main:main")
	st, err := h.e.Status(h.ctx)
	must(t, err)
	keptSlot := -1
	for _, k := range st.Kernels {
		if slices.Contains(k.Contexts, kept) {
			keptSlot = k.ID
		}
	}
	idle := 1 - keptSlot
	if got := h.e.RetireIdleKernels(); !slices.Equal(got, []int{idle}) {
		t.Fatalf("retired %v, want [%d] (slot %d serves %s)", got, idle, keptSlot, kept)
	}
	if got := h.e.RetireIdleKernels(); len(got) != 0 {
		t.Errorf("retired again: %v", got)
	}
	var state string
	testenv.Poll(time.Now().Add(30*time.Second), func() bool {
		st, err := h.e.Status(h.ctx)
		must(t, err)
		state = st.Kernels[idle].State
		return state == "stopped" && st.Kernels[idle].PID == 0
	})
	expect(t, "retired kernel's state", state, "stopped")

	// A new context goes to the open slot and runs there.
	next, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run on the open slot failed: %+v", run.failed)
	}
	st, err = h.e.Status(h.ctx)
	must(t, err)
	if !slices.Contains(st.Kernels[keptSlot].Contexts, next) {
		t.Errorf("new context not on the open slot %d: %+v", keptSlot, st.Kernels)
	}

	must(t, h.e.DestroyContext(h.ctx, clientID, kept))
	must(t, h.e.DestroyContext(h.ctx, clientID, next))
	testenv.EventuallyWithin(t, 30*time.Second, "the last slot to be retired once idle", func() bool {
		return slices.Equal(h.e.RetireIdleKernels(), []int{keptSlot})
	})
	if _, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{}); !errors.Is(err, engine.ErrKernelUnavailable) {
		t.Errorf("CreateContext with every slot retired: %v, want ErrKernelUnavailable", err)
	}
}
