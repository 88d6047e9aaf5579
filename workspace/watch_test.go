package workspace

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testDebounce is the debounce of the tests about how changes are combined.
// It is higher than the default so that a stall of the shared, loaded test
// machine in the middle of a save pattern cannot split it in two batches;
// how changes are combined does not depend on the debounce. The tests of
// batching itself (the burst, git checkout) use the default.
const testDebounce = 300 * time.Millisecond

// batchTimeout only guards against a hang; no test depends on how fast a
// batch arrives.
const batchTimeout = 20 * time.Second

func startWatcher(t *testing.T, ws *Workspace, opts WatchOptions) *Watcher {
	t.Helper()
	w := NewWatcher(ws, opts)
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return w
}

func nextBatch(t *testing.T, w *Watcher) Batch {
	t.Helper()
	select {
	case b, ok := <-w.Batches():
		if !ok {
			t.Fatal("batches channel closed")
		}
		return b
	case <-time.After(batchTimeout):
		t.Fatal("no batch arrived")
	}
	panic("unreachable")
}

func changesString(b Batch) string {
	var parts []string
	for _, c := range b.Changes {
		parts = append(parts, c.Path+":"+string(c.Kind))
	}
	return strings.Join(parts, " ")
}

// expectChanges waits for the next batch and checks its changes and modules.
func expectChanges(t *testing.T, w *Watcher, changes string, modules ...string) Batch {
	t.Helper()
	b := nextBatch(t, w)
	if got := changesString(b); got != changes {
		t.Fatalf("batch changes = %q, want %q", got, changes)
	}
	if !slices.Equal(b.Modules, modules) && (len(b.Modules) > 0 || len(modules) > 0) {
		t.Fatalf("batch modules = %v, want %v", b.Modules, modules)
	}
	return b
}

// expectNothingBefore writes a marker file from outside and checks that the
// next batch holds only the marker: inotify delivers events in order, so
// anything reported for earlier changes would come before or with it.
func expectNothingBefore(t *testing.T, w *Watcher, root string) {
	t.Helper()
	marker := fmt.Sprintf("marker-%d.txt", time.Now().UnixNano())
	writeFiles(t, root, map[string]string{marker: "m"})
	expectChanges(t, w, marker+":Added")
}

// settle writes a marker file and consumes batches up to the one that
// reports it, so the next batch holds only changes made after this call.
func settle(t *testing.T, w *Watcher, root string) {
	t.Helper()
	marker := fmt.Sprintf("settle-%d.txt", time.Now().UnixNano())
	writeFiles(t, root, map[string]string{marker: "m"})
	for {
		for _, c := range nextBatch(t, w).Changes {
			if c.Path == marker {
				return
			}
		}
	}
}

func mustRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func TestWatchWriteInPlace(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n", "notes.txt": "n"})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	f, err := os.OpenFile(filepath.Join(root, "a.py"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("a = 2\n")
	f.Close()
	writeFiles(t, root, map[string]string{"notes.txt": "changed"})
	expectChanges(t, w, "a.py:Modified notes.txt:Modified", "a")
}

