package batch_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/batch"
)

// BenchmarkRunTrivialEntries measures the cost of one entry through the
// whole path (context, push, queue, kernel run, notifications, result) on
// one kernel: each iteration runs a project of 200 two-statement tests.
// The figure to read is ns/entry; start-up is amortised over the 200.
func BenchmarkRunTrivialEntries(b *testing.B) {
	const n = 200
	var src strings.Builder
	for i := range n {
		fmt.Fprintf(&src, "def test_%03d():\n    x = %d\n    assert x == %d\n\n\n", i, i, i)
	}
	root := b.TempDir()
	writeFile(b, root, "test_bench.py", src.String())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rep, err := batch.Run(context.Background(), batch.Options{Root: root, Tests: true, Kernels: 1})
		if err != nil {
			b.Fatal(err)
		}
		if s := rep.Summary(); s.Passed != n {
			b.Fatalf("summary %+v", s)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
}
