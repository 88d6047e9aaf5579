package tests

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// editor is one client's view of helper.py: the last acknowledged text.
type editor struct {
	c       *client
	path    string
	content string
}

func openEditor(t *testing.T, url, clientID, path string) *editor {
	t.Helper()
	c, _ := connect(t, url, clientID)
	var open protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: path}, &open)
	return &editor{c: c, path: path, content: open.Content}
}

// appendLine sends an edit appending line; it returns the error (nil:
// acknowledged, and the editor's text moves on).
func (e *editor) appendLine(line string) error {
	next := e.content + line + "\n"
	err := e.c.c.Call(stepCtx(e.c.t), protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: protocol.FileEdit{
		Path:       protocol.Path(e.path),
		Edits:      []protocol.TextEdit{{Range: protocol.Range{Start: endOf(e.content), End: endOf(e.content)}, Text: line + "\n"}},
		OldVersion: version(e.content),
		NewVersion: version(next),
	}, Execute: true}, nil)
	if err == nil {
		e.content = next
	}
	return err
}

func stateStatus(t *testing.T, c *client) *protocol.StateStatus {
	t.Helper()
	var st protocol.RuntimeStatusResult
	c.call(protocol.MethodRuntimeStatus, protocol.RuntimeStatusParams{}, &st)
	if st.State == nil {
		t.Fatal("runtime/status has no state")
	}
	return st.State
}

