package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// The engine's performance targets (bench/README.md), end to end through
// the engine with a real kernel (bench/engine/run.sh prints them as a
// table). The program shapes are those of the kernel-side benchmark
// (kernel/python/tests/bench_engine.py), so the two sets of figures can be
// compared: the difference is the Go side (queue, store, streams).

// latencyClient notes when the first Value update of a target expression
// leaves the engine (its Notify), then records like a recorder.
type latencyClient struct {
	*recorder
	mu     sync.Mutex
	target protocol.ExpressionID // guarded by mu
	seen   chan time.Time        // capacity 1: the first Value of target since watch
}

func newLatencyClient() *latencyClient {
	return &latencyClient{recorder: newRecorder(), seen: make(chan time.Time, 1)}
}

// watch sets the expression to time.
func (c *latencyClient) watch(id protocol.ExpressionID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.target = id
	select {
	case <-c.seen:
	default:
	}
}

func (c *latencyClient) Notify(method string, params any) {
	if p, ok := params.(protocol.ExpressionUpdatesParams); ok {
		now := time.Now()
		c.mu.Lock()
		target := c.target
		c.mu.Unlock()
		for i := range p.Updates {
			if p.Updates[i].ExpressionID == target && p.Updates[i].Payload.Type == protocol.PayloadValue {
				select {
				case c.seen <- now:
				default:
				}
			}
		}
	}
	c.recorder.Notify(method, params)
}

// percentile of samples (sorted in place), p in [0, 100].
func percentile(samples []time.Duration, p float64) time.Duration {
	slices.Sort(samples)
	i := int(p/100*float64(len(samples)-1) + 0.5)
	return samples[min(i, len(samples)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchEngine starts an engine on files with a latency client connected
// (replacing the harness's recorder) and one context running pointer.
func benchEngine(b *testing.B, files map[string]string, pointer string) (*harness, *latencyClient, protocol.ContextID) {
	b.Helper()
	h := setup(b, files, engine.Config{Kernels: 1})
	lc := newLatencyClient()
	if _, err := h.e.Connect(h.ctx, clientID, lc); err != nil {
		b.Fatal(err)
	}
	h.client = lc.recorder
	id, run := h.newContext(pointer)
	if run.failed != nil {
		b.Fatalf("first run: %s", resultString(run.failed))
	}
	waitIdle(b, h.e)
	return h, lc, id
}

// editLine replaces line n (0-based) of an open buffer through
// text/applyEdit; lines is the buffer's text as lines and is updated.
func (h *harness) editLine(path string, lines []string, n int, text string) {
	h.t.Helper()
	old := strings.Join(lines, "\n")
	oldLine := lines[n]
	lines[n] = text
	next := strings.Join(lines, "\n")
	must(h.t, h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path: protocol.Path(path),
		Edits: []protocol.TextEdit{{Range: protocol.Range{
			Start: protocol.Position{Line: n},
			End:   protocol.Position{Line: n, Character: len([]rune(oldLine))},
		}, Text: text}},
		OldVersion: versionOf(old),
		NewVersion: versionOf(next),
	}}))
}

// thousandStatements is main with 1,000 statements: a_i = i * 2, and every
// tenth b_i = a_(i-1) + a_(i-2).
func thousandStatements() []string {
	lines := []string{"def main():"}
	for i := range 1000 {
		if i%10 == 9 {
			lines = append(lines, fmt.Sprintf("    b%d = a%d + a%d", i, i-1, i-2))
		} else {
			lines = append(lines, fmt.Sprintf("    a%d = %d * 2", i, i))
		}
	}
	return append(lines, "")
}

// editTarget is the statement edited by iteration n and the number of
// statements that must run again (it and its dependents).
func editTarget(n int) (i, reruns int) {
	i = (n * 37) % 1000
	if i%10 == 9 {
		i--
	}
	reruns = 1
	if (i+1)%10 == 9 || (i+2)%10 == 9 {
		reruns = 2
	}
	return i, reruns
}

