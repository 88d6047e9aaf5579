package durable

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	bolt "go.etcd.io/bbolt"
)

const killChildEnv = "RIPPLE_DURABLE_KILL_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		runKillChild(dir) // never returns
	}
	leakcheck.Main(m)
}

func openT(t *testing.T, dir string, opt Options) *Log {
	t.Helper()
	l, aside, err := Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	if aside != "" {
		t.Fatalf("moved aside %s on a clean open", aside)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAppendLoadAndReopen(t *testing.T) {
	dir := t.TempDir()
	l := openT(t, dir, Options{CompactEvery: 7})
	ctx := context.Background()
	want := State{}
	// 100 events over 10 keys, some deleted: compaction runs many times.
	for i := range 100 {
		ev := Event{Kind: "buffer", Key: fmt.Sprint("k", i%10), Data: []byte(fmt.Sprint("v", i))}
		if i%13 == 0 {
			ev.Data = nil
		}
		if err := l.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
		want.apply(ev)
	}
	got, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("state\n got %v\nwant %v", got, want)
	}
	if tail, _ := l.Stats(); tail > 7 {
		t.Fatalf("tail %d events after compaction every 7", tail)
	}
	l.Close()
	if err := l.Append(ctx, Event{Kind: "x", Key: "y", Data: []byte("z")}); err != ErrClosed {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	l2 := openT(t, dir, Options{})
	got, err = l2.Load()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after reopen\n got %v\nwant %v", got, want)
	}
}

// TestGroupCommitConcurrent appends from many goroutines at once: every
// event lands, each key's last value is its goroutine's last append.
func TestGroupCommitConcurrent(t *testing.T) {
	l := openT(t, t.TempDir(), Options{CompactEvery: 50})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 40 {
				if err := l.Append(context.Background(), Event{Kind: "k", Key: fmt.Sprint(g), Data: []byte(strconv.Itoa(i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	st, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	for g := range 16 {
		if d, _ := st.Get("k", fmt.Sprint(g)); string(d) != "39" {
			t.Errorf("key %d = %q, want 39", g, d)
		}
	}
}

// runKillChild is the child of TestSurvivesSIGKILL: 4 goroutines append
// counters to their own key and print "g n" once each Append returned.
func runKillChild(dir string) {
	l, _, err := Open(dir, Options{CompactEvery: 25})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			st, err := l.Load()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			d, _ := st.Get("k", strconv.Itoa(g))
			n, _ := strconv.Atoi(strings.TrimSpace(string(d)))
			for n++; ; n++ {
				payload := strconv.Itoa(n) + strings.Repeat(" ", n%500) // varied sizes: pages split and freed
				if err := l.Append(context.Background(), Event{Kind: "k", Key: strconv.Itoa(g), Data: []byte(payload)}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintf(out, "%d %d\n", g, n)
				out.Flush()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(0)
}

// TestSurvivesSIGKILL kills a process appending to the log (this test
// binary, re-executed) at random moments, 20 times over the same log: the
// log always opens without being moved aside, and every acknowledged
// append is in it (a key holds its last acknowledged value or the one
// after, which was in flight).
func TestSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	acked := map[int]int{}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of acknowledgements, then read the
		// ones printed before the kill too: all of them must be kept.
		target := 1 + r.IntN(300)
		lines := bufio.NewScanner(stdout)
		for seen := 0; lines.Scan(); seen++ {
			var g, n int
			if _, err := fmt.Sscan(lines.Text(), &g, &n); err != nil {
				break // a line cut by the kill
			}
			acked[g] = n
			if seen == target {
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
		cmd.Wait()
		if strings.TrimSpace(stderr.String()) != "" {
			t.Fatalf("round %d: child failed: %s", round, stderr.String())
		}
		var warn bytes.Buffer
		l, aside, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&warn, nil))})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if aside != "" {
			t.Fatalf("round %d: log moved aside after a kill: %s", round, warn.String())
		}
		st, err := l.Load()
		l.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for g, n := range acked {
			d, _ := st.Get("k", strconv.Itoa(g))
			got, _ := strconv.Atoi(strings.TrimSpace(string(d)))
			if got != n && got != n+1 {
				t.Fatalf("round %d: key %d holds %d, last acknowledged %d", round, g, got, n)
			}
			acked[g] = got // the child goes on from what is stored
		}
	}
}

// damage is a way a state file can be unusable.
var damage = []struct {
	name  string
	write func(t *testing.T, p string)
}{
	{"garbage", func(t *testing.T, p string) {
		os.WriteFile(p, bytes.Repeat([]byte("not a database\n"), 1000), 0o644)
	}},
	{"short garbage", func(t *testing.T, p string) { os.WriteFile(p, []byte("x"), 0o644) }},
	{"both meta pages flipped", func(t *testing.T, p string) {
		writeLog(t, p)
		data, _ := os.ReadFile(p)
		ps := os.Getpagesize()
		for _, off := range []int{16, ps + 16} {
			data[off] ^= 0xff
		}
		os.WriteFile(p, data, 0o644)
	}},
	{"foreign bbolt file", func(t *testing.T, p string) {
		db, err := bolt.Open(p, 0o644, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error {
			b, _ := tx.CreateBucket([]byte("someone else's"))
			return b.Put([]byte("k"), []byte("v"))
		})
		db.Close()
	}},
	{"other format", func(t *testing.T, p string) {
		writeLog(t, p)
		db, _ := bolt.Open(p, 0o644, nil)
		db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte("ripple-durable-99")) })
		db.Close()
	}},
	{"corrupt event", func(t *testing.T, p string) {
		writeLog(t, p)
		db, _ := bolt.Open(p, 0o644, nil)
		db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Put([]byte("zzzzzzzz"), []byte("{not json")) })
		db.Close()
	}},
}

