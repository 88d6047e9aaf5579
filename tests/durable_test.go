package tests

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// `ripple serve` killed with SIGKILL at random moments during a stream of
// edits (some rounds save too), 50 rounds, each also destroying the last
// round's context and creating and pushing a new one, comes back with
// every acknowledged context change and every acknowledged edit (the
// state log under .ripple/): the buffer equals the last acknowledged content, or
// the content of the one edit in flight at the kill (appended, not yet
// answered), never anything else; the user's file is written only by the
// saves.
func TestServeBinaryRestoresBuffersAfterKill9(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	r := rand.New(rand.NewPCG(16, uint64(time.Now().UnixNano())))
	disk := readFile(t, dir, "helper.py")
	acked, inflight := disk, ""
	const rounds = 50
	restoredUnsaved := 0
	var live, destroyed protocol.ContextID
	for round := range rounds {
		p := startServe(t, nil, "--kernels", "1", dir)
		c, _ := connect(t, p.url, "editor")
		var open protocol.OpenFileResult
		c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "helper.py"}, &open)
		if open.Content != acked && (inflight == "" || open.Content != inflight) {
			t.Fatalf("round %d: helper.py opened with %q,\nwant the acknowledged %q\n(or the in-flight %q)", round, open.Content, acked, inflight)
		}
		if open.CurrentVersion != version(open.Content) {
			t.Fatalf("round %d: version %s is not its content's", round, open.CurrentVersion)
		}
		if open.Recovered != nil {
			t.Fatalf("round %d: recovered offered after a crash restore: %+v", round, open.Recovered)
		}
		if got := readFile(t, dir, "helper.py"); got != disk {
			t.Fatalf("round %d: helper.py on disk is %q, want %q (only saves write it)", round, got, disk)
		}
		if open.Content != disk {
			restoredUnsaved++
		}
		acked, inflight = open.Content, ""
		// The context made last round is back (a recompute of it is
		// accepted), the one destroyed before it is not; then this round's
		// context change: the last one destroyed, a new one pushed.
		if live != "" {
			c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: live}, nil)
			c.call(protocol.MethodDestroyContext, protocol.DestroyContextParams{ContextID: live}, nil)
		}
		if destroyed != "" {
			c.callErr(protocol.CodeContextNotFound, protocol.MethodRecompute, protocol.RecomputeParams{ContextID: destroyed})
		}
		var created protocol.CreateContextResult
		c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &created)
		c.call(protocol.MethodPush, protocol.PushParams{ContextID: created.ContextID,
			StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil)
		destroyed, live = live, created.ContextID
		cur, v := open.Content, open.CurrentVersion
		killAfter := 1 + r.IntN(20)
		save := round%3 == 1
		for i := 0; ; i++ {
			if i == killAfter {
				delay := time.Duration(r.IntN(3000)) * time.Microsecond
				time.AfterFunc(delay, func() { p.cmd.Process.Signal(syscall.SIGKILL) })
			}
			if save && i == killAfter/2 {
				if err := c.c.Call(stepCtx(t), protocol.MethodTextSave, protocol.SaveParams{Path: "helper.py", CurrentVersion: v}, nil); err != nil {
					break // killed meanwhile (only after killAfter)
				}
				disk = cur
			}
			next := cur + "# round " + itoa(round) + " edit " + itoa(i) + "\n"
			inflight = next
			err := c.c.Call(stepCtx(t), protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: protocol.FileEdit{
				Path:       "helper.py",
				Edits:      []protocol.TextEdit{{Range: protocol.Range{Start: endOf(cur), End: endOf(cur)}, Text: next[len(cur):]}},
				OldVersion: v,
				NewVersion: version(next),
			}}, nil)
			if err != nil {
				if i < killAfter {
					t.Fatalf("round %d: edit %d before the kill: %v", round, i, err)
				}
				break
			}
			acked, inflight, cur, v = next, "", next, version(next)
		}
		p.wait(t)
		if strings.Contains(p.stderr.String(), "level=ERROR") {
			t.Fatalf("round %d: errors logged:\n%s", round, p.stderr.String())
		}
	}
	if restoredUnsaved < rounds/2 {
		t.Fatalf("only %d of %d restarts restored unsaved edits: the test did not test", restoredUnsaved, rounds)
	}
	// --fresh: the log is moved aside, kept; the buffer opens from disk.
	p := startServe(t, nil, "--kernels", "1", "--fresh", dir)
	c, _ := connect(t, p.url, "editor")
	var open protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "helper.py"}, &open)
	if open.Content != disk {
		t.Errorf("--fresh: helper.py opened with %q, want the disk's %q", open.Content, disk)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, ".ripple", "state.db.fresh-*")); len(aside) != 1 {
		t.Errorf("--fresh kept %v, want one state.db.fresh-* file", aside)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestServeBinaryDamagedStateLog: a .ripple/state.db that is not a
// database is moved aside (kept byte for byte) with one warning line and
// the server starts fresh; the user's files are untouched.
func TestServeBinaryDamagedStateLog(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	garbage := strings.Repeat("this is not a database\n", 500)
	writeFile(t, dir, ".ripple/state.db", garbage)
	disk := readFile(t, dir, "helper.py")
	p := startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "editor")
	var open protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "helper.py"}, &open)
	if open.Content != disk {
		t.Errorf("helper.py opened with %q", open.Content)
	}
	if n := strings.Count(p.stderr.String(), "state log unusable, moved aside"); n != 1 || !strings.Contains(p.stderr.String(), "level=WARN") {
		t.Errorf("want one warning line about the moved log, got %d:\n%s", n, p.stderr.String())
	}
	aside, _ := filepath.Glob(filepath.Join(dir, ".ripple", "state.db.corrupt-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v, want one state.db.corrupt-* file", aside)
	}
	if got, _ := os.ReadFile(aside[0]); string(got) != garbage {
		t.Errorf("the damaged log was not kept as it was")
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// Contexts and their stacks survive a kill -9. A client that
// reconnects with its clientId gets its context back with its values (no
// create, no push) and can go on using it; a destroyed context stays
// destroyed; a context of another client that never comes back is not
// shown to this one.
func TestServeBinaryRestoresContextsAfterKill9(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	p := startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil || len(r.updates) == 0 {
		t.Fatalf("first run: failed %+v, %d updates", r.failed, len(r.updates))
	}
	vid := protocol.NewVisualizationID()
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: vid, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v * 7"}}, nil)
	if r := c.waitRun(id); len(r.visData) != 1 || r.visData[0] != "42" {
		t.Fatalf("visualization before the kill: %v", r.visData)
	}
	detached := protocol.NewVisualizationID()
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: detached, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: -v"}}, nil)
	c.waitRun(id)
	c.call(protocol.MethodDetachVisualization, protocol.DetachVisualizationParams{ExecutionContextID: id, VisualizationID: detached, ExpressionID: "main:main/x"}, nil)
	gone, _ := c.newContext("main:main")
	c.call(protocol.MethodDestroyContext, protocol.DestroyContextParams{ContextID: gone}, nil)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	p2 := startServe(t, nil, "--kernels", "1", dir)
	if !strings.Contains(p2.stderr.String(), "context restored from the state log") || !strings.Contains(p2.stderr.String(), string(id)) {
		t.Errorf("stderr does not say %s was restored:\n%s", id, p2.stderr.String())
	}
	c2, _ := connect(t, p2.url, "ide")
	// Its values come back without a create or push.
	m := c2.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var u protocol.ExpressionUpdatesParams
		return json.Unmarshal(raw, &u) == nil && u.ContextID == id && len(u.Updates) > 0
	})
	var u protocol.ExpressionUpdatesParams
	mustDecode(t, m.Params, &u)
	// And it is usable: a recompute runs it to the end.
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	if r := c2.waitRun(id); r.failed != nil {
		t.Fatalf("recompute of the restored context failed: %+v", r.failed)
	}
	// The attached visualization is back (the detached one is not): an
	// edit of x gives one update, from it.
	// (The restored run and the recompute may still be ending: their
	// completions come first, so read up to three runs.)
	c2.setText("main.py", mainWith("x = 7", "y = foo(x, 5)", "z = y + 5"))
	var vis []string
	for i := 0; i < 3 && len(vis) == 0; i++ {
		vis = append(vis, c2.waitRun(id).visData...)
	}
	if len(vis) != 1 || vis[0] != "49" {
		t.Errorf("after restart, an edit of x gave visualization data %v, want [49] (the attached one only)", vis)
	}
	c2.callErr(protocol.CodeContextNotFound, protocol.MethodPush, protocol.PushParams{ContextID: gone,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})})
	p2.cmd.Process.Signal(syscall.SIGINT)
	if code := p2.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// A second `ripple serve` on a project whose state log is in use refuses