func TestWatchSafeWriteRename(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n"})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	abs := func(p string) string { return filepath.Join(root, p) }

	// JetBrains "safe write": write a temp, move the original aside, move
	// the temp in, delete the original.
	writeFiles(t, root, map[string]string{"a.py___jb_tmp___": "a = 2\n"})
	must(t, os.Rename(abs("a.py"), abs("a.py___jb_old___")))
	must(t, os.Rename(abs("a.py___jb_tmp___"), abs("a.py")))
	must(t, os.Remove(abs("a.py___jb_old___")))
	expectChanges(t, w, "a.py:Modified", "a")

	// vim (backupcopy=no): probe file 4913, rename the original to a
	// backup, write a new file, delete the backup.
	writeFiles(t, root, map[string]string{"4913": ""})
	must(t, os.Remove(abs("4913")))
	must(t, os.Rename(abs("a.py"), abs("a.py~")))
	writeFiles(t, root, map[string]string{"a.py": "a = 3\n"})
	must(t, os.Remove(abs("a.py~")))
	expectChanges(t, w, "a.py:Modified", "a")

	// Plain write-temp-then-rename over the target.
	writeFiles(t, root, map[string]string{".a.py.swp": "a = 4\n"})
	must(t, os.Rename(abs(".a.py.swp"), abs("a.py")))
	expectChanges(t, w, "a.py:Modified", "a")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatchDeleteThenCreate(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"pkg/m.py": "m = 1\n"})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	must(t, os.Remove(filepath.Join(root, "pkg/m.py")))
	writeFiles(t, root, map[string]string{"pkg/m.py": "m = 2\n"})
	expectChanges(t, w, "pkg/m.py:Modified", "pkg.m")

	// Created and deleted again within a burst: nothing happened. Nor do
	// touch and chmod change content.
	writeFiles(t, root, map[string]string{"pkg/tmp.py": "x"})
	must(t, os.Remove(filepath.Join(root, "pkg/tmp.py")))
	later := time.Now().Add(time.Hour)
	must(t, os.Chtimes(filepath.Join(root, "pkg/m.py"), later, later))
	must(t, os.Chmod(filepath.Join(root, "pkg/m.py"), 0o600))
	expectNothingBefore(t, w, root)
}

func TestWatchDeletionAndRestoration(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n", "pkg/__init__.py": "", "pkg/sub/s.py": "s = 1\n"})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	must(t, os.Remove(filepath.Join(root, "a.py")))
	expectChanges(t, w, "a.py:Removed", "a")
	writeFiles(t, root, map[string]string{"a.py": "a = 1\n"})
	expectChanges(t, w, "a.py:Added", "a")

	if got := strings.Join(w.WatchedDirs(), " "); got != ". pkg pkg/sub" {
		t.Fatalf("watched dirs = %q", got)
	}
	must(t, os.RemoveAll(filepath.Join(root, "pkg")))
	expectChanges(t, w, "pkg/__init__.py:Removed pkg/sub/s.py:Removed", "pkg", "pkg.sub.s")
	if got := strings.Join(w.WatchedDirs(), " "); got != "." {
		t.Errorf("watched dirs after removing pkg = %q", got)
	}
	writeFiles(t, root, map[string]string{"pkg/__init__.py": "", "pkg/sub/s.py": "s = 1\n"})
	expectChanges(t, w, "pkg/__init__.py:Added pkg/sub/s.py:Added", "pkg", "pkg.sub.s")
}

func TestWatchNewSubdirectoryModule(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"main.py": ""})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	// Files land in the new directories before the watcher can watch them;
	// they are found by listing the new directories.
	writeFiles(t, root, map[string]string{"pkg2/__init__.py": "", "pkg2/sub/m.py": "m = 1\n", "pkg2/data.csv": "a,b\n"})
	expectChanges(t, w, "pkg2/__init__.py:Added pkg2/data.csv:Added pkg2/sub/m.py:Added", "pkg2", "pkg2.sub.m")
	if got := strings.Join(w.WatchedDirs(), " "); got != ". pkg2 pkg2/sub" {
		t.Fatalf("watched dirs = %q", got)
	}
	// A file written while its new directory was being listed may be
	// reported once more as Modified; let that pass.
	settle(t, w, root)
	writeFiles(t, root, map[string]string{"pkg2/sub/m.py": "m = 2\n"})
	expectChanges(t, w, "pkg2/sub/m.py:Modified", "pkg2.sub.m")
}

func TestWatchRenamedDirectory(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"old/x.py": "", "old/deep/y.py": ""})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	must(t, os.Rename(filepath.Join(root, "old"), filepath.Join(root, "new")))
	expectChanges(t, w, "new/deep/y.py:Added new/x.py:Added old/deep/y.py:Removed old/x.py:Removed",
		"new.deep.y", "new.x", "old.deep.y", "old.x")
	// The moved directories keep being watched, under their new names.
	writeFiles(t, root, map[string]string{"new/deep/y.py": "y = 1\n"})
	expectChanges(t, w, "new/deep/y.py:Modified", "new.deep.y")
	if got := strings.Join(w.WatchedDirs(), " "); got != ". new new/deep" {
		t.Errorf("watched dirs = %q", got)
	}
}

