package engine_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// File-watch recompute end to end through the engine: real
// files in t.TempDir(), real fsnotify, a real kernel. Every change here is
// made from outside the engine (os calls, git), as an editor would.

// watchDebounce is the debounce of the tests about one save pattern: high
// enough that a stall of the shared test machine in the middle of a pattern
// cannot split it into two batches (which would be two recomputes). How a
// pattern is combined does not depend on the debounce; the burst and git
// tests use the default.
const watchDebounce = 300 * time.Millisecond

// watchHarness starts an engine watching a project with files and one
// context running main:main; it returns after the first run.
func watchHarness(t *testing.T, files map[string]string, debounce time.Duration) (*harness, protocol.ContextID, *runResult) {
	t.Helper()
	h := setup(t, files, engine.Config{Watch: true, WatchDebounce: debounce})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run failed: %+v", run.failed)
	}
	return h, id, run
}

// quiesce returns once every change made on disk before the call has been
// turned into work and that work has finished. inotify keeps order, so a
// marker file written now is reported with or after every earlier change;
// but a batch's file/events go out before its edit is applied, so a second
// marker, written once the first is reported, lands in a later batch, which
// the engine takes only after applying the first one's edit. Then the
// queue must drain.
func (h *harness) quiesce() {
	h.t.Helper()
	for range 2 {
		marker := fmt.Sprintf("quiesce-%d.txt", time.Now().UnixNano())
		from := h.client.mark()
		write(h.t, h.dir, marker, "m")
		h.client.waitFrom(h.t, from, "file/event of "+marker, func(n note) bool {
			p, ok := n.Params.(protocol.FileEventParams)
			return ok && string(p.Path) == marker
		})
	}
	var last protocol.RuntimeStatusResult
	if !testenv.Poll(testenv.Deadline(h.t), func() bool {
		st, err := h.e.Status(h.ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		last = st
		return st.Queue.Pending == 0 && st.Queue.Running == 0
	}) {
		h.t.Fatalf("the queue did not drain: %+v", last.Queue)
	}
}

// since returns the notifications received after mark.
func (r *recorder) since(from int) []note {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]note(nil), r.notes[from:]...)
}

// runEnds counts the runs of id that ended (executionComplete or
// executionFailed) in notes.
func runEnds(notes []note, id protocol.ContextID) int {
	n := 0
	for _, nt := range notes {
		switch p := nt.Params.(type) {
		case protocol.ExecutionCompleteParams:
			if p.ContextID == id {
				n++
			}
		case protocol.ExecutionFailedParams:
			if p.ContextID == id {
				n++
			}
		}
	}
	return n
}

// runStarts counts the runs of id that the kernel started and that were to
// recompute expr: each run sends Pending for what it will run, flushed at
// once, before anything else (the first statement already marked running,
// in the same notification: PROTOCOL.md 8.4). A run superseded before it
// started costs nothing and is not counted; one superseded while running
// is.
func runStarts(notes []note, id protocol.ContextID, expr protocol.ExpressionID) int {
	n := 0
	for _, nt := range notes {
		p, ok := nt.Params.(protocol.ExpressionUpdatesParams)
		if !ok || p.ContextID != id {
			continue
		}
		for _, u := range p.Updates {
			if u.ExpressionID == expr && (u.Payload.IsWaiting() || u.Payload.IsRunning()) {
				n++
			}
		}
	}
	return n
}

// fileEvents lists "path:Kind" of every file/event in notes, skipping the
// quiesce markers.
func fileEvents(notes []note) []string {
	var out []string
	for _, n := range notes {
		if p, ok := n.Params.(protocol.FileEventParams); ok && !strings.HasPrefix(string(p.Path), "quiesce-") {
			out = append(out, string(p.Path)+":"+string(p.Kind))
		}
	}
	return out
}

func notesOf[T any](notes []note) []T {
	var out []T
	for _, n := range notes {
		if p, ok := n.Params.(T); ok {
			out = append(out, p)
		}
	}
	return out
}

func abs(h *harness, name string) string { return filepath.Join(h.dir, filepath.FromSlash(name)) }

