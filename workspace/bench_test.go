package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// thousandLines is a 1,000-line Python-ish buffer (about 40 KB).
func thousandLines() string {
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, "    value_%04d = compute(value_%04d, %d)  # é\n", i, max(i-1, 0), i)
	}
	return b.String()
}

// BenchmarkApplyEdit types one character in the middle of a 1,000-line
// buffer and deletes it again, alternately: the keystroke path (range
// conversion, new content, SHA3-224 of the result, compare-and-swap).
func BenchmarkApplyEdit(b *testing.B) {
	content := thousandLines()
	ws, _ := setup(b, map[string]string{"main.py": content})
	_, v0, err := ws.OpenBuffer("c1", "main.py")
	if err != nil {
		b.Fatal(err)
	}
	at := Position{Line: 500, Character: 10}
	out, err := applyEdits(content, []TextEdit{{Range: Range{at, at}, Text: "x"}})
	if err != nil {
		b.Fatal(err)
	}
	v1 := VersionOf(string(out))
	insert := []TextEdit{{Range: Range{at, at}, Text: "x"}}
	remove := []TextEdit{{Range: Range{at, Position{at.Line, at.Character + 1}}}}
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var err error
		if i%2 == 0 {
			_, err = ws.ApplyEdit("c1", "main.py", insert, v0, v1)
		} else {
			_, err = ws.ApplyEdit("c1", "main.py", remove, v1, v0)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVersionOf(b *testing.B) {
	for _, size := range []int{1 << 10, 40 << 10, 1 << 20} {
		content := strings.Repeat("x = 1\n", size/6+1)[:size]
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for range b.N {
				VersionOf(content)
			}
		})
	}
}

// bigTree creates 20,000 files in 2,000 directories (40 top-level
// directories with 49 subdirectories each, 10 files per directory).
func bigTree(b *testing.B) string {
	root := b.TempDir()
	for top := range 40 {
		for sub := range 50 {
			dir := filepath.Join(root, fmt.Sprintf("pkg%02d", top))
			if sub > 0 {
				dir = filepath.Join(dir, fmt.Sprintf("sub%02d", sub))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 10 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("m%d.py", f)), []byte("x = 1\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return root
}

// BenchmarkWatcherStart measures the time to start watching a tree of
// 20,000 files in 2,000 directories, and the heap the watcher keeps for it.
func BenchmarkWatcherStart(b *testing.B) {
	root := bigTree(b)
	ws, err := Open(root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	var heap uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w := NewWatcher(ws, WatchOptions{})
		b.StartTimer()
		if err := w.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := len(w.WatchedDirs()); got != 2001 {
			b.Fatalf("%d directories watched, want 2001", got)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += after.HeapAlloc - before.HeapAlloc
		if err := w.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(heap)/float64(b.N), "heap-B")
}

// BenchmarkEventToBatch measures how long after the debounce a single
// external write arrives as a batch (p50 and p99 over the iterations).
func BenchmarkEventToBatch(b *testing.B) {
	ws, root := setup(b, map[string]string{"main.py": "x = 0\n"})
	w := NewWatcher(ws, WatchOptions{})
	if err := w.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	defer w.Stop(context.Background())
	path := filepath.Join(root, "main.py")
	extra := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		if err := os.WriteFile(path, []byte(fmt.Sprintf("x = %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		select {
		case <-w.Batches():
		case <-time.After(batchTimeout):
			b.Fatal("no batch")
		}
		extra = append(extra, time.Since(start)-defaultDebounce)
	}
	b.StopTimer()
	slices.Sort(extra)
	b.ReportMetric(float64(extra[len(extra)/2].Microseconds())/1000, "p50-ms-over-debounce")
	b.ReportMetric(float64(extra[len(extra)*99/100].Microseconds())/1000, "p99-ms-over-debounce")
}