func TestWatchIgnoredFolders(t *testing.T) {
	t.Parallel()
	ignored := map[string]string{
		".git/HEAD": "ref", "__pycache__/m.cpython-311.pyc": "", "pkg/__pycache__/x.pyc": "",
		"node_modules/y.js": "", "venv/lib.py": "", ".venv/lib.py": "", ".idea/ws.xml": "",
	}
	ws, root := setup(t, ignored)
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	for _, d := range w.WatchedDirs() {
		if d != "." && d != "pkg" {
			t.Errorf("ignored folder %s is watched", d)
		}
	}
	for p := range ignored {
		ignored[p] = "changed"
	}
	writeFiles(t, root, ignored)
	writeFiles(t, root, map[string]string{"pkg/.cache/new.py": "", "build/__pycache__/z.pyc": ""})
	must(t, os.Chmod(filepath.Join(root, "pkg"), 0o700)) // attribute changes are not content changes
	expectNothingBefore(t, w, root)                      // build/ has no files of its own outside __pycache__
}

func TestWatchGitCheckout(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("pkg%d/m%d.py", i%4, i)] = fmt.Sprintf("v = %d\n", i)
	}
	files["README.md"] = "readme\n"
	ws, root := setup(t, files)
	git := func(args ...string) {
		mustRun(t, root, append([]string{"git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "one")
	git("checkout", "-q", "-b", "two")
	for p, content := range files {
		files[p] = content + "w = 2\n"
	}
	writeFiles(t, root, files)
	writeFiles(t, root, map[string]string{"extra/new.py": ""})
	git("add", ".")
	git("commit", "-q", "-m", "two")

	w := startWatcher(t, ws, WatchOptions{})
	git("checkout", "-q", "main")
	b := nextBatch(t, w)
	if len(b.Changes) != 42 {
		t.Fatalf("one checkout gave %d changes in its first batch, want all 42: %s", len(b.Changes), changesString(b))
	}
	if len(b.Modules) != 41 {
		t.Errorf("modules = %v, want 41", b.Modules)
	}
	for _, c := range b.Changes {
		want := Modified
		if c.Path == "extra/new.py" {
			want = Removed
		}
		if c.Kind != want {
			t.Errorf("%s: %s, want %s", c.Path, c.Kind, want)
		}
	}
}

func TestWatchBurstIsBatched(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.py", i)] = ""
	}
	ws, root := setup(t, files)
	w := startWatcher(t, ws, WatchOptions{})
	for i := range 200 {
		p := fmt.Sprintf("f%02d.py", i%20)
		writeFiles(t, root, map[string]string{p: fmt.Sprintf("x = %d\n", i)})
	}
	seen := map[string]bool{}
	batches := 0
	for len(seen) < 20 {
		b := nextBatch(t, w)
		batches++
		for _, c := range b.Changes {
			if c.Kind != Modified {
				t.Errorf("%s: %s", c.Path, c.Kind)
			}
			seen[c.Path] = true
		}
	}
	t.Logf("200 writes to 20 files: %d batch(es)", batches)
	if batches > 2 {
		t.Errorf("200 writes to 20 files gave %d batches, want at most 2", batches)
	}
}

func TestWatchIgnoresOwnWrites(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n", "b.py": "b = 1\n", "old/x.py": "", "gone.txt": ""})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	if _, err := ws.Write("a.py", "a = 2\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Write("fresh/dir/n.py", "n = 1\n"); err != nil {
		t.Fatal(err)
	}
	_, v, err := ws.OpenBuffer("c1", "b.py")
	must(t, err)
	v2 := VersionOf("b = 2\n")
	if _, err := ws.ApplyEdit("c1", "b.py", []TextEdit{{Range{Position{0, 4}, Position{0, 5}}, "2"}}, v, v2); err != nil {
		t.Fatal(err)
	}
	must(t, ws.Save("c1", "b.py", v2))
	must(t, ws.Delete("old"))
	must(t, ws.Delete("gone.txt"))
	expectNothingBefore(t, w, root)
	if c, _, _ := ws.OpenBuffer("c1", "b.py"); c != "b = 2\n" {
		t.Errorf("buffer = %q", c)
	}

	// An outside change after a workspace write is reported.
	if _, err := ws.Write("a.py", "a = 3\n"); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"a.py": "a = 4\n"})
	expectChanges(t, w, "a.py:Modified", "a")
	// And so is recreating a file the workspace deleted.
	writeFiles(t, root, map[string]string{"gone.txt": "back"})
	expectChanges(t, w, "gone.txt:Added")
}