// to start (exit 1, naming the file) instead of interleaving its changes;
// the first goes on.
func TestServeBinarySecondServerOnProject(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	p := startServe(t, nil, "--kernels", "1", dir)
	cmd := exec.CommandContext(stepCtx(t), buildBinary(t), "serve", "--kernels", "1", dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("second server: %v, want exit 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "state.db") || !strings.Contains(string(out), "another ripple serve") {
		t.Errorf("second server's message does not name the state log and the cause:\n%s", out)
	}
	// Nor does --fresh move its log aside.
	out, err = exec.CommandContext(stepCtx(t), buildBinary(t), "serve", "--fresh", "--kernels", "1", dir).CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "another ripple serve") {
		t.Fatalf("second server with --fresh: %v, want exit 1 naming the cause; output:\n%s", err, out)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, ".ripple", "state.db.*")); len(aside) != 0 {
		t.Errorf("the running server's log was moved: %v", aside)
	}
	c, _ := connect(t, p.url, "ide")
	if _, r := c.newContext("main:main"); r.failed != nil {
		t.Errorf("the first server stopped working: %+v", r.failed)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// journalMain's n appends a line to ran.log beside the project each time
// it runs (through side.note): the side effect the value journal must not repeat.
const journalMain = `from side import note


def main():
    x = 6
    n = note("x")
    y = x * 7
`

const journalSide = `def note(s):
    with open("../ran.log", "a") as f:  # beside the project: a restored run may not write into it
        f.write(s + "\n")
    return len(s)
`

// Statements computed before a kill -9 are restored from the
// value journal on the restarted server (their side effects do not
// repeat: ran.log keeps one line per statement run), in two rounds: the
// second one's new statement too. The kernels write the journal right
// after each result (RIPPLE_VALUES_IDLE_MS=0), so a recompute that
// returned means it is written.
func TestServeBinaryRestoresValuesAfterKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.py", journalMain)
	writeFile(t, dir, "side.py", journalSide)
	env := []string{"RIPPLE_VALUES_IDLE_MS=0"}
	lines := func() string { return readFile(t, dir, "../ran.log") }

	p := startServe(t, env, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	id, r := c.newContext("main:main")
	if r.failed != nil {
		t.Fatalf("first run failed: %+v", r.failed)
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c.waitRun(id)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	if got := lines(); got != "x\n" {
		t.Fatalf("ran.log before the restart: %q", got)
	}

	// The context comes back from the state log and runs on the new
	// kernel: n from the journal.
	p2 := startServe(t, env, "--kernels", "1", dir)
	c2, _ := connect(t, p2.url, "ide")
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	if r := c2.waitRun(id); r.failed != nil {
		t.Fatalf("recompute after the restart failed: %+v", r.failed)
	}
	if got := lines(); got != "x\n" {
		t.Errorf("ran.log after the restart: %q: n ran again instead of coming from the journal", got)
	}
	// A new statement runs (once); the old ones stay cached.
	c2.setText("main.py", journalMain+"    m = note(\"m\")\n")
	r = c2.waitRun(id)
	for r.failed == nil && r.updates.Values()["main:main/m"] == "" {
		r = c2.waitRun(id) // the restored run may end first
	}
	if r.failed != nil {
		t.Fatalf("run after the edit failed: %+v", r.failed)
	}
	c2.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	c2.waitRun(id)
	p2.cmd.Process.Signal(syscall.SIGKILL)
	p2.wait(t)
	if got := lines(); got != "x\nm\n" {
		t.Fatalf("ran.log before the second restart: %q", got)
	}

	p3 := startServe(t, env, "--kernels", "1", dir)
	c3, _ := connect(t, p3.url, "ide")
	c3.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	r = c3.waitRun(id)
	if r.failed != nil {
		t.Fatalf("recompute after the second restart failed: %+v", r.failed)
	}
	if got := lines(); got != "x\nm\n" {
		t.Errorf("ran.log after the second restart: %q: statements ran again instead of coming from the journal", got)
	}
	p3.cmd.Process.Signal(syscall.SIGINT)
	if code := p3.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}

	// --fresh: the journal is kept aside and everything runs again.
	p4 := startServe(t, env, "--kernels", "1", "--fresh", dir)
	c4, _ := connect(t, p4.url, "ide")
	if _, r := c4.newContext("main:main"); r.failed != nil {
		t.Fatalf("run after --fresh failed: %+v", r.failed)
	}
	// (main.py as on disk: the edit that added m was never saved.)
	if got := lines(); got != "x\nm\nx\n" {
		t.Errorf("ran.log after --fresh: %q, want n run again", got)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, ".ripple", "values.db.fresh-*Z")); len(aside) != 1 {
		t.Errorf("--fresh kept %v, want one values.db.fresh-* file", aside)
	}
	p4.cmd.Process.Signal(syscall.SIGINT)
	if code := p4.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// A .ripple/values.db that is not a database is moved aside (kept byte
// for byte) with one warning line; values are computed and journalled.
func TestServeBinaryDamagedValueJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "main.py", journalMain)
	writeFile(t, dir, "side.py", journalSide)
	garbage := strings.Repeat("this is not a database\n", 500)
	writeFile(t, dir, ".ripple/values.db", garbage)
	p := startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	if _, r := c.newContext("main:main"); r.failed != nil || r.updates.Values()["main:main/y"] != "42" {
		t.Fatalf("run: failed %+v, values %v", r.failed, r.updates.Values())
	}
	if n := strings.Count(p.stderr.String(), "value journal moved aside"); n != 1 {
		t.Errorf("want one warning line about the moved journal, got %d:\n%s", n, p.stderr.String())
	}
	aside, _ := filepath.Glob(filepath.Join(dir, ".ripple", "values.db.corrupt-*"))
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v, want one values.db.corrupt-* file", aside)
	}
	if got, _ := os.ReadFile(aside[0]); string(got) != garbage {
		t.Errorf("the damaged journal was not kept as it was")
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
