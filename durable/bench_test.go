package durable

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// buffer1000 is about the size of a 1,000-statement module (30 KB).
var buffer1000 = strings.Repeat("x = compute(x, 1)  # statement\n", 1000)

// BenchmarkAppendBuffer is the log's cost per keystroke: one buffer state
// (30 KB) appended and fsynced, one at a time (an idle server, so no
// group commit helps). Reports p50 and p99 latency.
func BenchmarkAppendBuffer(b *testing.B) {
	l, _, err := Open(b.TempDir(), Options{CompactEvery: 200})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	lat := make([]time.Duration, 0, b.N)
	ev := Event{Kind: "buffer", Key: "main.py", Data: []byte(buffer1000)}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := l.Append(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportQuantiles(b, lat)
}

// BenchmarkAppendConcurrent: 16 writers (16 buffers) at once share fsyncs.
func BenchmarkAppendConcurrent(b *testing.B) {
	l, _, err := Open(b.TempDir(), Options{CompactEvery: 200})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(8) // 8 x GOMAXPROCS writers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for i := 0; pb.Next(); i++ {
			t0 := time.Now()
			if err := l.Append(context.Background(), Event{Kind: "buffer", Key: fmt.Sprint(i % 16), Data: []byte(buffer1000)}); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	reportQuantiles(b, lat)
}

// BenchmarkLogSize100kEdits appends 100,000 edits of a 30 KB buffer (64
// writers, group commit) with compaction and reports the file's size.
func BenchmarkLogSize100kEdits(b *testing.B) {
	for _, every := range []int{200, 1000} {
		b.Run(fmt.Sprint("compactEvery=", every), func(b *testing.B) {
			for range b.N {
				l, _, err := Open(b.TempDir(), Options{CompactEvery: every})
				if err != nil {
					b.Fatal(err)
				}
				const edits, writers = 100_000, 64
				var wg sync.WaitGroup
				for w := range writers {
					wg.Go(func() {
						for i := range edits / writers {
							data := []byte(buffer1000 + fmt.Sprint(i))
							if err := l.Append(context.Background(), Event{Kind: "buffer", Key: fmt.Sprint("m", w%4, ".py"), Data: data}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				tail, size := l.Stats()
				l.Close()
				b.ReportMetric(float64(size)/(1<<20), "MB-file")
				b.ReportMetric(float64(tail), "tail-events")
			}
		})
	}
}

func reportQuantiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
