package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confinedProject builds a project with symlinks that stay inside and
// symlinks that lead out, next to an outside directory with a secret.
func confinedProject(t *testing.T) (ws *Workspace, root, outside string) {
	t.Helper()
	outside = t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.txt": "secret\n"})
	ws, root = setup(t, map[string]string{"sub/a.py": "x = 1\n"})
	links := map[string]string{
		"outlink":  outside,                               // absolute, to a directory outside
		"outfile":  filepath.Join(outside, "secret.txt"),  // absolute, to a file outside
		"dangling": filepath.Join(outside, "newfile.txt"), // absolute, to a file that does not exist
		"up":       "..",                                  // relative, above the root
		"sub/deep": "../..",                               // relative, above the root from below
		"inlink":   "sub",                                 // relative, inside
		"absin":    filepath.Join(root, "sub"),            // absolute, inside
		"loop1":    "loop2",                               // a loop
		"loop2":    "loop1",                               //
		"chain":    "inlink",                              // a chain of links, inside
		"sub/back": "../outlink",                          // a chain that ends outside
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return ws, root, outside
}

func TestConfinementRefusesEscapes(t *testing.T) {
	t.Parallel()
	ws, _, outside := confinedProject(t)
	escapes := []string{
		"../../etc/passwd",
		"/etc/passwd",
		"..",
		"sub/../../x",
		"outlink/secret.txt",
		"outlink",
		"outfile",
		"dangling",
		"up/x",
		"outlink/new/dir/file.py", // does not exist: judged by its parent chain
		"sub/deep/etc",
		"sub/back/secret.txt",
		"sub/back/new.py",
	}
	for _, p := range escapes {
		t.Run(strings.ReplaceAll(p, "/", "|"), func(t *testing.T) {
			_, err := ws.Read(p)
			wantErr(t, err, ErrPathOutsideRoot)
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the path %q", err, p)
			}
			_, err = ws.Write(p, "pwned\n")
			wantErr(t, err, ErrPathOutsideRoot)
			_, err = ws.List(p)
			wantErr(t, err, ErrPathOutsideRoot)
			_, _, err = ws.OpenBuffer("c1", p)
			wantErr(t, err, ErrPathOutsideRoot)
		})
	}
	// Delete removes a symlink itself (it is inside the root), so only
	// paths whose parent chain escapes are refused.
	for _, p := range []string{"../../etc/passwd", "/etc/passwd", "..", "outlink/secret.txt", "up/x", "sub/back/secret.txt"} {
		wantErr(t, ws.Delete(p), ErrPathOutsideRoot)
	}

	if got := readDisk(t, outside, "secret.txt"); got != "secret\n" {
		t.Errorf("outside secret changed to %q", got)
	}
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("outside dir has %d entries, want only secret.txt: %v", len(entries), entries)
	}
}

func TestConfinementAllowsInsideLinks(t *testing.T) {
	t.Parallel()
	ws, root, outside := confinedProject(t)
	for _, p := range []string{"inlink/a.py", "absin/a.py", "chain/a.py", "sub/../sub/a.py", "./sub/a.py"} {
		got, err := ws.Read(p)
		wantErr(t, err, nil)
		if got != "x = 1\n" {
			t.Errorf("Read(%s) = %q", p, got)
		}
	}
	// A write through a link replaces the target and keeps the link.
	if _, err := ws.Write("inlink/a.py", "x = 2\n"); err != nil {
		t.Fatal(err)
	}
	if got := readDisk(t, root, "sub/a.py"); got != "x = 2\n" {
		t.Errorf("sub/a.py = %q after a write through inlink", got)
	}
	if fi, err := os.Lstat(filepath.Join(root, "inlink")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("inlink is no longer a symlink: %v %v", fi, err)
	}
	// A loop is an error, not a hang and not an escape.
	_, err := ws.Read("loop1")
	wantErr(t, err, ErrFileNotFound)
	if errors.Is(err, ErrPathOutsideRoot) {
		t.Errorf("loop reported as escape: %v", err)
	}
	// Deleting a link that points out is refused like any outward path;
	// the link and the target stay.
	wantErr(t, ws.Delete("outfile"), ErrPathOutsideRoot)
	if _, err := os.Lstat(filepath.Join(root, "outfile")); err != nil {
		t.Errorf("outfile is gone: %v", err)
	}
	if got := readDisk(t, outside, "secret.txt"); got != "secret\n" {
		t.Errorf("outside secret changed to %q", got)
	}
	// The listing leaves out links that lead out or nowhere.
	entries, err := ws.List("")
	wantErr(t, err, nil)
	var names []string
	for _, e := range entries {
		names = append(names, e.Path+":"+string(e.Kind))
	}
	got := strings.Join(names, " ")
	if got != "absin:directory chain:directory inlink:directory sub:directory" {
		t.Errorf("List(\"\") = %s", got)
	}
}

func TestOpenRejectsBadRoots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"f.txt": "x"})
	_, err := Open(filepath.Join(dir, "missing"), Options{})
	wantErr(t, err, ErrFileNotFound)
	_, err = Open(filepath.Join(dir, "f.txt"), Options{})
	wantErr(t, err, ErrNotDirectory)
}
