package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Unsaved buffers are kept under .ripple/recovery and offered back while
// they differ from the disk; the user's files are never touched.
func TestKeepUnsavedAndRecover(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clean.py"), []byte("y = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, v, err := ws.OpenBuffer("c", "main.py")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.OpenBuffer("c", "clean.py"); err != nil {
		t.Fatal(err)
	}
	edited := "x = 2\n"
	if _, err := ws.ApplyEdit("c", "main.py", []TextEdit{{Range: Range{End: Position{Line: 1}}, Text: edited}}, v, VersionOf(edited)); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 25, 7, 0, 0, 0, time.UTC)
	kept, err := ws.KeepUnsaved(at)
	if err != nil || len(kept) != 1 || kept[0] != "main.py" {
		t.Fatalf("KeepUnsaved = %q, %v; want main.py only", kept, err)
	}
	if disk, _ := os.ReadFile(filepath.Join(dir, "main.py")); string(disk) != "x = 1\n" {
		t.Fatalf("the user's file was changed: %q", disk)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ".ripple", "recovery"))
	if len(entries) != 1 || entries[0].Name() != "main.py.json" {
		t.Fatalf("recovery dir holds %v, want main.py.json alone (no temp files)", entries)
	}

	// A later workspace (a restarted server) offers it back.
	ws2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	r, err := ws2.Recovery("main.py")
	if err != nil || r == nil {
		t.Fatalf("Recovery = %+v, %v", r, err)
	}
	if r.Content != edited || r.Version != VersionOf(edited) || !r.SavedAt.Equal(at) || r.Path != ".ripple/recovery/main.py.json" {
		t.Errorf("recovered %+v", r)
	}
	if r, err := ws2.Recovery("clean.py"); r != nil || err != nil {
		t.Errorf("a file without unsaved edits: %+v, %v", r, err)
	}
	// Once the disk has that content there is nothing to offer.
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := ws2.Recovery("main.py"); r != nil || err != nil {
		t.Errorf("recovered content equal to the disk's still offered: %+v, %v", r, err)
	}
	// A damaged recovery file is an error naming it.
	os.WriteFile(filepath.Join(dir, ".ripple", "recovery", "main.py.json"), []byte("{not json"), 0o644)
	if _, err := ws2.Recovery("main.py"); !errors.Is(err, ErrCannotDecode) || !strings.Contains(err.Error(), "main.py.json") {
		t.Errorf("damaged recovery file: %v", err)
	}
}