// BenchmarkEditOneOf1000Statements: one trivial statement of a
// 1,000-statement main is edited through ApplyEdit. latency-p50/p99 run
// from the ApplyEdit call to the statement's update leaving the engine
// (Client.Notify); ns/op is the whole cycle up to executionComplete. The
// number of statements run again is checked on every edit.
func BenchmarkEditOneOf1000Statements(b *testing.B) {
	lines := thousandStatements()
	h, lc, id := benchEngine(b, map[string]string{"main.py": strings.Join(lines, "\n")}, "main:main")
	h.openFile("main.py")
	var latencies []time.Duration
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		i, want := editTarget(n)
		lc.watch(protocol.ExpressionID(fmt.Sprintf("main:main/a%d", i)))
		m := h.client.mark()
		start := time.Now()
		h.editLine("main.py", lines, i+1, fmt.Sprintf("    a%d = %d * 2 + %d", i, i, n))
		seen := <-lc.seen
		latencies = append(latencies, seen.Sub(start))
		run := h.client.waitRun(b, m, id)
		if got := len(run.updates.Computed()); got != want || run.failed != nil {
			b.Fatalf("edit of a%d re-ran %v (%s), want %d statements", i, run.updates.Computed(), resultString(run.failed), want)
		}
		n++
	}
	b.ReportMetric(ms(percentile(latencies, 50)), "latency-p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "latency-p99-ms")
}

// kernelSink notes when a progress event names a target with a Value.
type kernelSink struct {
	target []byte
	seen   time.Time
}

func (s *kernelSink) Output(kernel.Stream, []byte) {}

func (s *kernelSink) Progress(raw json.RawMessage) {
	if s.seen.IsZero() && bytes.Contains(raw, s.target) && bytes.Contains(raw, []byte(`"Value"`)) {
		s.seen = time.Now()
	}
}

// BenchmarkEditOneOf1000StatementsKernelOnly is the same edit sent
// straight to a kernel (compile, then execute, as the engine's jobs do),
// without the engine: the kernel side of the figure above.
func BenchmarkEditOneOf1000StatementsKernelOnly(b *testing.B) {
	lines := thousandStatements()
	dir := b.TempDir()
	write(b, dir, "main.py", strings.Join(lines, "\n"))
	k := startKernel(b, dir)
	ctx := context.Background()
	execute := map[string]any{"contextId": "bench", "invalidate": nil, "wanted": nil, "visualizations": []any{},
		"stack": []any{map[string]any{"type": "ExplicitCall", "module": "main", "name": "main", "positionalArgumentsExpressions": []string{}}}}
	compile := func(src string) { compileModule(b, k, "main", src) }
	compile(strings.Join(lines, "\n"))
	_, err := k.Call(ctx, "execute", execute, nil)
	must(b, err)
	var latencies []time.Duration
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		i, _ := editTarget(n)
		lines[i+1] = fmt.Sprintf("    a%d = %d * 2 + %d", i, i, n)
		sink := &kernelSink{target: fmt.Appendf(nil, `"main:main/a%d"`, i)}
		start := time.Now()
		compile(strings.Join(lines, "\n"))
		_, err := k.Call(ctx, "execute", execute, sink)
		must(b, err)
		if sink.seen.IsZero() {
			b.Fatalf("no value of a%d", i)
		}
		latencies = append(latencies, sink.seen.Sub(start))
		n++
	}
	b.ReportMetric(ms(percentile(latencies, 50)), "latency-p50-ms")
	b.ReportMetric(ms(percentile(latencies, 99)), "latency-p99-ms")
}

// costlyStatements is main with n statements of ~5 ms of CPU each.
func costlyStatements(n int) []string {
	lines := []string{
		"import time", "", "",
		"def work(i):",
		"    end = time.perf_counter() + 0.005",
		"    while time.perf_counter() < end:",
		"        pass",
		"    return i", "", "",
		"def main():",
	}
	for i := range n {
		lines = append(lines, fmt.Sprintf("    v%d = work(%d)", i, i))
	}
	return append(lines, "")
}