func TestWatchReloadsCleanBuffer(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n"})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	_, v1, err := ws.OpenBuffer("c1", "a.py")
	must(t, err)
	_, _, err = ws.OpenBuffer("c2", "a.py")
	must(t, err)
	writeFiles(t, root, map[string]string{"a.py": "a = 2\n"})
	b := expectChanges(t, w, "a.py:Modified", "a")
	if len(b.Conflicts) != 0 || len(b.Reloaded) != 1 {
		t.Fatalf("reloaded %v, conflicts %v", b.Reloaded, b.Conflicts)
	}
	r := b.Reloaded[0]
	if r.Path != "a.py" || r.OldContent != "a = 1\n" || r.NewContent != "a = 2\n" || r.OldVersion != v1 ||
		r.NewVersion != VersionOf("a = 2\n") || strings.Join(clientStrings(r.Clients), ",") != "c1,c2" {
		t.Errorf("reloaded = %+v", r)
	}
	if c, v, _ := ws.OpenBuffer("c1", "a.py"); c != "a = 2\n" || v != r.NewVersion {
		t.Errorf("buffer = %q %s", c, v)
	}
	if d, _ := ws.Dirty("a.py"); d {
		t.Errorf("reloaded buffer is dirty")
	}
}

func TestWatchDirtyBufferConflict(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n"})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	_, v1, err := ws.OpenBuffer("c1", "a.py")
	must(t, err)
	typed := "a = 1\nb = 2\n"
	if _, err := ws.ApplyEdit("c1", "a.py", insertAt(1, 0, "b = 2\n"), v1, VersionOf(typed)); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"a.py": "a = 99\n"})
	b := expectChanges(t, w, "a.py:Modified") // the module's source (the buffer) did not change
	if len(b.Reloaded) != 0 || len(b.Conflicts) != 1 || b.Conflicts[0].Path != "a.py" ||
		strings.Join(clientStrings(b.Conflicts[0].Clients), ",") != "c1" {
		t.Fatalf("reloaded %v, conflicts %v", b.Reloaded, b.Conflicts)
	}
	if c, _, _ := ws.OpenBuffer("c1", "a.py"); c != typed {
		t.Errorf("buffer = %q, the typed text must be kept", c)
	}
	if src, _ := ws.Source("a"); src != typed {
		t.Errorf("Source = %q", src)
	}
	_, err = ws.Write("a.py", "x")
	wantErr(t, err, ErrWriteDenied)

	// Removing the file under the dirty buffer is a conflict too.
	must(t, os.Remove(filepath.Join(root, "a.py")))
	b = expectChanges(t, w, "a.py:Removed", "a")
	if len(b.Conflicts) != 1 {
		t.Errorf("conflicts = %v", b.Conflicts)
	}
	// Saving the buffer writes what was typed, and is not reported back.
	must(t, ws.Save("c1", "a.py", VersionOf(typed)))
	if got := readDisk(t, root, "a.py"); got != typed {
		t.Errorf("disk = %q", got)
	}
	expectNothingBefore(t, w, root)
}