// writeLog writes a valid log with a few events at p.
func writeLog(t *testing.T, p string) {
	l, _, err := Open(filepath.Dir(p), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		l.Append(context.Background(), Event{Kind: "k", Key: strconv.Itoa(i), Data: []byte("v")})
	}
	l.Close()
}

// TestDamagedFileMovedAside: each damaged or foreign file is moved aside
// byte for byte, one warning names it, and a fresh log works.
func TestDamagedFileMovedAside(t *testing.T) {
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, FileName)
			d.write(t, p)
			before, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var warn bytes.Buffer
			l, aside, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&warn, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if aside == "" || !strings.HasPrefix(filepath.Base(aside), FileName+".corrupt-") {
				t.Fatalf("moved aside to %q", aside)
			}
			kept, err := os.ReadFile(aside)
			if err != nil || !bytes.Equal(kept, before) {
				t.Fatalf("the damaged file was not kept as it was (%v)", err)
			}
			if n := strings.Count(warn.String(), "\n"); n != 1 || !strings.Contains(warn.String(), "level=WARN") || !strings.Contains(warn.String(), aside) {
				t.Fatalf("want one warning naming %s, got %q", aside, warn.String())
			}
			st, err := l.Load()
			if err != nil || len(st) != 0 {
				t.Fatalf("fresh log holds %v (%v)", st, err)
			}
			if err := l.Append(context.Background(), Event{Kind: "k", Key: "a", Data: []byte("b")}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLockedByAnotherProcessIsNotDamage: a second Open of a log in use
// fails with ErrLocked and moves nothing.
func TestLockedByAnotherProcessIsNotDamage(t *testing.T) {
	dir := t.TempDir()
	openT(t, dir, Options{})
	_, aside, err := Open(dir, Options{LockTimeout: 50_000_000})
	if err == nil || !strings.Contains(err.Error(), ErrLocked.Error()) || aside != "" {
		t.Fatalf("second open: %v, aside %q; want ErrLocked", err, aside)
	}
	if !strings.Contains(err.Error(), FileName) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func TestFreshMovesAsideAndKeeps(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, filepath.Join(dir, FileName))
	to, err := MoveAside(dir, "fresh")
	if err != nil || to == "" {
		t.Fatalf("MoveAside: %q %v", to, err)
	}
	if _, err := os.Stat(to); err != nil {
		t.Fatal(err)
	}
	l := openT(t, dir, Options{})
	if st, _ := l.Load(); len(st) != 0 {
		t.Fatalf("fresh log holds %v", st)
	}
	if to, err := MoveAside(t.TempDir(), "fresh"); to != "" || err != nil {
		t.Fatalf("MoveAside of nothing: %q %v", to, err)
	}
}