// BenchmarkIncrementalVsFromScratch: 200 statements of ~5 ms each. Each
// iteration recomputes everything (from scratch: recompute "all") and
// edits one leaf (incremental), each timed from the call to
// executionComplete.
func BenchmarkIncrementalVsFromScratch(b *testing.B) {
	const n = 200
	lines := costlyStatements(n)
	h, _, id := benchEngine(b, map[string]string{"main.py": strings.Join(lines, "\n")}, "main:main")
	h.openFile("main.py")
	leaf := len(lines) - 2 // the last statement: nothing depends on it
	var scratch, incremental []time.Duration
	k := 0
	for b.Loop() {
		m := h.client.mark()
		start := time.Now()
		must(b, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
		run := h.client.waitRun(b, m, id)
		scratch = append(scratch, time.Since(start))
		if got := len(run.updates.Computed()); got != n {
			b.Fatalf("from scratch ran %d statements, want %d", got, n)
		}

		k++
		m = h.client.mark()
		start = time.Now()
		h.editLine("main.py", lines, leaf, fmt.Sprintf("    v%d = work(%d) + %d", n-1, n-1, k))
		run = h.client.waitRun(b, m, id)
		incremental = append(incremental, time.Since(start))
		if got := run.updates.Computed(); len(got) != 1 {
			b.Fatalf("the leaf edit ran %v, want only the leaf", got)
		}
	}
	s, i := percentile(scratch, 50), percentile(incremental, 50)
	b.ReportMetric(ms(s), "scratch-ms")
	b.ReportMetric(ms(i), "incremental-ms")
	b.ReportMetric(float64(s)/float64(i), "speedup-x")
}

// bigModule is a module of about 5,000 lines: functions f_i of 6 lines
// each and a main calling the first 200.
func bigModule() []string {
	lines := []string{"import math", "", "K = 3", ""}
	for i := 0; len(lines) < 5000; i++ {
		lines = append(lines,
			fmt.Sprintf("def f%d(a, b=%d):", i, i),
			"    c = a * b + K",
			"    d = [c + j for j in range(3)]",
			fmt.Sprintf("    if c > %d:", i),
			"        d.append(math.sqrt(abs(c)))",
			"    return sum(d)",
			"")
	}
	lines = append(lines, "def main():")
	for j := range 200 {
		lines = append(lines, fmt.Sprintf("    x%d = f%d(%d)", j, j, j))
	}
	return append(lines, "")
}

// BenchmarkCompile5000LineModule: the kernel's compile (parse, analysis,
// load) of a 5,000-line module: cold (a module name the kernel has not
// seen) and after a one-line edit; and through the engine, an edit of a
// function main does not call, from ApplyEdit to executionComplete.
func BenchmarkCompile5000LineModule(b *testing.B) {
	lines := bigModule()
	src := strings.Join(lines, "\n")
	b.Run("kernel-cold", func(b *testing.B) {
		dir := b.TempDir()
		k := startKernel(b, dir)
		n := 0
		for b.Loop() {
			name := fmt.Sprintf("big%d", n)
			write(b, dir, name+".py", src)
			compileModule(b, k, name, src)
			n++
		}
	})
	b.Run("kernel-edit", func(b *testing.B) {
		k := startKernel(b, b.TempDir())
		edited := slices.Clone(lines)
		compileModule(b, k, "big", src)
		n := 0
		for b.Loop() {
			edited[5+7*(n%500)+1] = fmt.Sprintf("    c = a * b + K + %d", n)
			compileModule(b, k, "big", strings.Join(edited, "\n"))
			n++
		}
	})
	b.Run("engine-edit", func(b *testing.B) {
		edited := slices.Clone(lines)
		h, _, id := benchEngine(b, map[string]string{"big.py": src}, "big:main")
		h.openFile("big.py")
		n := 0
		for b.Loop() {
			// f_i for i >= 200: main does not call them.
			line := 4 + 7*(200+n%500) + 1
			m := h.client.mark()
			h.editLine("big.py", edited, line, fmt.Sprintf("    c = a * b + K + %d", n))
			run := h.client.waitRun(b, m, id)
			if run.failed != nil || len(run.updates.Computed()) != 0 {
				b.Fatalf("edit of an uncalled function: %s, ran %v", resultString(run.failed), run.updates.Computed())
			}
			n++
		}
	})
}

// startKernel starts a kernel on dir without an engine (stopped by the
// benchmark's cleanup).
func startKernel(b *testing.B, dir string) *kernel.Kernel {
	b.Helper()
	ctx := context.Background()
	py, err := kernel.FindPython(ctx, "", dir)
	must(b, err)
	k, err := kernel.Start(ctx, kernel.Config{Python: py, Root: dir, LogDir: b.TempDir()})
	must(b, err)
	b.Cleanup(func() { k.Stop(context.Background()) })
	return k
}

// compileModule sends a compile request for one module, as the engine's
// EnsureCompiled does.
func compileModule(b *testing.B, k *kernel.Kernel, name, src string) {
	b.Helper()
	_, err := k.Call(context.Background(), "compile", map[string]any{
		"modules": []any{map[string]any{"name": name, "path": name + ".py", "source": src}}, "removed": []string{}}, nil)
	must(b, err)
}