// savePatterns are the ways editors and tools write a file, each replacing
// name's content with text.
var savePatterns = []struct {
	name string
	save func(t *testing.T, h *harness, name, text string)
}{
	{"in place", func(t *testing.T, h *harness, name, text string) {
		// O_TRUNC then write: nano, VS Code, most editors.
		f, err := os.OpenFile(abs(h, name), os.O_WRONLY|os.O_TRUNC, 0)
		must(t, err)
		_, err = f.WriteString(text)
		must(t, err)
		must(t, f.Close())
	}},
	{"temp then rename", func(t *testing.T, h *harness, name, text string) {
		// Write a temp file beside it, rename over it (atomic savers, emacs).
		dir, base := filepath.Split(name)
		tmp := abs(h, dir+"."+base+".tmp1234")
		must(t, os.WriteFile(tmp, []byte(text), 0o644))
		must(t, os.Rename(tmp, abs(h, name)))
	}},
	{"vim backup", func(t *testing.T, h *harness, name, text string) {
		// vim with backupcopy=no: move the original away, write a new file,
		// delete the backup.
		must(t, os.Rename(abs(h, name), abs(h, name+"~")))
		must(t, os.WriteFile(abs(h, name), []byte(text), 0o644))
		must(t, os.Remove(abs(h, name+"~")))
	}},
	{"jetbrains safe write", func(t *testing.T, h *harness, name, text string) {
		tmp, old := abs(h, name+"___jb_tmp___"), abs(h, name+"___jb_old___")
		must(t, os.WriteFile(tmp, []byte(text), 0o644))
		must(t, os.Rename(abs(h, name), old))
		must(t, os.Rename(tmp, abs(h, name)))
		must(t, os.Remove(old))
	}},
	{"delete then create", func(t *testing.T, h *harness, name, text string) {
		must(t, os.Remove(abs(h, name)))
		must(t, os.WriteFile(abs(h, name), []byte(text), 0o644))
	}},
}

func TestWatchSavePatterns(t *testing.T) {
	t.Parallel()
	for _, sp := range savePatterns {
		t.Run(sp.name, func(t *testing.T) {
			t.Parallel()
			h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)
			m := h.client.mark()
			sp.save(t, h, "helper.py", "def foo(a, b):\n    c = a * b * 2\n    return c\n")
			run := h.client.waitRun(t, m, id)
			if run.failed != nil {
				t.Fatalf("run failed: %+v", run.failed)
			}
			v := run.updates.Values()
			expect(t, "y, z", []string{v["main:main/y"], v["main:main/z"]}, []string{"60", "65"})
			// x does not read helper: it stays cached.
			expect(t, "computed", run.updates.Computed(), []string{"main:main/y", "main:main/z", "main:main/return"})
			h.quiesce()
			notes := h.client.since(m)
			expect(t, "runs", runEnds(notes, id), 1)
			expect(t, "file events", fileEvents(notes), []string{"helper.py:Modified"})
		})
	}
}

func TestWatchSaveOfMainItself(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)
	m := h.client.mark()
	savePatterns[1].save(t, h, "main.py", strings.Replace(scenarioMain, "z = y + 5", "z = y + 50", 1))
	run := h.client.waitRun(t, m, id)
	expect(t, "z", run.updates.Values()["main:main/z"], "80")
	expect(t, "computed", run.updates.Computed(), []string{"main:main/z", "main:main/return"})
}

// burstFiles is a project of 20 modules f00..f19, each defining x, and a
// main whose total reads all of them, so every reload of any of them
// recomputes total (and shows in runStarts).
func burstFiles() map[string]string {
	files := map[string]string{}
	var imports, sum []string
	for i := range 20 {
		name := fmt.Sprintf("f%02d", i)
		files[name+".py"] = "x = 0\n"
		imports = append(imports, "import "+name)
		sum = append(sum, name+".x")
	}
	files["main.py"] = strings.Join(imports, "\n") + "\n\n\ndef main():\n    total = " + strings.Join(sum, " + ") + "\n    return total\n"
	return files
}