// fillDisk writes p until its file system is full.
func fillDisk(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// PROTOCOL.md 8.5 with the real binary and a real full disk: a small tmpfs
// on the project's .ripple/. Before, every edit got a success reply while
// the state log could not be written, and after kill -9 most of them were
// gone. Now an edit the log cannot record is refused with 7001 naming the
// cause, the buffer stays as it was (a second client opens the
// acknowledged text), runtime/status says so, and after kill -9 every
// acknowledged edit is back, with the disk still full. A read-only
// .ripple/ at start is said on stderr, its state restored and changes
// refused; once there is room again, edits are accepted.
func TestServeBinaryFullDiskRefusesChanges(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	state := filepath.Join(dir, ".ripple")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.MountTmpfs(t, state, 2<<20)

	p := startServe(t, nil, "--kernels", "1", dir)
	ed := openEditor(t, p.url, "editor", "helper.py")
	ctxID, _ := ed.c.newContext("main:main")
	for i := range 5 {
		if err := ed.appendLine("# before the disk filled " + itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	fill := filepath.Join(state, "fill")
	fillDisk(t, fill)
	// Lines of 8 KiB: the log must grow soon (bbolt reuses freed pages
	// for a while, and what it can write is durable and acknowledged).
	long := "# " + strings.Repeat("x", 8<<10)
	refused := 0
	for i := 0; i < 200 && refused < 5; i++ {
		err := ed.appendLine(long + itoa(i))
		if err == nil {
			continue
		}
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeStateNotRecorded || !strings.Contains(pe.Message, "no space left on device") {
			t.Fatalf("edit %d on a full disk: %v, want 7001 naming the full disk", i, err)
		}
		refused++
		if refused == 1 {
			st := stateStatus(t, ed.c)
			if st.Recording || !strings.Contains(st.Problem, "7001") || !strings.Contains(st.Problem, "no space left") {
				t.Fatalf("runtime/status state after a refused edit: %+v", st)
			}
			// The state stays as it was: another client opens the
			// acknowledged text, not the refused edit.
			other := openEditor(t, p.url, "viewer", "helper.py")
			if other.content != ed.content {
				t.Fatalf("after a refused edit a second client opens %d bytes, want the acknowledged %d", len(other.content), len(ed.content))
			}
		}
	}
	if refused == 0 {
		t.Fatal("no edit was refused on a full disk (each got a success reply)")
	}
	acked := ed.content
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	// Restart with the disk still full: every acknowledged edit is there.
	p = startServe(t, nil, "--kernels", "1", dir)
	ed = openEditor(t, p.url, "editor", "helper.py")
	if ed.content != acked {
		t.Fatalf("after kill -9 on a full disk helper.py has %d bytes, want the acknowledged %d", len(ed.content), len(acked))
	}
	ed.c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: ctxID}, nil)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)

	// A read-only .ripple/: said at start, the state restored, changes
	// refused naming the cause.
	testenv.RemountTmpfs(t, state, true)
	p = startServe(t, nil, "--kernels", "1", dir)
	if err := testenv.Poll(stepDeadline(t), func() bool { return strings.Contains(p.stderr.String(), "cannot be written") }); !err {
		t.Fatalf("a read-only .ripple/ is not said at start:\n%s", p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "7001") {
		t.Fatalf("the start message does not say what a read-only .ripple/ means:\n%s", p.stderr.String())
	}
	ed = openEditor(t, p.url, "editor", "helper.py")
	if ed.content != acked {
		t.Fatalf("read-only .ripple/: helper.py has %d bytes, want the acknowledged %d", len(ed.content), len(acked))
	}
	ed.c.callErr(protocol.CodeStateNotRecorded, protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: protocol.FileEdit{
		Path: "helper.py", Edits: []protocol.TextEdit{{Range: protocol.Range{Start: endOf(acked), End: endOf(acked)}, Text: "#\n"}},
		OldVersion: version(acked), NewVersion: version(acked + "#\n")}}, "read-only")
	ed.c.callErr(protocol.CodeStateNotRecorded, protocol.MethodCreateContext, protocol.CreateContextParams{})
	if st := stateStatus(t, ed.c); st.Recording || !strings.Contains(st.Problem, "read-only") {
		t.Fatalf("runtime/status state on a read-only .ripple/: %+v", st)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	testenv.RemountTmpfs(t, state, false)

	// Room again: edits are accepted.
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, nil, "--kernels", "1", dir)
	ed = openEditor(t, p.url, "editor", "helper.py")
	if err := ed.appendLine("# room again"); err != nil {
		t.Fatalf("edit once the disk has room: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// damageOf returns runtime/status's damage entry for file (a path ending
// in it), nil if there is none.
func damageOf(st *protocol.StateStatus, file string) *protocol.StateDamage {
	for i := range st.Damage {
		if strings.HasSuffix(st.Damage[i].File, file) {
			return &st.Damage[i]
		}
	}
	return nil
}

// Damage is always said. Before, an empty state.db was taken as a new log
// without a word (its buffers and contexts gone), a garbage values.db-wal
// was dropped by SQLite silently, and damage inside values.db was written
// only to a kernel's temp log. Now each is a warning on stderr and an
// entry of runtime/status's state.damage naming where the file went.
func TestServeBinarySaysEveryDamagedFile(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	state := filepath.Join(dir, ".ripple")
	// A real journal with a garbage WAL beside it, and an empty log.
	makeJournal(t, filepath.Join(state, "values.db"))
	writeFile(t, dir, ".ripple/values.db-wal", strings.Repeat("not a WAL ", 400))
	writeFile(t, dir, ".ripple/state.db", "")

	p := startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "ide")
	st := stateStatus(t, c)
	if d := damageOf(st, "state.db"); d == nil || !strings.Contains(d.MovedTo, "state.db.empty-") || !strings.Contains(d.Detail, "empty") {
		t.Errorf("empty state.db: damage %+v, want it moved aside to state.db.empty-*", d)
	}
	if d := damageOf(st, "values.db-wal"); d == nil || !strings.Contains(d.MovedTo, "values.db-wal.corrupt-") {
		t.Errorf("garbage values.db-wal: damage %+v, want it moved aside", d)
	} else if _, err := os.Stat(d.MovedTo); err != nil {
		t.Errorf("the damaged WAL is not kept: %v", err)
	}
	for _, want := range []string{"state log was empty (0 bytes)", "value journal WAL moved aside"} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, p.stderr.String())
		}
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)

	// Damage inside values.db: an SQLite header over garbage pages. The
	// kernel finds it when it opens the journal and moves it aside; the
	// server says so.
	writeFile(t, dir, ".ripple/values.db", "SQLite format 3\x00"+strings.Repeat("\x07garbage", 1024))
	p = startServe(t, nil, "--kernels", "1", dir)
	c, _ = connect(t, p.url, "ide")
	c.newContext("main:main")
	var d *protocol.StateDamage
	testenv.Eventually(t, "damage inside values.db in runtime/status", func() bool {
		st := stateStatus(t, c)
		for i := range st.Damage {
			if strings.Contains(st.Damage[i].MovedTo, "values.db.corrupt-") {
				d = &st.Damage[i]
				return true
			}
		}
		return false
	})
	if !strings.Contains(d.Detail, "damaged inside") {
		t.Errorf("damage inside values.db: %+v", d)
	}
	if !strings.Contains(p.stderr.String(), "value journal damaged inside") {
		t.Errorf("stderr does not say the journal was damaged inside:\n%s", p.stderr.String())
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// makeJournal makes an SQLite database at p (python3's sqlite3, the
// module the kernels use).
func makeJournal(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('create table ripple_meta(k text primary key, v text not null)'); c.commit()", p).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
}

// A buffer the state log restores after kill -9 keeps its unsaved edits
// even when its file changed or went away on disk while the server was
// down; before, that was hidden behind the restored buffer. Now its client
// hears text/fileModifiedOnDisk when it comes back and opens the file,
// and stderr and runtime/status name the file.
func TestServeBinaryRestoredBufferChangedOnDisk(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	writeFile(t, dir, "notes.txt", "first notes\n")
	p := startServe(t, nil, "--kernels", "1", dir)
	ed := openEditor(t, p.url, "editor", "helper.py")
	if err := ed.appendLine("# unsaved"); err != nil {
		t.Fatal(err)
	}
	notes := &editor{c: ed.c, path: "notes.txt"}
	var open protocol.OpenFileResult
	ed.c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "notes.txt"}, &open)
	notes.content = open.Content
	if err := notes.appendLine("unsaved notes"); err != nil {
		t.Fatal(err)
	}
	unsaved, unsavedNotes := ed.content, notes.content
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	writeFile(t, dir, "helper.py", scenarioHelper+"# changed on disk while the server was down\n")
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}

	p = startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "editor")
	for _, f := range []struct{ path, content string }{{"helper.py", unsaved}, {"notes.txt", unsavedNotes}} {
		c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: f.path}, &open)
		if open.Content != f.content {
			t.Errorf("%s reopened with %q, want the restored unsaved %q", f.path, open.Content, f.content)
		}
		path := f.path
		c.waitFor(protocol.NotifyFileModifiedOnDisk, func(raw json.RawMessage) bool {
			var m protocol.FileModifiedOnDiskParams
			mustDecode(t, raw, &m)
			return string(m.Path) == path
		})
	}
	st := stateStatus(t, c)
	if d := damageOf(st, "helper.py"); d == nil || !strings.Contains(d.Detail, "modified on disk") {
		t.Errorf("helper.py: damage %+v, want it named as modified on disk", d)
	}
	if d := damageOf(st, "notes.txt"); d == nil || !strings.Contains(d.Detail, "deleted on disk") {
		t.Errorf("notes.txt: damage %+v, want it named as deleted on disk", d)
	}
	if n := strings.Count(p.stderr.String(), "on disk while the server was down"); n != 2 {
		t.Errorf("stderr names %d changed files, want 2:\n%s", n, p.stderr.String())
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.wait(t)
}
