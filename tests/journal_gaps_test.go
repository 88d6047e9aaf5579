package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// Issue 26: nothing the value journal restores is stale, and it has no
// gaps. Each test runs the real binary on a project of its own.

// readMain reads a data file of the project (not a module).
const readMain = `def main():
    x = int(open("data/input.txt").read())
    y = x * 10
`

// runUntil waits for runs of id until the values satisfy ok (a restored
// run, whose end a client connecting late may miss, may come first); it
// returns those values.
func (c *client) runUntil(id protocol.ContextID, ok func(map[string]string) bool) map[string]string {
	c.t.Helper()
	var last map[string]string
	for {
		r := c.waitRun(id)
		if r.failed != nil {
			c.t.Fatalf("run of %s failed: %+v", id, r.failed)
		}
		last = r.updates.Values()
		if ok(last) {
			return last
		}
	}
}

// has is a runUntil condition: the run reported a value of expression x.
func has(x string) func(map[string]string) bool {
	return func(v map[string]string) bool { return v[x] != "" }
}

// readProject starts a server on a project whose main reads
// data/input.txt (holding "1"), runs main:main in a new context and lets
// the kernel journal it.
func readProject(t *testing.T) (dir string, p *serveProc, c *client, id protocol.ContextID) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, dir, "main.py", readMain)
	writeFile(t, dir, "data/input.txt", "1")
	p = startServe(t, journalEnv, "--kernels", "1", dir)
	c, _ = connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil || r.updates.Values()["main:main/y"] != "10" {
		t.Fatalf("first run: failed %+v, values %v", r.failed, r.updates.Values())
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id) // journalled (RIPPLE_VALUES_IDLE_MS=0)
	return dir, p, c, id
}

// The kernels write the journal right after each result.
var journalEnv = []string{"RIPPLE_VALUES_IDLE_MS=0"}

// A change on disk of a file a statement read runs the context that read
// it, with the new contents (the file is not a module: data/input.txt).
func TestServeBinaryJournalFileReadLive(t *testing.T) {
	t.Parallel()
	dir, p, c, id := readProject(t)
	writeFile(t, dir, "data/input.txt", "2")
	// (Before issue 26 no run followed: this waited until the deadline.)
	got := c.runUntil(id, has("main:main/y"))
	if got["main:main/y"] != "20" {
		t.Errorf("after data/input.txt changed to 2, the context shows %v, want y = 20 (a run of what read it)", got)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)
}

// A second context of the same frame gets from the journal only what is
// still current: not a value computed from a file that changed since.
func TestServeBinaryJournalFileReadSecondContext(t *testing.T) {
	t.Parallel()
	dir, p, c, _ := readProject(t)
	writeFile(t, dir, "data/input.txt", "3")
	_, r := c.newContext("main:main")
	if v := r.updates.Values(); r.failed != nil || v["main:main/x"] != "3" || v["main:main/y"] != "30" {
		t.Errorf("second context after data/input.txt changed to 3: failed %+v, values %v, want x = 3, y = 30", r.failed, v)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)
}