func TestWatchBurstOfWrites(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, burstFiles(), 0)
	m := h.client.mark()
	want := 0
	for i := range 200 {
		name := fmt.Sprintf("f%02d.py", i%20)
		write(t, h.dir, name, fmt.Sprintf("x = %d\n", i))
		if i >= 180 {
			want += i
		}
	}
	// Wait for the final value: every file's last write is in.
	h.client.waitFrom(t, m, fmt.Sprintf("total = %d", want), func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == "main:main/total" && u.Payload.Preview == fmt.Sprint(want)
		})
	})
	h.quiesce()
	notes := h.client.since(m)
	starts, ends := runStarts(notes, id, "main:main/total"), runEnds(notes, id)
	t.Logf("200 writes to 20 files: %d run(s) started, %d ended", starts, ends)
	if starts < 1 || starts > 2 || ends < 1 || ends > 2 {
		t.Errorf("200 writes to 20 files: %d runs started and %d ended, want 1 or 2", starts, ends)
	}
	events := fileEvents(notes)
	for i := range 20 {
		p := fmt.Sprintf("f%02d.py:Modified", i)
		if !slices.Contains(events, p) {
			t.Errorf("no file/event %s in %v", p, events)
		}
	}
}

func gitCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com",
		"-c", "init.defaultBranch=main", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestWatchGitCheckout(t *testing.T) {
	t.Parallel()
	h := setup(t, burstFiles(), engine.Config{Watch: true})
	// The branch `other` changes every module (x = 1..20) and adds a file.
	// Preparing it changes files under the watcher; quiesce absorbs that.
	gitCmd(t, h.dir, "init", "-q")
	gitCmd(t, h.dir, "add", ".")
	gitCmd(t, h.dir, "commit", "-q", "-m", "one")
	gitCmd(t, h.dir, "checkout", "-q", "-b", "other")
	for i := range 20 {
		write(t, h.dir, fmt.Sprintf("f%02d.py", i), fmt.Sprintf("x = %d\n", i+1))
	}
	write(t, h.dir, "NOTES.md", "other branch\n")
	gitCmd(t, h.dir, "add", ".")
	gitCmd(t, h.dir, "commit", "-q", "-m", "two")
	gitCmd(t, h.dir, "checkout", "-q", "main")
	h.quiesce()
	id, run := h.newContext("main:main")
	expect(t, "total on main", run.updates.Values()["main:main/total"], "0")

	m := h.client.mark()
	gitCmd(t, h.dir, "checkout", "-q", "other")
	run = h.client.waitRun(t, m, id)
	expect(t, "total on other", run.updates.Values()["main:main/total"], "210")
	h.quiesce()
	notes := h.client.since(m)
	expect(t, "runs started", runStarts(notes, id, "main:main/total"), 1)
	expect(t, "runs ended", runEnds(notes, id), 1)
	events := fileEvents(notes)
	if len(events) != 21 || !slices.Contains(events, "NOTES.md:Added") {
		t.Errorf("file events %v, want the 20 modules Modified and NOTES.md Added", events)
	}
}

// A push racing with a change on disk must still run its context. Each
// round changes all 20 modules on disk (one batch: an edit that aborts
// everything and runs every context with a stack) while a new context is
// pushed, at varying offsets; the new context's run must come even when no
// later change follows. The edit's plan and the push's are applied in an
// order in which the later one saw the earlier one's state change.
func TestWatchPushRacingDiskChange(t *testing.T) {
	t.Parallel()
	h := setup(t, burstFiles(), engine.Config{Watch: true, WatchDebounce: time.Millisecond})
	for round := range 40 {
		for i := range 20 {
			write(t, h.dir, fmt.Sprintf("f%02d.py", i), fmt.Sprintf("x = %d\n", round))
		}
		time.Sleep(time.Duration(round%10) * 300 * time.Microsecond) // the offset of the race, not a wait for an event
		id, m := h.startContext("main:main")
		run := h.client.waitRun(t, m, id)
		if run.failed != nil {
			t.Fatalf("round %d: %+v", round, run.failed)
		}
	}
}

func TestWatchSelfWritesIgnored(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)

	// file/write: one run, from the write itself; the watcher sees its own
	// write and schedules nothing.
	m := h.client.mark()
	must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "helper.py", Contents: "def foo(a, b):\n    c = a * b * 3\n    return c\n"}))
	run := h.client.waitRun(t, m, id)
	expect(t, "y after file/write", run.updates.Values()["main:main/y"], "90")
	h.quiesce()
	expect(t, "runs after file/write", runEnds(h.client.since(m), id), 1)

	// text/applyEdit then text/save: one run for the edit, none for the save.
	m = h.client.mark()
	h.setText("main.py", strings.Replace(scenarioMain, "x = 6", "x = 2", 1))
	run = h.client.waitRun(t, m, id)
	expect(t, "y after the edit", run.updates.Values()["main:main/y"], "30")
	_, version := h.openFile("main.py")
	m = h.client.mark()
	must(t, h.e.SaveFile(h.ctx, clientID, protocol.SaveParams{Path: "main.py", CurrentVersion: version}))
	h.quiesce()
	notes := h.client.since(m)
	expect(t, "runs after text/save", runEnds(notes, id), 0)
	expect(t, "text/fileModifiedOnDisk after text/save", len(notesOf[protocol.FileModifiedOnDiskParams](notes)), 0)
	disk, err := os.ReadFile(abs(h, "main.py"))
	must(t, err)
	expect(t, "saved", string(disk) == strings.Replace(scenarioMain, "x = 6", "x = 2", 1), true)
}

