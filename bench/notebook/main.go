// Command notebook measures the notebook users' targets (scripts, rich
// values) against a real `ripple serve` over a WebSocket and prints one table:
//
//   - a 200-statement script (main:__main__, each statement ~1 ms of work,
//     independent leaves):
//     one edited leaf re-run against a from-scratch run (recompute "all"),
//     edit or recompute until executionComplete; target ratio <= 1/50;
//   - a 1-megapixel matplotlib figure (10x10 in at 100 dpi): its PNG
//     through the ripple:display visualization, from the statement's
//     update reaching the page to the bundle reaching it (target <= 150
//     ms), and plt.show()'s displayData against its statement's update.
//
// Run: go run ./bench/notebook [-edits N] [-python /usr/bin/python3]
// (bash bench/notebook/run.sh adds the mimeTypes rows of mime.py).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"crypto/sha3"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

var urlLine = regexp.MustCompile(`ripple: serving .+ at (ws://\S+)`)

func main() {
	edits := flag.Int("edits", 20, "edits (and recomputes) to time")
	python := flag.String("python", "/usr/bin/python3", "interpreter with matplotlib")
	flag.Parse()
	bin, err := build()
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(filepath.Dir(bin))
	fmt.Printf("%-58s %-22s %s\n", "benchmark", "result", "target / note")
	fmt.Println(strings.Repeat("-", 118))
	if err := scriptEdit(bin, *python, *edits); err != nil {
		fail(err)
	}
	if err := plotLatency(bin, *python, *edits); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/notebook:", err)
	os.Exit(1)
}

func build() (string, error) {
	dir, err := os.MkdirTemp("", "ripple-bench-notebook-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ripple")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ripple")
	cmd.Stderr = os.Stderr
	return bin, cmd.Run()
}

type server struct {
	c    *servertest.Client
	stop func()
	ctx  context.Context
}

func serve(bin, python, dir string) (*server, error) {
	cmd := exec.Command(bin, "serve", "--kernels", "1", "--log-level", "warn", "--python", python, dir)
	cmd.Stderr = io.Discard
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		stop()
		return nil, fmt.Errorf("ripple serve printed nothing")
	}
	m := urlLine.FindStringSubmatch(sc.Text())
	go io.Copy(io.Discard, stdout)
	if m == nil {
		stop()
		return nil, fmt.Errorf("ripple serve printed %q", sc.Text())
	}
	ctx := context.Background()
	c, _, err := servertest.Dial(ctx, m[1], nil)
	if err != nil {
		stop()
		return nil, err
	}
	if err := c.Call(ctx, protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "bench"}, nil); err != nil {
		stop()
		return nil, err
	}
	return &server{c: c, stop: func() { c.Close(); stop() }, ctx: ctx}, nil
}

func (s *server) call(method string, params, result any) {
	if err := s.c.Call(s.ctx, method, params, result); err != nil {
		fail(fmt.Errorf("%s: %w", method, err))
	}
}

// until waits for a notification of method that match accepts.
func (s *server) until(method string, match func(json.RawMessage) bool) servertest.Message {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	m, err := s.c.WaitFor(ctx, func(m servertest.Message) bool {
		return m.IsNotification() && m.Method == method && (match == nil || match(m.Params))
	})
	if err != nil {
		fail(fmt.Errorf("waiting for %s: %w", method, err))
	}
	return m
}

func (s *server) push(pointer string) protocol.ContextID {
	var res protocol.CreateContextResult
	s.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
	mp, _ := protocol.ParseMethodPointer(pointer)
	s.call(protocol.MethodPush, protocol.PushParams{ContextID: res.ContextID, StackItem: protocol.NewExplicitCall(mp)}, nil)
	s.until(protocol.NotifyExecutionComplete, nil)
	return res.ContextID
}

func version(text string) string {
	sum := sha3.Sum224([]byte(text))
	return fmt.Sprintf("%x", sum)
}

func p(samples []time.Duration, q float64) time.Duration {
	s := slices.Clone(samples)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s)-1)+0.5))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func row(name, result, note string) { fmt.Printf("%-58s %-22s %s\n", name, result, note) }

