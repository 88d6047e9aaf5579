package workspace

import (
	"errors"
	"strings"
	"testing"
)

func TestBufferStateAndRestore(t *testing.T) {
	ws, _ := setup(t, map[string]string{"m.py": "x = 1\n", "gone.py": "y = 1\n"})
	if _, _, err := ws.OpenBuffer("a", "m.py"); err != nil {
		t.Fatal(err)
	}
	st, err := ws.BufferState("m.py")
	if err != nil || !st.Open || st.Dirty || st.Path != "m.py" {
		t.Fatalf("clean open buffer: %+v %v", st, err)
	}
	edited := "x = 2\n"
	if _, err := ws.ApplyEdit("a", "m.py", []TextEdit{{Range: Range{Start: Position{0, 4}, End: Position{0, 5}}, Text: "2"}}, VersionOf("x = 1\n"), VersionOf(edited)); err != nil {
		t.Fatal(err)
	}
	st, _ = ws.BufferState("m.py")
	if !st.Dirty || st.Content != edited || st.Version != VersionOf(edited) || len(st.Clients) != 1 || st.Clients[0] != "a" {
		t.Fatalf("edited buffer: %+v", st)
	}
	if _, err := ws.RestoreBuffer(st); !errors.Is(err, ErrFileExists) {
		t.Fatalf("restore over an open buffer: %v, want ErrFileExists", err)
	}
	ws.CloseClient("a")
	if st2, _ := ws.BufferState("m.py"); st2.Open || st2.Path != "m.py" {
		t.Fatalf("closed buffer: %+v", st2)
	}

	// Restored as it was: unsaved content, its clients, dirty.
	ok, err := ws.RestoreBuffer(st)
	if err != nil || !ok {
		t.Fatalf("restore: %v %v", ok, err)
	}
	got, _ := ws.BufferState("m.py")
	if !got.Dirty || got.Content != edited || got.Clients[0] != "a" {
		t.Fatalf("restored: %+v", got)
	}
	if disk, _ := ws.Read("m.py"); disk != "x = 1\n" {
		t.Fatalf("restore wrote the user's file: %q", disk)
	}
	content, v, err := ws.OpenBuffer("a", "m.py")
	if err != nil || content != edited || v != VersionOf(edited) {
		t.Fatalf("reopen after restore: %q %s %v", content, v, err)
	}

	// Already saved: nothing to restore.
	ws.CloseClient("a")
	if ok, err := ws.RestoreBuffer(BufferState{Path: "gone.py", Content: "y = 1\n", Version: VersionOf("y = 1\n")}); ok || err != nil {
		t.Fatalf("restore of saved content: %v %v, want nothing restored", ok, err)
	}
	// A version that is not its content's, a path outside the root.
	bad := BufferState{Path: "gone.py", Content: "y = 2\n", Version: VersionOf("y = 3\n")}
	if _, err := ws.RestoreBuffer(bad); !errors.Is(err, ErrInvalidVersion) || !strings.Contains(err.Error(), "gone.py") {
		t.Fatalf("bad version: %v", err)
	}
	out := BufferState{Path: "../x.py", Content: "", Version: VersionOf("")}
	if _, err := ws.RestoreBuffer(out); !errors.Is(err, ErrPathOutsideRoot) {
		t.Fatalf("outside the root: %v", err)
	}
}
