package batch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
// generated tests (testdata/pytest/bigclass; issue 12: the static
// discovery took 12 minutes, pytest 0.3 s): kernel start and pytest's
// collection, no test run (--collect-only).
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
