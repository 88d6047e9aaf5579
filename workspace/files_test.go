package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadErrors(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"ok.py": "print('hé')\n", "dir/x.py": ""})
	if err := os.WriteFile(filepath.Join(root, "latin1.py"), []byte("x = 1\ns = '\xe9t\xe9'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ws.Read("ok.py")
	wantErr(t, err, nil)
	if got != "print('hé')\n" {
		t.Errorf("Read = %q", got)
	}
	_, err = ws.Read("missing.py")
	wantErr(t, err, ErrFileNotFound)
	_, err = ws.Read("dir")
	wantErr(t, err, ErrNotFile)
	_, err = ws.Read("ok.py/x")
	wantErr(t, err, ErrNotDirectory)
	must(t, syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644))
	_, err = ws.Read("pipe") // must not block
	wantErr(t, err, ErrNotFile)
	_, _, err = ws.OpenBuffer("c", "pipe")
	wantErr(t, err, ErrNotFile)
	_, err = ws.Write("pipe", "x")
	wantErr(t, err, ErrNotFile)
	_, err = ws.Read("latin1.py")
	wantErr(t, err, ErrCannotDecode)
	if msg := err.Error(); !strings.Contains(msg, "latin1.py") || !strings.Contains(msg, "line 2, column 6") || !strings.Contains(msg, "0xe9") {
		t.Errorf("decode error %q should name the file, the line and column, and the byte", msg)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a\n", "file.txt": "f"})
	_, err := ws.Write("deep/er/new.py", "n = 1\n")
	wantErr(t, err, nil)
	if got := readDisk(t, root, "deep/er/new.py"); got != "n = 1\n" {
		t.Errorf("new file = %q", got)
	}
	_, err = ws.Write("file.txt/child.py", "x")
	wantErr(t, err, ErrNotDirectory)
	_, err = ws.Write("deep", "x")
	wantErr(t, err, ErrNotFile)
	_, err = ws.Write("", "x")
	wantErr(t, err, ErrNotFile)
	if tmps := tempFiles(t, root); len(tmps) != 0 {
		t.Errorf("temp files left: %v", tmps)
	}
	if got := readDisk(t, root, "file.txt"); got != "f" {
		t.Errorf("file.txt clobbered: %q", got)
	}
}

func TestWriteAndOpenBuffers(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "a = 1\n"})
	_, v, err := ws.OpenBuffer("c1", "a.py")
	wantErr(t, err, nil)
	if _, _, err := ws.OpenBuffer("c2", "a.py"); err != nil {
		t.Fatal(err)
	}

	// A clean buffer follows a write and the update names its clients.
	u, err := ws.Write("a.py", "a = 2\n")
	wantErr(t, err, nil)
	if u == nil || u.OldContent != "a = 1\n" || u.NewContent != "a = 2\n" || u.OldVersion != v ||
		u.NewVersion != VersionOf("a = 2\n") || strings.Join(clientStrings(u.Clients), ",") != "c1,c2" {
		t.Fatalf("update = %+v", u)
	}
	if e := u.Edit(); e.Range.End != (Position{1, 0}) || e.Text != "a = 2\n" {
		t.Errorf("update edit = %+v", e)
	}
	content, v2, _ := ws.OpenBuffer("c1", "a.py")
	if content != "a = 2\n" || v2 != u.NewVersion {
		t.Errorf("buffer = %q %s after write", content, v2)
	}

	// With unsaved edits, writes are refused and nothing changes.
	edit := []TextEdit{{Range: Range{Position{0, 4}, Position{0, 5}}, Text: "3"}}
	if _, err := ws.ApplyEdit("c1", "a.py", edit, v2, VersionOf("a = 3\n")); err != nil {
		t.Fatal(err)
	}
	_, err = ws.Write("a.py", "a = 4\n")
	wantErr(t, err, ErrWriteDenied)
	if got := readDisk(t, root, "a.py"); got != "a = 2\n" {
		t.Errorf("disk = %q after a denied write", got)
	}
	wantErr(t, ws.Delete("a.py"), ErrWriteDenied)
	wantErr(t, ws.Delete("."), ErrWriteDenied)
	if content, _, _ := ws.OpenBuffer("c2", "a.py"); content != "a = 3\n" {
		t.Errorf("buffer = %q after a denied write", content)
	}
}

func clientStrings(cs []ClientID) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

func TestList(t *testing.T) {
	t.Parallel()
	ws, _ := setup(t, map[string]string{
		"b.py": "", "a.py": "", "pkg/__init__.py": "", "pkg/z.py": "", ".hidden/x": "", "Zed.txt": "",
	})
	entries, err := ws.List("")
	wantErr(t, err, nil)
	var got []string
	for _, e := range entries {
		got = append(got, e.Path+":"+string(e.Kind))
	}
	want := ".hidden:directory Zed.txt:file a.py:file b.py:file pkg:directory"
	if strings.Join(got, " ") != want {
		t.Errorf("List(\"\") = %v, want %s", got, want)
	}
	entries, err = ws.List("pkg/")
	wantErr(t, err, nil)
	if len(entries) != 2 || entries[0].Path != "pkg/__init__.py" || entries[1].Path != "pkg/z.py" {
		t.Errorf("List(pkg/) = %v", entries)
	}
	_, err = ws.List("a.py")
	wantErr(t, err, ErrNotDirectory)
	_, err = ws.List("nope")
	wantErr(t, err, ErrFileNotFound)
}

func TestDelete(t *testing.T) {
	t.Parallel()
	ws, root := setup(t, map[string]string{"a.py": "", "pkg/x.py": "", "pkg/sub/y.py": "", "keep.py": "k"})
	wantErr(t, ws.Delete("a.py"), nil)
	wantErr(t, ws.Delete("a.py"), ErrFileNotFound)
	if _, _, err := ws.OpenBuffer("c1", "pkg/x.py"); err != nil { // clean buffer: no obstacle
		t.Fatal(err)
	}
	wantErr(t, ws.Delete("pkg"), nil)
	if _, err := os.Stat(filepath.Join(root, "pkg")); !os.IsNotExist(err) {
		t.Errorf("pkg still there: %v", err)
	}
	// The buffer of a deleted file stays, and now differs from the disk.
	dirty, err := ws.Dirty("pkg/x.py")
	wantErr(t, err, nil)
	if !dirty {
		t.Errorf("buffer of a deleted file should count as dirty")
	}
	wantErr(t, ws.Delete("keep.py/x"), ErrNotDirectory)
	if got := readDisk(t, root, "keep.py"); got != "k" {
		t.Errorf("keep.py = %q", got)
	}
}

func TestExistsAndFilesAt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Write("pkg/a.py", "a = 1\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Write("pkg/sub/b.py", "b = 1\n"); err != nil {
		t.Fatal(err)
	}
	if !ws.Exists("pkg/a.py") || !ws.Exists("pkg") || ws.Exists("pkg/none.py") || ws.Exists("../etc/passwd") {
		t.Error("Exists answers wrongly")
	}
	files, err := ws.FilesAt("pkg")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, ",") != "pkg/a.py,pkg/sub/b.py" {
		t.Errorf("FilesAt(pkg) = %v", files)
	}
	if _, err := ws.FilesAt("missing"); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("FilesAt(missing) err = %v, want ErrFileNotFound", err)
	}
}