// syncBuffer is a concurrency-safe log sink for the watch-limit test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWatchLimitFallsBackToPolling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a/x.py": "x = 1\n", "b/y.py": "y = 1\n", "b/c/z.py": "z = 1\n"})
	var logs syncBuffer
	ws, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	must(t, err)
	t.Cleanup(func() { ws.Close() })

	// Only the first two directories get a watch; the rest hit the "limit".
	w := NewWatcher(ws, WatchOptions{Debounce: testDebounce, PollInterval: 20 * time.Millisecond})
	var mu sync.Mutex
	added := 0
	w.addWatch = func(dir string) error {
		mu.Lock()
		defer mu.Unlock()
		if added >= 2 {
			return fmt.Errorf("inotify_add_watch %s: %w", dir, syscall.ENOSPC)
		}
		added++
		return w.fsw.Add(dir)
	}
	must(t, w.Start(context.Background()))
	t.Cleanup(func() { must(t, w.Stop(context.Background())) })
	if got := len(w.WatchedDirs()); got != 2 {
		t.Fatalf("%d directories watched, want 2 (the rest polled)", got)
	}

	root := ws.Root()
	// Changes in watched and polled directories alike are delivered.
	writeFiles(t, root, map[string]string{"a/x.py": "x = 2\n", "b/y.py": "y = 22\n", "b/c/z.py": "z = 222\n"})
	seen := map[string]ChangeKind{}
	for len(seen) < 3 {
		for _, c := range nextBatch(t, w).Changes {
			seen[c.Path] = c.Kind
		}
	}
	for _, p := range []string{"a/x.py", "b/y.py", "b/c/z.py"} {
		if seen[p] != Modified {
			t.Errorf("%s: %q, want Modified", p, seen[p])
		}
	}
	// A new directory below a polled one is found, and polled in turn.
	writeFiles(t, root, map[string]string{"b/c/new/n.py": ""})
	expectChanges(t, w, "b/c/new/n.py:Added", "b.c.new.n")
	must(t, os.Remove(filepath.Join(root, "b/c/new/n.py")))
	expectChanges(t, w, "b/c/new/n.py:Removed", "b.c.new.n")

	out := logs.String()
	if n := strings.Count(out, "watch limit is reached"); n != 1 || !strings.Contains(out, "sysctl fs.inotify.max_user_watches=") {
		t.Errorf("the watch-limit fix is logged %d times, want once:\n%s", n, out)
	}
}

func TestWatchOverflowRescans(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a/x.py": "x = 1\n", "a/same.py": "s\n", "b.py": ""})
	w := startWatcher(t, ws, WatchOptions{Debounce: testDebounce})
	// Lose the events of directory a, as a kernel queue overflow would.
	must(t, w.fsw.Remove(filepath.Join(root, "a")))
	writeFiles(t, root, map[string]string{"a/x.py": "x = 1000\n", "a/new.py": ""})
	must(t, os.Remove(filepath.Join(root, "b.py")))
	w.pendMu.Lock()
	w.rescan = true
	w.touchLocked(time.Now())
	w.pendMu.Unlock()
	w.nudge()
	// b.py's own event may come in the same batch or the one before.
	seen := map[string]ChangeKind{}
	for len(seen) < 3 {
		for _, c := range nextBatch(t, w).Changes {
			seen[c.Path] = c.Kind
		}
	}
	want := map[string]ChangeKind{"a/x.py": Modified, "a/new.py": Added, "b.py": Removed}
	for p, k := range want {
		if seen[p] != k {
			t.Errorf("%s: %q, want %q (all: %v)", p, seen[p], k, seen)
		}
	}
	if len(seen) != 3 {
		t.Errorf("unchanged files reported: %v", seen)
	}
}

