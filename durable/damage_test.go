package durable

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
)

// An empty state.db was taken as a new log without a word: now it is moved
// aside, with a warning and a damage report naming it.
func TestOpenMovesEmptyLogAside(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var reported []string
	l, aside, err := Open(dir, Options{OnDamage: func(file, movedTo, detail string) {
		reported = append(reported, file+" -> "+movedTo+": "+detail)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if aside == "" || !strings.Contains(aside, ".empty-") {
		t.Fatalf("moved aside to %q, want a state.db.empty-TIME", aside)
	}
	if fi, err := os.Stat(aside); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty file is not kept at %s: %v", aside, err)
	}
	if len(reported) != 1 || !strings.Contains(reported[0], "empty (0 bytes)") {
		t.Fatalf("damage reported %q, want one report of the empty file", reported)
	}
	if err := l.Append(context.Background(), Event{Kind: "k", Key: "a", Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
}

// A log on a full disk fails its writes; Failing says so, Probe fails
// while the disk is full and succeeds once there is room again, and the
// state is what was committed before.
func TestProbeAndFailingOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	testenv.MountTmpfs(t, dir, 512<<10)
	l := openT(t, dir, Options{})
	ctx := context.Background()
	if err := l.Probe(); err != nil {
		t.Fatalf("probe on an empty tmpfs: %v", err)
	}
	if err := l.Append(ctx, Event{Kind: "buffer", Key: "a", Data: []byte("acknowledged")}); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(dir, "fill")
	fillDisk(t, fill)
	// Writes that need new pages fail now; bbolt may still reuse freed
	// pages for a while, so write until one fails.
	var failed error
	big := []byte(strings.Repeat("x", 64<<10))
	for i := 0; i < 64 && failed == nil; i++ {
		failed = l.Append(ctx, Event{Kind: "buffer", Key: "b", Data: big})
	}
	if !errors.Is(failed, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ENOSPC", failed)
	}
	if err := l.Failing(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Failing() = %v, want ENOSPC", err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := l.Probe(); err != nil {
		t.Fatalf("probe once there is room: %v", err)
	}
	if err := l.Failing(); err != nil {
		t.Fatalf("Failing() after a good probe = %v", err)
	}
	st, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := st.Get("buffer", "a"); string(d) != "acknowledged" {
		t.Fatalf("buffer a = %q after the failed writes", d)
	}
}

// fillDisk writes p until the file system is full.
func fillDisk(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// A garbage values.db-wal was dropped by SQLite without a word: it is
// moved aside (with its index) and named; a real WAL is left alone.
func TestCheckValuesWAL(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.NeedOrSkip(t, "python3 (its sqlite3 module writes a real WAL): %v", err)
	}
	dir := t.TempDir()
	script := `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("pragma journal_mode=wal"); c.execute("pragma wal_autocheckpoint=0")
c.execute("create table t(x)"); c.execute("insert into t values (1)"); c.commit()
import shutil; shutil.copy(sys.argv[1] + "-wal", sys.argv[1] + ".good-wal")
`
	db := filepath.Join(dir, ValuesFileName)
	if out, err := exec.Command(py, "-c", script, db).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	good, err := os.ReadFile(db + ".good-wal")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		content []byte
		aside   bool
	}{
		{"real", good, false},
		{"empty", nil, false},
		{"garbage", []byte(strings.Repeat("garbage!", 600)), true},
		{"short", good[:20], true},
		{"bad checksum", append(append([]byte{}, good[:27]...), append([]byte{good[27] ^ 1}, good[28:]...)...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wal := db + "-wal"
			if err := os.WriteFile(wal, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			aside, err := CheckValuesWAL(dir)
			if !tc.aside {
				if aside != "" || err != nil {
					t.Fatalf("CheckValuesWAL = %q, %v; want it left alone", aside, err)
				}
				return
			}
			if !errors.Is(err, ErrDamagedWAL) || aside == "" || !strings.Contains(err.Error(), aside) {
				t.Fatalf("CheckValuesWAL = %q, %v; want it moved aside and named", aside, err)
			}
			if data, rerr := os.ReadFile(aside); rerr != nil || string(data) != string(tc.content) {
				t.Fatalf("the damaged WAL is not kept as it was at %s: %v", aside, rerr)
			}
			if _, err := os.Stat(wal); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s is still there: %v", wal, err)
			}
		})
	}
}

// A log on a read-only file system is opened read-only: its state comes
// back, and every write fails naming the cause, so changes are refused
// rather than accepted and lost.
func TestOpenReadOnlyFileSystem(t *testing.T) {
	dir := t.TempDir()
	testenv.MountTmpfs(t, dir, 1<<20)
	l, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), Event{Kind: "buffer", Key: "a", Data: []byte("kept")}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	testenv.RemountTmpfs(t, dir, true)
	t.Cleanup(func() { testenv.RemountTmpfs(t, dir, false) })
	l, aside, err := Open(dir, Options{})
	if err != nil || aside != "" {
		t.Fatalf("Open on a read-only file system: %v (moved aside %q)", err, aside)
	}
	defer l.Close()
	st, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := st.Get("buffer", "a"); string(d) != "kept" {
		t.Fatalf("buffer a = %q, want the recorded state", d)
	}
	if err := l.Failing(); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Failing() = %v, want EROFS", err)
	}
	if err := l.Append(context.Background(), Event{Kind: "buffer", Key: "a", Data: []byte("new")}); !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Append = %v, want an EROFS error saying read-only", err)
	}
	if err := l.Probe(); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Probe = %v, want EROFS", err)
	}
}
