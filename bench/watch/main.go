// Command watch measures the recompute after a file changes on disk and
// prints one table:
//
//   - save-to-value: an external write of one statement of a
//     1,000-statement main (a plain in-place write, as most editors save),
//     until the client has that expression's new value; p50 and p99
//     against the target p50 <= debounce + 15 ms. Measured twice: through
//     the engine's Client in this process (what `ripple watch` sees), and
//     over a real WebSocket to a `ripple serve` process
//     (servertest.Client), which also has file watching on. Each sample
//     is split into write -> file/event (the debounce and the watcher) and
//     file/event -> value (compile, run, flush).
//   - a tree of 20,000 files in 2,000 directories: the time to start
//     watching it (workspace.Watcher.Start; engine.Start with Watch on),
//     the memory it costs (Go heap and process RSS, measured in a fresh
//     process for each), and save-to-batch latency inside that tree.
//
// Run it from the repository root:
//
//	go run ./bench/watch             # -saves, -statements, -debounce, -dirs, -files
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

type config struct {
	saves      int
	statements int
	debounce   time.Duration
	dirs       int
	files      int
	bin        string
}

func main() {
	var c config
	flag.IntVar(&c.saves, "saves", 200, "saves to time per save-to-value variant")
	flag.IntVar(&c.statements, "statements", 1000, "statements of main")
	flag.DurationVar(&c.debounce, "debounce", 50*time.Millisecond, "watcher debounce of the in-process engine (ripple serve uses its default, 50 ms)")
	flag.IntVar(&c.dirs, "dirs", 2000, "directories of the big tree")
	flag.IntVar(&c.files, "files", 20000, "files of the big tree")
	flag.StringVar(&c.bin, "bin", "", "ripple binary for the WebSocket variant (default: go build ./cmd/ripple into a temp dir)")
	part := flag.String("part", "", "internal: run one part in this process and print its JSON")
	dir := flag.String("dir", "", "internal: the tree of -part")
	flag.Parse()

	var err error
	switch *part {
	case "":
		err = run(c)
	case "tree-watcher", "tree-engine":
		err = treePart(*part, *dir, c)
	default:
		err = fmt.Errorf("unknown -part %q", *part)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/watch:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	tmp, err := os.MkdirTemp("", "ripple-bench-watch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	var rows [][3]string
	add := func(name, value, target string) { rows = append(rows, [3]string{name, value, target}) }
	target := fmt.Sprintf("p50 <= %s", ms(c.debounce+15*time.Millisecond))

	in, err := saveToValueEngine(filepath.Join(tmp, "engine"), c)
	if err != nil {
		return fmt.Errorf("save-to-value (engine): %w", err)
	}
	add(fmt.Sprintf("save-to-value, engine Client, p50 (%d-statement main, %d saves, debounce %s)", c.statements, c.saves, c.debounce), ms(in.percentile(50)), target)
	add("  p99", ms(in.percentile(99)), "")
	add("  max", ms(in.percentile(100)), "")
	add("  p50 write -> file/event | file/event -> value", ms(percentile(in.toEvent, 50))+" | "+ms(percentile(in.toValue, 50)), "")

	bin := c.bin
	if bin == "" {
		bin = filepath.Join(tmp, "ripple")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/ripple-run/ripple/cmd/ripple").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	ws, err := saveToValueWebSocket(bin, filepath.Join(tmp, "serve"), c)
	if err != nil {
		return fmt.Errorf("save-to-value (WebSocket): %w", err)
	}
	add(fmt.Sprintf("save-to-value, ripple serve over a WebSocket, p50 (%d saves, debounce 50 ms)", c.saves), ms(ws.percentile(50)), "p50 <= 65.00 ms")
	add("  p99", ms(ws.percentile(99)), "")
	add("  max", ms(ws.percentile(100)), "")
	add("  p50 write -> file/event | file/event -> value", ms(percentile(ws.toEvent, 50))+" | "+ms(percentile(ws.toValue, 50)), "")

	tree := filepath.Join(tmp, "tree")
	dirs, files, err := makeTree(tree, c.dirs, c.files)
	if err != nil {
		return fmt.Errorf("tree: %w", err)
	}
	for _, part := range []string{"tree-watcher", "tree-engine"} {
		res, err := runPart(part, tree, c)
		if err != nil {
			return fmt.Errorf("%s: %w", part, err)
		}
		switch part {
		case "tree-watcher":
			add(fmt.Sprintf("tree of %d files in %d directories: workspace.Watcher.Start", files, dirs), ms(res.Start), "")
			add("  Go heap of the watcher (after GC)", mib(res.HeapAfter-res.HeapBefore), "")
			add("  process RSS before | after watching", mib(res.RSSBefore)+" | "+mib(res.RSSAfter), "")
			add(fmt.Sprintf("  save-to-batch in the tree, p50 | p99 (%d saves, debounce %s)", len(res.SaveToBatch), c.debounce),
				ms(percentile(res.SaveToBatch, 50))+" | "+ms(percentile(res.SaveToBatch, 99)), "")
		case "tree-engine":
			add("  engine.Start with Watch (kernels start in the background)", ms(res.Start), "")
			add("  process RSS after engine.Start (Go heap after GC)", mib(res.RSSAfter)+" ("+mib(res.HeapAfter)+")", "")
		}
	}

	fmt.Printf("%-86s %-20s %s\n", "file-watch recompute", "measured", "target")
	for _, r := range rows {
		fmt.Printf("%-86s %-20s %s\n", r[0], r[1], r[2])
	}
	return nil
}

// --- save-to-value

// samples are the save-to-value timings of one variant.
type samples struct {
	total, toEvent, toValue []time.Duration
}

func (s *samples) percentile(p float64) time.Duration { return percentile(s.total, p) }

func (s *samples) add(start, event, value time.Time) {
	s.total = append(s.total, value.Sub(start))
	s.toEvent = append(s.toEvent, event.Sub(start))
	s.toValue = append(s.toValue, value.Sub(event))
}

// mainSource is a main of n independent statements v{i} = values[i].
func mainSource(values []int) string {
	var b strings.Builder
	b.WriteString("def main():\n")
	for i, v := range values {
		fmt.Fprintf(&b, "    v%d = %d\n", i, v)
	}
	return b.String()
}

// saver rewrites main.py with one statement changed per save.
type saver struct {
	path   string
	values []int
	rng    *rand.Rand
	n      int
}

func newSaver(dir string, statements int) (*saver, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &saver{path: filepath.Join(dir, "main.py"), values: make([]int, statements), rng: rand.New(rand.NewPCG(1, 2))}
	for i := range s.values {
		s.values[i] = i
	}
	return s, os.WriteFile(s.path, []byte(mainSource(s.values)), 0o644)
}

// save changes one statement, writes the file in place and returns when
// the write began, the expression and the preview its update will carry.
func (s *saver) save() (time.Time, protocol.ExpressionID, string, error) {
	k := s.rng.IntN(len(s.values))
	s.n++
	s.values[k] = 1_000_000 + s.n
	text := mainSource(s.values)
	start := time.Now()
	err := os.WriteFile(s.path, []byte(text), 0o644)
	return start, protocol.ExpressionID(fmt.Sprintf("main:main/v%d", k)), strconv.Itoa(s.values[k]), err
}

const warmup = 10

// probe is an engine Client that timestamps what it receives and lets
// the benchmark wait for a notification.
type probe struct {
	mu    sync.Mutex
	cond  *sync.Cond
	notes []stamped
}

type stamped struct {
	at     time.Time
	method string
	params any
}

func newProbe() *probe {
	p := &probe{}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *probe) Notify(method string, params any) {
	now := time.Now()
	p.mu.Lock()
	p.notes = append(p.notes, stamped{now, method, params})
	p.cond.Broadcast()
	p.mu.Unlock()
}

// waitFrom waits for a notification at index >= from matching match and
// returns its time and index.
func (p *probe) waitFrom(from int, limit time.Duration, match func(stamped) bool) (time.Time, int, error) {
	deadline := time.Now().Add(limit)
	t := time.AfterFunc(limit, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer t.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; ; {
		for ; i < len(p.notes); i++ {
			if match(p.notes[i]) {
				return p.notes[i].at, i, nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, 0, fmt.Errorf("nothing matched within %s", limit)
		}
		p.cond.Wait()
	}
}

func (p *probe) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.notes)
}

func isEnd(n stamped) bool {
	return n.method == protocol.NotifyExecutionComplete || n.method == protocol.NotifyExecutionFailed
}

func hasValue(us []protocol.ExpressionUpdate, id protocol.ExpressionID, preview string) bool {
	return slices.ContainsFunc(us, func(u protocol.ExpressionUpdate) bool {
		return u.ExpressionID == id && u.Payload.Type == protocol.PayloadValue && u.Payload.Preview == preview
	})
}

func saveToValueEngine(dir string, c config) (*samples, error) {
	s, err := newSaver(dir, c.statements)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Config{Root: dir, Kernels: 1, Watch: true, WatchDebounce: c.debounce})
	if err != nil {
		return nil, err
	}
	if err := e.Start(ctx); err != nil {
		return nil, err
	}
	defer e.Stop(ctx)
	p := newProbe()
	if _, err := e.Connect(ctx, "bench", p); err != nil {
		return nil, err
	}
	created, err := e.CreateContext(ctx, "bench", protocol.CreateContextParams{})
	if err != nil {
		return nil, err
	}
	m := p.mark()
	if err := e.Push(ctx, "bench", protocol.PushParams{ContextID: created.ContextID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}); err != nil {
		return nil, err
	}
	if _, _, err := p.waitFrom(m, time.Minute, isEnd); err != nil {
		return nil, fmt.Errorf("first run: %w", err)
	}
	out := &samples{}
	for i := range c.saves + warmup {
		m := p.mark()
		start, id, preview, err := s.save()
		if err != nil {
			return nil, err
		}
		event, _, err := p.waitFrom(m, time.Minute, func(n stamped) bool { return n.method == protocol.NotifyFileEvent })
		if err != nil {
			return nil, fmt.Errorf("file/event: %w", err)
		}
		value, at, err := p.waitFrom(m, time.Minute, func(n stamped) bool {
			u, ok := n.params.(protocol.ExpressionUpdatesParams)
			return ok && hasValue(u.Updates, id, preview)
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for %s = %s: %w", id, preview, err)
		}
		if _, _, err := p.waitFrom(at, time.Minute, isEnd); err != nil {
			return nil, err
		}
		if i >= warmup {
			out.add(start, event, value)
		}
	}
	return out, nil
}

// --- the tree

// makeTree writes files files spread over dirs directories (a two-level
// tree: about sqrt(dirs) top-level packages), half of them modules.
func makeTree(root string, dirs, files int) (int, int, error) {
	top := max(1, int(float64(dirs)/(1+float64(dirs)/40)))
	top = min(top, dirs)
	var all []string
	for i := range top {
		all = append(all, fmt.Sprintf("p%03d", i))
	}
	for i := 0; len(all) < dirs; i++ {
		all = append(all, fmt.Sprintf("p%03d/s%04d", i%top, i))
	}
	for _, d := range all {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return 0, 0, err
		}
	}
	for i := range files {
		d := all[i%len(all)]
		name := fmt.Sprintf("f%05d.py", i)
		if i%2 == 1 {
			name = fmt.Sprintf("f%05d.txt", i)
		}
		if err := os.WriteFile(filepath.Join(root, d, name), []byte(fmt.Sprintf("x = %d\n", i)), 0o644); err != nil {
			return 0, 0, err
		}
	}
	if err := os.WriteFile(filepath.Join(root, "main.py"), []byte("def main():\n    x = 1\n"), 0o644); err != nil {
		return 0, 0, err
	}
	return len(all), files + 1, nil
}

// partResult is what a tree part prints, as JSON, for the parent.
type partResult struct {
	Start                 time.Duration
	HeapBefore, HeapAfter int64
	RSSBefore, RSSAfter   int64
	SaveToBatch           []time.Duration
}

// runPart runs a tree part in a fresh process, so its memory figures
// are its own.
func runPart(part, dir string, c config) (*partResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-part", part, "-dir", dir, "-debounce", c.debounce.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var res partResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("%s printed %q: %w", part, out, err)
	}
	return &res, nil
}

func treePart(part, dir string, c config) error {
	var res partResult
	res.HeapBefore, res.RSSBefore = heap(), rss()
	ctx := context.Background()
	switch part {
	case "tree-watcher":
		ws, err := workspace.Open(dir, workspace.Options{})
		if err != nil {
			return err
		}
		defer ws.Close()
		w := workspace.NewWatcher(ws, workspace.WatchOptions{Debounce: c.debounce})
		start := time.Now()
		if err := w.Start(ctx); err != nil {
			return err
		}
		res.Start = time.Since(start)
		defer w.Stop(ctx)
		res.HeapAfter, res.RSSAfter = heap(), rss()
		// Saves deep in the tree: until the batch reporting them.
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range 50 + warmup {
			name := filepath.Join(dir, fmt.Sprintf("p%03d", rng.IntN(10)), "f00000.py")
			if _, err := os.Stat(name); err != nil {
				name = filepath.Join(dir, "main.py")
			}
			start := time.Now()
			if err := os.WriteFile(name, []byte(fmt.Sprintf("x = %d\n", i)), 0o644); err != nil {
				return err
			}
			select {
			case <-w.Batches():
			case <-time.After(time.Minute):
				return fmt.Errorf("no batch for a save of %s", name)
			}
			if i >= warmup {
				res.SaveToBatch = append(res.SaveToBatch, time.Since(start))
			}
		}
	case "tree-engine":
		e, err := engine.New(ctx, engine.Config{Root: dir, Kernels: 1, Watch: true, WatchDebounce: c.debounce})
		if err != nil {
			return err
		}
		start := time.Now()
		if err := e.Start(ctx); err != nil {
			return err
		}
		res.Start = time.Since(start)
		res.HeapAfter, res.RSSAfter = heap(), rss()
		if err := e.Stop(ctx); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(&res)
}

// heap is the Go heap in use after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// rss is this process's resident set size.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