func TestWatchDirtyBufferConflict(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)
	other := newRecorder()
	_, err := h.e.Connect(h.ctx, "other-client", other)
	must(t, err)

	typed := strings.Replace(scenarioMain, "x = 6", "x = 7", 1)
	m := h.client.mark()
	h.setText("main.py", typed) // unsaved edits
	run := h.client.waitRun(t, m, id)
	expect(t, "x typed", run.updates.Values()["main:main/x"], "7")

	m, mo := h.client.mark(), other.mark()
	write(t, h.dir, "main.py", strings.Replace(scenarioMain, "x = 6", "x = 100", 1))
	h.client.waitFrom(t, m, "text/fileModifiedOnDisk", func(n note) bool {
		p, ok := n.Params.(protocol.FileModifiedOnDiskParams)
		return ok && p.Path == "main.py"
	})
	h.quiesce()
	notes := h.client.since(m)
	// The buffer (what the user typed, what runs) is kept: nothing to run.
	expect(t, "runs", runEnds(notes, id), 0)
	expect(t, "text/didChange", len(notesOf[protocol.DidChangeParams](notes)), 0)
	expect(t, "file events", fileEvents(notes), []string{"main.py:Modified"})
	content, _ := h.openFile("main.py")
	expect(t, "buffer kept", content == typed, true)
	// The client without the buffer open hears of the change on disk only.
	onotes := other.since(mo)
	expect(t, "other's file events", fileEvents(onotes), []string{"main.py:Modified"})
	expect(t, "other's conflicts", len(notesOf[protocol.FileModifiedOnDiskParams](onotes)), 0)

	// A recompute of everything still runs the buffer, not the disk.
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run = h.client.waitRun(t, m, id)
	expect(t, "x after recompute", run.updates.Values()["main:main/x"], "7")
}

func TestWatchCleanBufferReload(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)
	other := newRecorder()
	_, err := h.e.Connect(h.ctx, "other-client", other)
	must(t, err)
	_, v1 := h.openFile("helper.py") // open, no edits

	newText := "def foo(a, b):\n    c = a + b\n    return c\n"
	m, mo := h.client.mark(), other.mark()
	write(t, h.dir, "helper.py", newText)
	run := h.client.waitRun(t, m, id)
	expect(t, "y", run.updates.Values()["main:main/y"], "11")
	h.quiesce()
	notes := h.client.since(m)
	changes := notesOf[protocol.DidChangeParams](notes)
	if len(changes) != 1 || len(changes[0].Edits) != 1 {
		t.Fatalf("text/didChange %+v, want one", changes)
	}
	fe := changes[0].Edits[0]
	if fe.Path != "helper.py" || fe.OldVersion != v1 || fe.NewVersion != versionOf(newText) ||
		len(fe.Edits) != 1 || fe.Edits[0].Text != newText || fe.Edits[0].Range.End != endOf(scenarioHelper) {
		t.Errorf("text/didChange edit %+v, want the whole text of helper.py replaced", fe)
	}
	content, version := h.openFile("helper.py")
	expect(t, "buffer reloaded", content == newText && version == versionOf(newText), true)
	expect(t, "runs", runEnds(notes, id), 1)
	expect(t, "file events", fileEvents(notes), []string{"helper.py:Modified"})
	// The other client has not opened helper.py: no text/didChange for it.
	expect(t, "other's text/didChange", len(notesOf[protocol.DidChangeParams](other.since(mo))), 0)
	expect(t, "other's file events", fileEvents(other.since(mo)), []string{"helper.py:Modified"})
}

