package durable

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
)

// A log found read-only (a real tmpfs remounted read-only) refuses appends
// through Late; once the tmpfs is writable again, Probe opens it for
// writing, appends wait for Seed, and Seed replaces what the file held.
func TestLateOpensOnceWritableAndSeeds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.MountTmpfs(t, dir, 4<<20)
	ctx := context.Background()
	l := openT(t, dir, Options{})
	for _, ev := range []Event{{Kind: "k", Key: "a", Data: []byte("1")}, {Kind: "k", Key: "b", Data: []byte("2")}} {
		if err := l.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	testenv.RemountTmpfs(t, dir, true)

	ro, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ro.ReadOnly() == nil {
		t.Fatal("a log on a read-only tmpfs was opened for writing")
	}
	late := NewLate(dir, Options{}, ro, ro.ReadOnly())
	defer late.Close()
	if err := late.Probe(); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Probe on a read-only tmpfs: %v, want the read-only file system named", err)
	}
	if err := late.Append(ctx, Event{Kind: "k", Key: "c", Data: []byte("3")}); err == nil {
		t.Fatal("Append on a read-only tmpfs succeeded")
	}
	if late.Unseeded() {
		t.Fatal("Unseeded while the log cannot be opened for writing")
	}

	testenv.RemountTmpfs(t, dir, false)
	if err := late.Probe(); err != nil {
		t.Fatalf("Probe once writable: %v", err)
	}
	if !late.Unseeded() || late.Failing() == nil {
		t.Fatalf("after the open: Unseeded %v, Failing %v; want true and an error until Seed", late.Unseeded(), late.Failing())
	}
	if err := late.Append(ctx, Event{Kind: "k", Key: "c", Data: []byte("3")}); !errors.Is(err, errUnseeded) {
		t.Fatalf("Append before Seed: %v, want errUnseeded", err)
	}
	if err := late.Seed([]Event{{Kind: "k", Key: "a", Data: []byte("1")}, {Kind: "ctx", Key: "x", Data: []byte("s")}}); err != nil {
		t.Fatal(err)
	}
	if late.Unseeded() || late.Failing() != nil {
		t.Fatalf("after Seed: Unseeded %v, Failing %v", late.Unseeded(), late.Failing())
	}
	if err := late.Append(ctx, Event{Kind: "k", Key: "d", Data: []byte("4")}); err != nil {
		t.Fatalf("Append after Seed: %v", err)
	}
	if err := late.Close(); err != nil {
		t.Fatal(err)
	}
	if err := late.Append(ctx, Event{Kind: "k", Key: "e", Data: []byte("5")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}

	got, err := openT(t, dir, Options{}).Load()
	if err != nil {
		t.Fatal(err)
	}
	want := State{"k": {"a": []byte("1"), "d": []byte("4")}, "ctx": {"x": []byte("s")}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("log after Seed and an append: %q, want %q (b replaced by the seed)", got, want)
	}
}

// A state directory that cannot be created yet (its parent is missing
// here) is created by the first Probe that can.
func TestLateCreatesTheDirectory(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "project")
	dir := filepath.Join(parent, ".ripple")
	late := NewLate(dir, Options{}, nil, errors.New("the project directory is missing"))
	defer late.Close()
	if err := late.Probe(); err == nil || late.Unseeded() {
		t.Fatalf("Probe without the project directory: %v, want an error", err)
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := late.Probe(); err != nil {
		t.Fatalf("Probe once the project exists: %v", err)
	}
	if err := late.Seed(nil); err != nil {
		t.Fatal(err)
	}
	if err := late.Append(context.Background(), Event{Kind: "k", Key: "a", Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
}

// A full disk at the very first start: the open at start and each
// Probe's fail, without leaving an empty state.db that the next open would move aside as a lost
// log; once there is room, the log is created.
func TestLateOnAFullDiskLeavesNoEmptyLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.MountTmpfs(t, dir, 64<<10)
	fill := filepath.Join(dir, "fill")
	f, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	_, _, cause := Open(dir, Options{})
	if cause == nil {
		t.Fatal("a log was created on a full disk")
	}
	if _, err := os.Lstat(filepath.Join(dir, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed open at start left %s: %v", FileName, err)
	}
	damage := 0
	late := NewLate(dir, Options{OnDamage: func(string, string, string) { damage++ }}, nil, cause)
	defer late.Close()
	for range 3 {
		if err := late.Probe(); err == nil {
			t.Fatal("Probe on a full disk succeeded")
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, FileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed open left %s: %v", FileName, err)
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := late.Probe(); err != nil {
		t.Fatalf("Probe with room again: %v", err)
	}
	if damage != 0 {
		t.Fatalf("%d files reported damaged", damage)
	}
}
