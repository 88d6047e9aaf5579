package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Names no file system takes get ErrInvalidPath naming the fault, from
// every operation, before touching the disk.
func TestInvalidPaths(t *testing.T) {
	ws, dir := setup(t, map[string]string{"a.py": "x = 1\n"})
	long := strings.Repeat("n", 300) + ".py"
	for _, p := range []string{"a\x00b.py", "pkg/\x00", long, "pkg/" + long, long + "/a.py"} {
		_, err := ws.Read(p)
		wantErr(t, err, ErrInvalidPath)
		_, err = ws.Write(p, "y = 2\n")
		wantErr(t, err, ErrInvalidPath)
		wantErr(t, ws.Delete(p), ErrInvalidPath)
		_, err = ws.List(p)
		wantErr(t, err, ErrInvalidPath)
		_, _, err = ws.OpenBuffer("c1", p)
		wantErr(t, err, ErrInvalidPath)
		if strings.Contains(p, "\x00") {
			if !strings.Contains(err.Error(), "NUL byte") || strings.Contains(err.Error(), "\x00") {
				t.Errorf("%q: message %q does not name the NUL byte (escaped)", p, err)
			}
		} else if !strings.Contains(err.Error(), "303 bytes long") {
			t.Errorf("%q: message %q does not say how long the name is", p, err)
		}
	}
	if got := readDisk(t, dir, "a.py"); got != "x = 1\n" {
		t.Errorf("a.py changed: %q", got)
	}
	// A name of exactly 255 bytes is fine.
	ok := strings.Repeat("m", 252) + ".py"
	if _, err := ws.Write(ok, "z = 3\n"); err != nil {
		t.Errorf("255-byte name: %v", err)
	}
}

// file/delete of a symlink leading outside the root is refused like every
// other outward path, the link and its target left alone; a link inside
// the root is deleted (the link, not its target).
func TestDeleteSymlinkOutsideRoot(t *testing.T) {
	outside := t.TempDir()
	target := filepath.Join(outside, "secret.py")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, dir := setup(t, map[string]string{"in.py": "x = 1\n"})
	for name, to := range map[string]string{
		"out.py":      target,
		"outdir":      outside,
		"dangling.py": filepath.Join(outside, "missing.py"),
		"up.py":       "../" + filepath.Base(outside) + "/secret.py",
	} {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		wantErr(t, ws.Delete(name), ErrPathOutsideRoot)
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: the link is gone: %v", name, err)
		}
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "keep\n" {
		t.Errorf("the target outside changed: %q, %v", got, err)
	}
	if err := os.Symlink("in.py", filepath.Join(dir, "alias.py")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, ws.Delete("alias.py"), nil)
	if _, err := os.Lstat(filepath.Join(dir, "alias.py")); !os.IsNotExist(err) {
		t.Errorf("alias.py still there: %v", err)
	}
	if got := readDisk(t, dir, "in.py"); got != "x = 1\n" {
		t.Errorf("in.py changed: %q", got)
	}
}

// Open removes the temp files of saves a crash interrupted, but never one
// a live save holds (its lock), nor a file that only looks similar.
func TestOpenRemovesStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	stale := []string{".a.py.ripple-0123456789ab.tmp", "pkg/.b.py.ripple-ba9876543210.tmp"}
	keep := []string{".a.py.ripple-xyz.tmp", "notes.ripple-0123456789ab.tmp", ".git/.c.ripple-0123456789ab.tmp", "a.py"}
	files := map[string]string{}
	for _, p := range append(append([]string{}, stale...), keep...) {
		files[p] = "partial"
	}
	live := "pkg/.c.py.ripple-aaaaaaaaaaaa.tmp"
	files[live] = "in flight"
	writeFiles(t, dir, files)
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(live)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	for _, p := range stale {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); !os.IsNotExist(err) {
			t.Errorf("%s: not removed (%v)", p, err)
		}
	}
	for _, p := range append(keep, live) {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Errorf("%s: removed (%v)", p, err)
		}
	}
	f.Close() // the save "died": its lock with it
	ws, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(live))); !os.IsNotExist(err) {
		t.Errorf("%s: not removed once unlocked (%v)", live, err)
	}
}
