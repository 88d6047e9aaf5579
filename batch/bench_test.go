package batch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
)

// BenchmarkRunTrivialTests measures the cost of one test through the whole
// path (pytest's runtest protocol in the kernel, its progress frame, the
// result) on one kernel: each iteration runs a project of 200 trivial
// tests. The figure to read is ns/test; start-up and collection are
// amortised over the 200.
func BenchmarkRunTrivialTests(b *testing.B) {
	const n = 200
	py := pytestPython(b)
	var src strings.Builder
	for i := range n {
		fmt.Fprintf(&src, "def test_%03d():\n    x = %d\n    assert x == %d\n\n\n", i, i, i)
	}
	root := b.TempDir()
	writeFile(b, root, "test_bench.py", src.String())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := batch.Run(context.Background(), batch.Options{Root: root, Tests: true, Python: py, Kernels: 1})
		if err != nil {
			b.Fatal(err)
		}
		if s := rep.Summary(); s.Passed != n {
			b.Fatalf("summary %+v", s)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/test")
}

// BenchmarkCollectBigClass is the collection of a class of 5,000
// generated tests (testdata/pytest/bigclass; a static discovery of the
// tests once took 12 minutes on it, pytest 0.3 s): kernel start and
// pytest's collection, no test run (--collect-only).
func BenchmarkCollectBigClass(b *testing.B) {
	py := pytestPython(b)
	root := filepath.Join("testdata", "pytest", "bigclass")
	for b.Loop() {
		rep, err := batch.Run(context.Background(), batch.Options{Root: root, Tests: true, Python: py, Kernels: 1,
			PytestArgs: []string{"--collect-only", "-p", "no:cacheprovider"}})
		if err != nil || len(rep.Results) != 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunBigClass runs the 5,000 tests of testdata/pytest/bigclass
// on one kernel: collection plus 5,000 trivial tests.
func BenchmarkRunBigClass(b *testing.B) {
	py := pytestPython(b)
	root := filepath.Join("testdata", "pytest", "bigclass")
	for b.Loop() {
		rep, err := batch.Run(context.Background(), batch.Options{Root: root, Tests: true, Python: py, Kernels: 1,
			PytestArgs: []string{"-p", "no:cacheprovider"}})
		if err != nil || rep.Summary().Passed != 5000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkWatchEdit is ripple run --tests --watch after a one-line edit
// of a library function's body (the hot path: the function is patched in
// the kernels and the tests that reached it run again in the open
// sessions): from the save to the affected tests' results (the Ran hook),
// on 2 kernels, in a project of 40 test modules of 25 tests each of which
// 2 import the library and call the function. Reported: p50 and max of
// the save-to-results time; each re-run must run 50 tests (the
// unaffected ones are not re-run). bench/watchtests does the same on
// sympy.
func BenchmarkWatchEdit(b *testing.B) {
	py := pytestPython(b)
	root := b.TempDir()
	writeFile(b, root, "pkg/__init__.py", "")
	writeFile(b, root, "pkg/lib.py", "def scale(x):\n    return x * 1\n")
	for m := range 40 {
		var src strings.Builder
		if m < 2 {
			src.WriteString("from pkg.lib import scale\n")
		} else {
			src.WriteString("def scale(x):\n    return x\n")
		}
		for i := range 25 {
			fmt.Fprintf(&src, "\n\ndef test_%02d():\n    assert scale(%d) >= 0\n", i, i)
		}
		writeFile(b, root, fmt.Sprintf("test_m%02d.py", m), src.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	type ran struct {
		n  int
		at time.Time
	}
	runs := make(chan ran, 4)
	done := make(chan error, 1)
	go func() {
		done <- batch.Watch(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: 2, PytestArgs: []string{"-p", "no:cacheprovider"}},
			batch.WatchHooks{Ran: func(rep *batch.Report, err error, _ []string) {
				if err != nil {
					b.Error(err)
				}
				n := 0
				if rep != nil {
					n = len(rep.Results)
				}
				runs <- ran{n, time.Now()}
			}})
	}()
	if r := <-runs; r.n != 1000 {
		b.Fatalf("first run: %d tests", r.n)
	}
	var times []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		saved := time.Now()
		writeFile(b, root, "pkg/lib.py", fmt.Sprintf("def scale(x):\n    return x * %d\n", i+2))
		r := <-runs
		if r.n != 50 {
			b.Fatalf("re-run ran %d tests, want 50", r.n)
		}
		times = append(times, r.at.Sub(saved))
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max-ms")
}