func TestWatcherLifecycle(t *testing.T) {
	t.Parallel()
	ws, _ := setup(t, map[string]string{"a.py": ""})
	never := NewWatcher(ws, WatchOptions{})
	must(t, never.Stop(context.Background()))
	must(t, never.Stop(context.Background()))
	wantErr(t, never.Start(context.Background()), ErrWatcherStarted)

	w := NewWatcher(ws, WatchOptions{})
	must(t, w.Start(context.Background()))
	wantErr(t, w.Start(context.Background()), ErrWatcherStarted)
	must(t, w.Stop(context.Background()))
	must(t, w.Stop(context.Background()))
	if _, ok := <-w.Batches(); ok {
		t.Error("batches channel open after Stop")
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	c := NewWatcher(ws, WatchOptions{})
	if err := c.Start(cancelled); err == nil {
		t.Error("Start with a cancelled context succeeded")
	}
	must(t, c.Stop(context.Background()))
}

// TestWatchWaitsForGitIndexLock checks the delivery rule directly: changes
// that have been quiet long enough still wait while git holds its index
// lock, and go one quiet period after it is released.
func TestWatchWaitsForGitIndexLock(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "a.py": ""})
	w := NewWatcher(ws, WatchOptions{})
	// At "now" the change is 2 s old and as quiet: past Debounce and
	// MaxDelay, within gitLockMaxDelay.
	quietSince := time.Now()
	now := quietSince.Add(2 * w.opts.MaxDelay)
	w.pending["a.py"] = opWrite
	w.firstAt, w.lastAt = quietSince, quietSince

	if due, _ := w.due(now); !due {
		t.Fatal("quiet changes are not due without a git lock")
	}
	writeFiles(t, root, map[string]string{".git/index.lock": ""})
	if due, wait := w.due(now); due || wait != w.opts.Debounce {
		t.Fatalf("due=%v wait=%v while git holds its index lock, want a wait of one debounce", due, wait)
	}
	must(t, os.Remove(filepath.Join(root, ".git/index.lock")))
	// The release counts as a change: git's last writes may still be on
	// their way from inotify, so the batch waits one more quiet period.
	if due, wait := w.due(now); due || wait != w.opts.Debounce {
		t.Fatalf("due=%v wait=%v right after git released its lock, want a wait of one debounce", due, wait)
	}
	if due, _ := w.due(now.Add(w.opts.Debounce)); !due {
		t.Fatal("changes not due one debounce after git released its lock")
	}
	// A stale lock does not hold changes forever.
	writeFiles(t, root, map[string]string{".git/index.lock": ""})
	if due, _ := w.due(quietSince.Add(gitLockMaxDelay)); !due {
		t.Fatal("a stale git lock holds changes beyond gitLockMaxDelay")
	}
	must(t, w.Stop(context.Background()))
}

// TestWatchConcurrentWritersStress runs outside writes, workspace writes and
// client edits with saves at the same time as the watcher: only the outside
// writes may ever be reported, and the disk ends as the last save left it.
func TestWatchConcurrentWritersStress(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"outside.py": "", "saved.py": "", "written.py": ""})
	w := startWatcher(t, ws, WatchOptions{Debounce: 5 * time.Millisecond})
	reported := map[string]bool{} // written by the collector until consumed is closed
	markerSeen := make(chan struct{})
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for b := range w.Batches() {
			for _, c := range b.Changes {
				if strings.HasPrefix(c.Path, "marker-") && !reported[c.Path] {
					close(markerSeen)
				}
				reported[c.Path] = true
			}
		}
	}()

	const rounds = 100
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := range rounds {
			writeFiles(t, root, map[string]string{"outside.py": fmt.Sprintf("o = %d\n", i)})
		}
	}()
	go func() {
		defer wg.Done()
		for i := range rounds {
			if _, err := ws.Write("written.py", fmt.Sprintf("w = %d\n", i)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var lastSaved string
	go func() {
		defer wg.Done()
		content, v, err := ws.OpenBuffer("c1", "saved.py")
		if err != nil {
			t.Error(err)
			return
		}
		for i := range rounds {
			next := content + fmt.Sprintf("s%d = 1\n", i)
			if _, err := ws.ApplyEdit("c1", "saved.py", []TextEdit{{Range{EndPosition(content), EndPosition(content)}, next[len(content):]}}, v, VersionOf(next)); err != nil {
				t.Error(err)
				return
			}
			content, v = next, VersionOf(next)
			if i%3 == 0 {
				if err := ws.Save("c1", "saved.py", v); err != nil {
					t.Error(err)
					return
				}
				lastSaved = content
			}
		}
	}()
	wg.Wait()
	// Everything before the marker has been evaluated once it is reported.
	writeFiles(t, root, map[string]string{"marker-stress.txt": "m"})
	select {
	case <-markerSeen:
	case <-time.After(batchTimeout):
		t.Fatal("marker never reported")
	}
	must(t, w.Stop(context.Background()))
	<-consumed

	if got := readDisk(t, root, "saved.py"); got != lastSaved {
		t.Errorf("saved.py on disk = %q, want the last saved content %q", got, lastSaved)
	}
	for p := range reported {
		if p != "outside.py" && !strings.HasPrefix(p, "marker-") {
			t.Errorf("%s reported, but only the workspace wrote it", p)
		}
	}
	if !reported["outside.py"] {
		t.Errorf("outside writes never reported")
	}
}
