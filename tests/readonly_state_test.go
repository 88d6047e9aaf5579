package tests

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// refusedNotRecorded fails t unless err is 7001 StateNotRecorded naming a
// read-only file system.
func refusedNotRecorded(t *testing.T, what string, err error) {
	t.Helper()
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeStateNotRecorded || !strings.Contains(pe.Message, "read-only") {
		t.Fatalf("%s on a read-only .ripple/: %v, want 7001 naming the read-only file system", what, err)
	}
}

// PROTOCOL.md 8.5, "once writing works again, changes are accepted
// again", for a .ripple/ that is read-only when the server starts (the
// real binary, a real tmpfs remounted). Before, its changes were refused
// until a restart: the log was opened read-only for good. Now the first
// change after the remount opens the log for writing, writes the state the
// server holds (what it restored) as the log's first state, records the
// change and accepts it; runtime/status and stderr say it records again,
// and after kill -9 both the earlier state and the new edit come back.
func TestServeBinaryReadOnlyStateRecoversLive(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	state := filepath.Join(dir, ".ripple")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.MountTmpfs(t, state, 8<<20)

	p := startServe(t, nil, "--kernels", "1", dir)
	ed := openEditor(t, p.url, "editor", "helper.py")
	ctxID, _ := ed.c.newContext("main:main")
	for i := range 3 {
		if err := ed.appendLine("# acknowledged " + itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	acked := ed.content
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	testenv.RemountTmpfs(t, state, true)
	p = startServe(t, nil, "--kernels", "1", dir)
	ed = openEditor(t, p.url, "editor", "helper.py")
	if ed.content != acked {
		t.Fatalf("read-only .ripple/: helper.py has %d bytes, want the acknowledged %d", len(ed.content), len(acked))
	}
	for i := range 2 {
		refusedNotRecorded(t, "edit "+itoa(i), ed.appendLine("# refused "+itoa(i)))
	}
	refusedNotRecorded(t, "executionContext/create", ed.c.c.Call(stepCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{}, nil))
	if st := stateStatus(t, ed.c); st.Recording || !strings.Contains(st.Problem, "read-only") {
		t.Fatalf("runtime/status state on a read-only .ripple/: %+v", st)
	}

	// Writable again, with the same server: the next edit is accepted.
	testenv.RemountTmpfs(t, state, false)
	if err := ed.appendLine("# accepted once writable"); err != nil {
		t.Fatalf("the first edit once .ripple/ is writable again: %v", err)
	}
	if st := stateStatus(t, ed.c); !st.Recording || st.Problem != "" {
		t.Fatalf("runtime/status state once .ripple/ is writable again: %+v", st)
	}
	if !strings.Contains(p.stderr.String(), "recording again") {
		t.Fatalf("stderr does not say the state log records again:\n%s", p.stderr.String())
	}
	acked = ed.content
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	// The log opened late holds the state restored at start (the context)
	// and the edit accepted after.
	p = startServe(t, nil, "--kernels", "1", dir)
	ed = openEditor(t, p.url, "editor", "helper.py")
	if ed.content != acked {
		t.Fatalf("after kill -9 helper.py has %d bytes, want the acknowledged %d:\n%s", len(ed.content), len(acked), ed.content)
	}
	ed.c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: ctxID}, nil)
	if err := ed.appendLine("# and later"); err != nil {
		t.Fatalf("edit after the restart: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// A read-only project, where .ripple/ cannot even be created. Before, the
// server accepted every change without recording it (said once on stderr),
// so a crash lost acknowledged edits, which PROTOCOL.md 8.5 forbids. Now
// changes are refused with 7001 like on a read-only .ripple/, and once the
// project can be written the next edit creates .ripple/state.db, is
// recorded and accepted, and survives kill -9.
func TestServeBinaryReadOnlyProjectRefusesThenRecords(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.MountTmpfs(t, dir, 8<<20)
	writeFile(t, dir, "main.py", mainWith(baseBody...))
	writeFile(t, dir, "helper.py", scenarioHelper)
	testenv.RemountTmpfs(t, dir, true)

	p := startServe(t, nil, "--kernels", "1", dir)
	if !testenv.Poll(stepDeadline(t), func() bool { return strings.Contains(p.stderr.String(), "7001") }) {
		t.Fatalf("a .ripple/ that cannot be created is not said at start with what it means:\n%s", p.stderr.String())
	}
	ed := openEditor(t, p.url, "editor", "helper.py")
	refusedNotRecorded(t, "edit", ed.appendLine("# refused"))
	refusedNotRecorded(t, "executionContext/create", ed.c.c.Call(stepCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{}, nil))
	if st := stateStatus(t, ed.c); st.Recording || !strings.Contains(st.Problem, "7001") {
		t.Fatalf("runtime/status state in a read-only project: %+v", st)
	}

	testenv.RemountTmpfs(t, dir, false)
	if err := ed.appendLine("# accepted once writable"); err != nil {
		t.Fatalf("the first edit once the project is writable: %v", err)
	}
	if st := stateStatus(t, ed.c); !st.Recording {
		t.Fatalf("runtime/status state once the project is writable: %+v", st)
	}
	acked := ed.content
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	p = startServe(t, nil, "--kernels", "1", dir)
	ed = openEditor(t, p.url, "editor", "helper.py")
	if ed.content != acked {
		t.Fatalf("after kill -9 helper.py has %d bytes, want the acknowledged %d", len(ed.content), len(acked))
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