func TestWatchNewSubdirectoryModule(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)
	// A new package two levels deep, created from outside.
	m := h.client.mark()
	must(t, os.MkdirAll(abs(h, "lib/extra"), 0o755))
	write(t, h.dir, "lib/__init__.py", "")
	write(t, h.dir, "lib/extra/__init__.py", "")
	write(t, h.dir, "lib/extra/scale.py", "FACTOR = 3\n")
	h.quiesce()
	events := fileEvents(h.client.since(m))
	slices.Sort(events)
	expect(t, "file events", events, []string{"lib/__init__.py:Added", "lib/extra/__init__.py:Added", "lib/extra/scale.py:Added"})

	// main starts importing it.
	m = h.client.mark()
	write(t, h.dir, "main.py", "from helper import foo\nfrom lib.extra import scale\n\n\ndef main():\n    x = 6\n    y = foo(x, 5)\n    z = y * scale.FACTOR\n    return z\n")
	run := h.client.waitRun(t, m, id)
	expect(t, "z", run.updates.Values()["main:main/z"], "90")

	// The new directory is watched: a change in it recomputes what reads it.
	m = h.client.mark()
	savePatterns[1].save(t, h, "lib/extra/scale.py", "FACTOR = 4\n")
	run = h.client.waitRun(t, m, id)
	expect(t, "z after the change in the new directory", run.updates.Values()["main:main/z"], "120")
	expect(t, "computed", run.updates.Computed(), []string{"main:main/z", "main:main/return"})
}

func TestWatchModuleDeletedAndRestored(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, watchDebounce)

	// An imported module goes away: the context fails, naming it.
	m := h.client.mark()
	must(t, os.Remove(abs(h, "helper.py")))
	run := h.client.waitRun(t, m, id)
	if run.failed == nil || !strings.Contains(run.failed.Message, "helper") {
		t.Fatalf("after deleting helper.py the run ended %+v, want executionFailed naming helper", run.failed)
	}
	t.Logf("helper.py deleted: %s: %s", run.failed.Kind, run.failed.Message)
	expect(t, "file events", fileEvents(run.notes), []string{"helper.py:Removed"})

	// Restored (in a new version, so that values change): the context
	// runs again. main, broken by the missing import, is loaded again.
	m = h.client.mark()
	write(t, h.dir, "helper.py", "def foo(a, b):\n    c = a * b + 1\n    return c\n")
	run = h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("after restoring helper.py: %+v", run.failed)
	}
	expect(t, "z", run.updates.Values()["main:main/z"], "36")

	// The context's own module goes away, then comes back.
	m = h.client.mark()
	must(t, os.Remove(abs(h, "main.py")))
	run = h.client.waitRun(t, m, id)
	if run.failed == nil || !strings.Contains(run.failed.Message, "main") {
		t.Fatalf("after deleting main.py the run ended %+v, want executionFailed naming main", run.failed)
	}
	t.Logf("main.py deleted: %s: %s", run.failed.Kind, run.failed.Message)
	m = h.client.mark()
	write(t, h.dir, "main.py", strings.Replace(scenarioMain, "x = 6", "x = 1", 1))
	run = h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("after restoring main.py: %+v", run.failed)
	}
	expect(t, "z", run.updates.Values()["main:main/z"], "11") // foo(1, 5) + 5 with c = a * b + 1
}

func TestWatchFileEventsForEveryChange(t *testing.T) {
	t.Parallel()
	h, id, _ := watchHarness(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper,
		"data/old.csv": "a,b\n", "README.md": "# r\n"}, watchDebounce)
	m := h.client.mark()
	write(t, h.dir, "data/new.csv", "1,2\n")        // Added
	write(t, h.dir, "README.md", "# readme\n")      // Modified
	must(t, os.Remove(abs(h, "data/old.csv")))      // Removed
	write(t, h.dir, "config.json", "{}")            // Added at the root
	write(t, h.dir, "__pycache__/helper.pyc", "xx") // ignored folder
	write(t, h.dir, ".hidden/secret.py", "x = 1\n") // ignored folder
	h.quiesce()
	notes := h.client.since(m)
	events := fileEvents(notes)
	slices.Sort(events)
	expect(t, "file events", events, []string{"README.md:Modified", "config.json:Added", "data/new.csv:Added", "data/old.csv:Removed"})
	// None of them is a module: nothing recomputes.
	expect(t, "runs", runEnds(notes, id), 0)
}
