package kernel

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// The figures that matter are compared with Jupyter by bench/kernel; these
// benchmarks watch the same paths from go test.

func BenchmarkEvalRoundTrip(b *testing.B) {
	k := startKernel(b)
	ctx := context.Background()
	if err := k.Eval(ctx, "x = 1", nil); err != nil { // compile once
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Eval(ctx, "x = 1", nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallRoundTrip(b *testing.B) {
	k := startKernel(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Call(ctx, "ping", nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdoutThroughput prints 50 MiB in 64 KiB writes per operation.
func BenchmarkStdoutThroughput(b *testing.B) {
	k := startKernel(b)
	ctx := context.Background()
	code := "import sys\ns = 'x' * 65535 + '\\n'\nfor _ in range(800): sys.stdout.write(s)"
	c := &counter{}
	b.SetBytes(800 * 65536)
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Eval(ctx, code, c); err != nil {
			b.Fatal(err)
		}
	}
	if c.stdout != int64(b.N)*800*65536 {
		b.Fatalf("received %d bytes", c.stdout)
	}
}

// BenchmarkInterrupt measures from the cancel of a busy request to the
// return of its call.
func BenchmarkInterrupt(b *testing.B) {
	k := startKernel(b)
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		var once sync.Once
		started := make(chan struct{})
		sink := SinkFuncs{OutputFunc: func(Stream, []byte) { once.Do(func() { close(started) }) }}
		errc := make(chan error, 1)
		b.StopTimer()
		go func() { errc <- k.Eval(ctx, "print('go', flush=True)\nwhile True: pass", sink) }()
		<-started
		b.StartTimer()
		cancel()
		if err := <-errc; !errors.Is(err, ErrInterrupted) {
			b.Fatal(err)
		}
	}
}

func BenchmarkStart(b *testing.B) {
	cfg := Config{Python: python(b), Root: b.TempDir(), LogDir: b.TempDir()}
	if _, err := ScriptDir(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		k, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		k.Stop(context.Background())
		b.StartTimer()
	}
}

// BenchmarkInterruptRightAfterSend measures a request cancelled as soon as
// its frame is written (a run superseded just as it began): from the
// cancel to the return of the call.
func BenchmarkInterruptRightAfterSend(b *testing.B) {
	var cancel context.CancelFunc
	k := startKernel(b, func(c *Config) {
		c.afterSend = func(uint64) {
			b.StartTimer()
			cancel()
		}
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ { // not b.Loop: the timer runs only from the cancel
		b.StopTimer()
		var ctx context.Context
		ctx, cancel = context.WithCancel(context.Background())
		err := k.Eval(ctx, "while True: pass", nil)
		cancel()
		if !errors.Is(err, ErrInterrupted) {
			b.Fatal(err)
		}
	}
}