// A file changed while the server was down: the restarted server does
// not restore what was computed from its old contents.
func TestServeBinaryJournalFileReadRestart(t *testing.T) {
	t.Parallel()
	dir, p, _, id := readProject(t)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	writeFile(t, dir, "data/input.txt", "4")
	p2 := startServe(t, journalEnv, "--kernels", "1", dir)
	c2, _ := connect(t, p2.url, "ide")
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	got := c2.runUntil(id, has("main:main/y"))
	if got["main:main/y"] != "40" {
		t.Errorf("after a restart with data/input.txt changed to 4: values %v, want y = 40", got)
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}

// The interpreter is part of the journal's key: values computed by
// another interpreter (here: a virtual environment made from the same
// Python) are not restored.
func TestServeBinaryJournalInterpreterSwitch(t *testing.T) {
	t.Parallel()
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.CommandContext(stepCtx(t), "python3", "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	dir := t.TempDir()
	writeFile(t, dir, "main.py", "def main():\n    e = __import__(\"sys\").prefix.endswith(\"venv\")\n")
	env := journalEnv
	p := startServe(t, env, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if v := r.updates.Values()["main:main/e"]; r.failed != nil || v != "False" {
		t.Fatalf("first run: failed %+v, e = %q, want False", r.failed, v)
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)

	p2 := startServe(t, env, "--kernels", "1", "--python", filepath.Join(venv, "bin", "python"), dir)
	c2, _ := connect(t, p2.url, "ide")
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	got := c2.runUntil(id, has("main:main/e"))
	if got["main:main/e"] != "True" {
		t.Errorf("on the venv's interpreter, e = %q: a value of the other interpreter was restored", got["main:main/e"])
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}

// restartRecompute kills the server (SIGKILL, or SIGINT when clean),
// starts it again on dir, connects as "ide" and recomputes id: what comes
// from the journal does not run again.
func restartRecompute(t *testing.T, p *serveProc, dir string, id protocol.ContextID, clean bool) (*serveProc, *client) {
	t.Helper()
	if clean {
		p.cmd.Process.Signal(syscall.SIGINT)
	} else {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	p.wait(t)
	p2 := startServe(t, journalEnv, "--kernels", "1", dir)
	c2, _ := connect(t, p2.url, "ide")
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	return p2, c2
}

// sideLog is journalSide's ran.log beside the project: one line per run
// of note.
func sideLog(t *testing.T, dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "..", "ran.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// A statement calling a function through a module attribute
// (side.note(...)) is restored after a restart, as a call of the
// imported name is.
func TestServeBinaryJournalModuleAttributeCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "side.py", journalSide)
	body := "import side\n\n\ndef main():\n"
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		body += "    " + s + " = side.note(\"" + s + "\")\n"
	}
	writeFile(t, dir, "main.py", body)
	p := startServe(t, journalEnv, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil || r.updates.Values()["main:main/e"] != "1" {
		t.Fatalf("first run: failed %+v, values %v", r.failed, r.updates.Values())
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)
	p2, c2 := restartRecompute(t, p, dir, id, false)
	if got := c2.runUntil(id, has("main:main/e")); got["main:main/e"] != "1" {
		t.Errorf("after the restart: values %v", got)
	}
	if got := sideLog(t, dir); got != "a\nb\nc\nd\ne\n" {
		t.Errorf("ran.log after the restart: %q: statements calling side.note ran again", got)
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}

// A script whose statements call functions it defines is restored after
// a restart: neither the defs' callers nor what they call run again.
func TestServeBinaryJournalScriptCallingFunctions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "side.py", journalSide)
	script := "from side import note\n\n\ndef twice(s):\n    return 2 * note(s)\n\n\n"
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		script += s + " = twice(\"" + s + "\")\n"
	}
	writeFile(t, dir, "main.py", script)
	p := startServe(t, journalEnv, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:__main__")
	if r.failed != nil || r.updates.Values()["main:__main__/e"] != "2" {
		t.Fatalf("first run: failed %+v, values %v", r.failed, r.updates.Values())
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)
	p2, c2 := restartRecompute(t, p, dir, id, false)
	if got := c2.runUntil(id, has("main:__main__/e")); got["main:__main__/e"] != "2" {
		t.Errorf("after the restart: values %v", got)
	}
	if got := sideLog(t, dir); got != "a\nb\nc\nd\ne\n" {
		t.Errorf("ran.log after the restart: %q: the script's statements ran again", got)
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}

// A kill -9 in the middle of a run: the statements that had finished are
// restored by the restarted server (their side effects are not
// repeated), the others run.
func TestServeBinaryJournalKillMidRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "side.py", journalSide+"\n\ndef slow(s):\n    n = note(s)\n    import time\n    time.sleep(0.3)\n    return n\n")
	body := "from side import slow\n\n\ndef main():\n"
	for i := 1; i <= 10; i++ {
		body += "    s" + itoa(i) + " = slow(\"" + itoa(i) + "\")\n"
	}
	writeFile(t, dir, "main.py", body)
	p := startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	var res protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
	id := res.ContextID
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil)
	// Statement 7 started: 1 to 6 finished, 5 more than 0.3 s ago.
	if !testenv.PollEvery(stepDeadline(t), 5*time.Millisecond, func() bool { return strings.Count(sideLog(t, dir), "\n") >= 7 }) {
		t.Fatalf("the run did not reach statement 7: ran.log %q", sideLog(t, dir))
	}
	p2, c2 := restartRecompute(t, p, dir, id, false)
	if got := c2.runUntil(id, has("main:main/s10")); got["main:main/s10"] != "2" {
		t.Errorf("after the restart: values %v", got)
	}
	log := strings.Split(sideLog(t, dir), "\n")
	for i := 1; i <= 5; i++ {
		if n := slices.Index(log, itoa(i)); n < 0 || slices.Contains(log[n+1:], itoa(i)) {
			t.Errorf("statement %d finished before the kill and ran again after the restart (ran.log %q)", i, log)
		}
	}
	for i := 7; i <= 10; i++ {
		if !slices.Contains(log, itoa(i)) {
			t.Errorf("statement %d did not run after the restart (ran.log %q)", i, log)
		}
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}

// printMain prints and displays in statements whose values the journal
// keeps.
const printMain = `import ripple


def main():
    x = 6
    print("x is", x)
    ripple.display(x * 7)
    y = x + 1
`

// replayedOutput returns the text of the output notifications of id marked
// replayed in ms, and the number of replayed displayData.
func replayedOutput(t *testing.T, ms []servertest.Message, id protocol.ContextID) (text string, displays int) {
	t.Helper()
	for _, m := range ms {
		switch m.Method {
		case protocol.NotifyOutput:
			var p protocol.OutputParams
			mustDecode(t, m.Params, &p)
			if p.ContextID == id && p.Replayed {
				text += p.Text
			}
		case protocol.NotifyDisplayData:
			var p protocol.DisplayDataParams
			mustDecode(t, m.Params, &p)
			if p.ContextID == id && p.Replayed {
				displays++
			}
		}
	}
	return text, displays
}

// A second context of the same frame, whose values come from the
// journal, gets the output that computed them, marked replayed, before
// its executionComplete; so does a second client subscribing to the first
// context (a second tab).
func TestServeBinaryJournalOutputReplaySecondContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.py", printMain)
	p := startServe(t, journalEnv, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil || !strings.Contains(r.output, "x is 6") {
		t.Fatalf("first run: failed %+v, output %q", r.failed, r.output)
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)

	id2, r2 := c.newContext("main:main")
	if v := r2.updates.Values(); r2.failed != nil || v["main:main/y"] != "7" {
		t.Fatalf("second context: failed %+v, values %v", r2.failed, v)
	}
	if got := r2.updates.Computed(); len(got) != 0 {
		t.Errorf("second context computed %v, want everything from the journal", got)
	}
	text, displays := replayedOutput(t, r2.messages, id2)
	if text != "x is 6\n" || displays != 1 {
		t.Errorf("second context: replayed output %q and %d displays, want \"x is 6\\n\" and 1", text, displays)
	}

	tab, _ := connect(t, p.url, "tab2")
	tab.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	rt := tab.waitRun(id)
	text, displays = replayedOutput(t, rt.messages, id)
	if text != "x is 6\n" || displays != 1 {
		t.Errorf("second tab: replayed output %q and %d displays, want \"x is 6\\n\" and 1", text, displays)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)
}

// After a restart, a client reconnecting once the restored run finished
// gets the values (fromCache true only for those the restored run did not
// compute), the output that computed them (replayed) and the run's
// executionComplete.
func TestServeBinaryJournalReconnectAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.py", printMain)
	p := startServe(t, journalEnv, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil {
		t.Fatalf("first run: failed %+v", r.failed)
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	p2 := startServe(t, journalEnv, "--kernels", "1", dir)
	probe, _ := connect(t, p2.url, "probe")
	if !testenv.PollEvery(stepDeadline(t), 20*time.Millisecond, func() bool {
		var st protocol.RuntimeStatusResult
		probe.call(protocol.MethodRuntimeStatus, nil, &st)
		placed := false
		for _, k := range st.Kernels {
			placed = placed || slices.Contains(k.Contexts, id)
		}
		return placed && st.Queue.Pending == 0 && st.Queue.Running == 0
	}) {
		t.Fatal("the restored run did not finish")
	}
	c2, _ := connect(t, p2.url, "ide")
	r2 := c2.waitRun(id) // (before issue 26: no executionComplete came)
	if v := r2.updates.Values(); v["main:main/y"] != "7" {
		t.Errorf("reconnected: values %v", v)
	}
	for _, u := range r2.updates {
		if u.Payload.Type == protocol.PayloadValue && !u.FromCache {
			t.Errorf("reconnected: %s fromCache false: the restored run took it from the journal", u.ExpressionID)
		}
	}
	text, displays := replayedOutput(t, r2.messages, id)
	if text != "x is 6\n" || displays != 1 {
		t.Errorf("reconnected: replayed output %q and %d displays, want \"x is 6\\n\" and 1", text, displays)
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}