// scriptEdit: a 200-statement script, one leaf edited vs from scratch.
func scriptEdit(bin, python string, edits int) error {
	dir, err := os.MkdirTemp("", "ripple-bench-script-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = fmt.Sprintf("s%d = sum(range(%d))", i, 100000+i)
	}
	text := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(text), 0o644); err != nil {
		return err
	}
	s, err := serve(bin, python, dir)
	if err != nil {
		return err
	}
	defer s.stop()
	id := s.push("main:__main__")
	var scratch []time.Duration
	for range edits {
		t0 := time.Now()
		s.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: &protocol.InvalidatedExpressions{All: true}}, nil)
		m := s.until(protocol.NotifyExecutionComplete, nil)
		scratch = append(scratch, m.Received.Sub(t0))
	}
	var open protocol.OpenFileResult
	s.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &open)
	cur := open.Content
	var edit []time.Duration
	reran := 0
	for k := range edits {
		leaf := 100 + k%50
		lines[leaf] = fmt.Sprintf("s%d = sum(range(%d))", leaf, 101000+k)
		next := strings.Join(lines, "\n") + "\n"
		t0 := time.Now()
		s.call(protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
			Path: "main.py", OldVersion: version(cur), NewVersion: version(next),
			Edits: []protocol.TextEdit{{Range: protocol.Range{Start: protocol.Position{Line: leaf}, End: protocol.Position{Line: leaf + 1}}, Text: lines[leaf] + "\n"}},
		}}, nil)
		cur = next
		m := s.untilAny(&reran)
		edit = append(edit, m.Sub(t0))
	}
	row("200-stmt script, from scratch (recompute all): p50", ms(p(scratch, 0.5)), fmt.Sprintf("%d runs, to executionComplete", edits))
	row("200-stmt script, one leaf edited: p50", ms(p(edit, 0.5)), fmt.Sprintf("%d edits, %.1f statements re-run per edit", edits, float64(reran)/float64(edits)))
	row("  ratio edit / from scratch (p50)", fmt.Sprintf("1/%.0f", float64(p(scratch, 0.5))/float64(p(edit, 0.5))), "target <= 1/50")
	return nil
}

// untilAny waits for the run's executionComplete, counting the statements
// it computed (fresh values), and returns when the page had it.
func (s *server) untilAny(reran *int) time.Time {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	for {
		m, err := s.c.Next(ctx)
		if err != nil {
			fail(err)
		}
		if !m.IsNotification() {
			continue
		}
		switch m.Method {
		case protocol.NotifyExpressionUpdates:
			var u protocol.ExpressionUpdatesParams
			if json.Unmarshal(m.Params, &u) == nil {
				for _, x := range u.Updates {
					if x.Payload.Type == protocol.PayloadValue && !x.FromCache {
						*reran++
					}
				}
			}
		case protocol.NotifyExecutionComplete:
			return m.Received
		}
	}
}

// plotLatency: a 1-megapixel figure's PNG to the page.
func plotLatency(bin, python string, runs int) error {
	dir, err := os.MkdirTemp("", "ripple-bench-plot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	text := `import matplotlib.pyplot as plt
fig = plt.figure(figsize=(10, 10), dpi=100)
ax = fig.add_subplot()
line = ax.plot([i % 37 for i in range(1000)])
shown = plt.figure(figsize=(10, 10), dpi=100).add_subplot().plot([i % 37 for i in range(1000)])
plt.show()
`
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(text), 0o644); err != nil {
		return err
	}
	s, err := serve(bin, python, dir)
	if err != nil {
		return err
	}
	defer s.stop()
	id := s.push("main:__main__")
	visID := protocol.VisualizationID("6b1f0c5e-0000-4000-8000-000000000001")
	s.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{
		VisualizationID: visID, ExpressionID: "main:__main__/fig",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: protocol.DisplayVisualization},
	}, nil)
	s.until(protocol.NotifyVisualizationUpdate, nil)
	var vis, show []time.Duration
	var pngBytes int
	var showStmt []time.Duration
	for range runs {
		s.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: &protocol.InvalidatedExpressions{All: true}}, nil)
		var figDone, showDone, bundleAt, displayAt time.Time
		var showTime time.Duration
		for figDone.IsZero() || bundleAt.IsZero() || displayAt.IsZero() || showDone.IsZero() {
			ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
			m, err := s.c.Next(ctx)
			cancel()
			if err != nil {
				return err
			}
			switch m.Method {
			case protocol.NotifyExpressionUpdates:
				var u protocol.ExpressionUpdatesParams
				json.Unmarshal(m.Params, &u)
				for _, x := range u.Updates {
					if x.Payload.Type != protocol.PayloadValue || x.FromCache {
						continue
					}
					switch x.ExpressionID {
					case "main:__main__/fig":
						figDone = m.Received
					case "main:__main__/#1":
						showDone = m.Received
						if len(x.ProfilingInfo) > 0 {
							showTime = time.Duration(x.ProfilingInfo[0].NanoTime)
						}
					}
				}
			case protocol.NotifyVisualizationUpdate:
				var v struct {
					Data map[string]string `json:"data"`
				}
				json.Unmarshal(m.Params, &v)
				pngBytes = len(v.Data["image/png"]) * 3 / 4
				bundleAt = m.Received
			case protocol.NotifyDisplayData:
				displayAt = m.Received
			}
		}
		vis = append(vis, bundleAt.Sub(figDone))
		show = append(show, showDone.Sub(displayAt))
		showStmt = append(showStmt, showTime)
	}
	row("1 MP figure, ripple:display bundle after its statement: p50", ms(p(vis, 0.5)), fmt.Sprintf("target <= 150 ms; p99 %s; PNG %d KiB (+ SVG), render included", ms(p(vis, 0.99)), pngBytes/1024))
	row("1 MP plt.show(): displayData ahead of the statement's update", ms(p(show, 0.5)), fmt.Sprintf("p50; the PNG reaches the page before its statement ends; plt.show() itself %s", ms(p(showStmt, 0.5))))
	return nil
}
