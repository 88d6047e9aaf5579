// Command server measures `ripple serve` over real WebSockets and prints a
// table of these figures against their targets:
//
//   - keystroke-to-value: text/applyEdit of one trivial statement of a
//     1,000-statement main, until the client has received that
//     expression's new value (target p50 <= 12 ms, p99 <= 40 ms);
//   - fan-out: 200 clients, each with its own context on the same project;
//     one edit, until every client has its executionComplete (p50, p99,
//     slowest client) and the server's memory;
//   - idle cost: the server's RSS with 200 idle connections.
//
// Each part runs its own `ripple serve` process (built from ./cmd/ripple
// unless -bin is given) on a generated project in a temp directory, and
// talks to it with servertest.Client (gorilla/websocket). Run it from the
// repository root:
//
//	go run ./bench/server            # -edits, -clients, -fanout-edits, -statements
package main

import (
	"bufio"
	"context"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

func main() {
	bin := flag.String("bin", "", "ripple binary (default: go build ./cmd/ripple into a temp dir)")
	edits := flag.Int("edits", 300, "keystroke edits to time")
	statements := flag.Int("statements", 1000, "statements of the keystroke benchmark's main")
	clients := flag.Int("clients", 200, "clients of the fan-out and idle benchmarks (0: keystrokes only)")
	fanEdits := flag.Int("fanout-edits", 20, "edits of the fan-out benchmark")
	fanStatements := flag.Int("fanout-statements", 100, "statements of the fan-out benchmark's main")
	flag.DurationVar(&keystrokePause, "pause", 0, "time between two keystrokes once the value is back (0: none; 160ms lets the kernel write the value journal in between)")
	flag.Parse()
	if err := run(*bin, *edits, *statements, *clients, *fanEdits, *fanStatements); err != nil {
		fmt.Fprintln(os.Stderr, "bench/server:", err)
		os.Exit(1)
	}
}

func run(bin string, edits, statements, clients, fanEdits, fanStatements int) error {
	tmp, err := os.MkdirTemp("", "ripple-bench-server-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "ripple")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/ripple-run/ripple/cmd/ripple").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}

	var rows [][3]string
	add := func(name, value, target string) { rows = append(rows, [3]string{name, value, target}) }

	// Keystroke to value.
	ks, cpu, err := keystroke(bin, filepath.Join(tmp, "keystroke"), statements, edits)
	if err != nil {
		return fmt.Errorf("keystroke: %w", err)
	}
	name := fmt.Sprintf("keystroke-to-value p50 (%d-statement main, %d edits)", statements, edits)
	if keystrokePause > 0 {
		name = fmt.Sprintf("keystroke-to-value p50 (%d-statement main, %d edits %v apart)", statements, edits, keystrokePause)
	}
	add(name, ms(percentile(ks, 50)), "<= 12 ms")
	add("keystroke-to-value p99", ms(percentile(ks, 99)), "<= 40 ms")
	add("keystroke-to-value max", ms(percentile(ks, 100)), "")
	// CPU time is what a busy machine disturbs least: the latency above
	// moves with the load, the work per edit much less.
	add("  CPU per keystroke: server", ms(cpu.server), "user+system, /proc")
	add("  CPU per keystroke: kernels", ms(cpu.kernels), "")

	if clients == 0 { // -clients 0: the keystroke figures only
		fmt.Printf("%-62s %-16s %s\n", "ripple serve over WebSockets", "measured", "target")
		for _, r := range rows {
			fmt.Printf("%-62s %-16s %s\n", r[0], r[1], r[2])
		}
		return nil
	}

	// Fan-out.
	fo, err := fanout(bin, filepath.Join(tmp, "fanout"), fanStatements, clients, fanEdits)
	if err != nil {
		return fmt.Errorf("fan-out: %w", err)
	}
	add(fmt.Sprintf("fan-out p50 (%d clients, %d edits, %d-statement main)", clients, fanEdits, fanStatements), ms(percentile(fo.all, 50)), "")
	add("fan-out p99", ms(percentile(fo.all, 99)), "")
	add("fan-out slowest client per edit, p50", ms(percentile(fo.last, 50)), "")
	add("server RSS after fan-out (peak)", fmt.Sprintf("%s (%s)", mib(fo.rss), mib(fo.hwm)), "")
	add(fmt.Sprintf("kernels RSS (%d processes)", fo.kernels), mib(fo.kernelRSS), "")

	// Idle cost.
	idle, err := idleCost(bin, filepath.Join(tmp, "idle"), clients)
	if err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	add("server RSS, no connection", mib(idle.before), "")
	add(fmt.Sprintf("server RSS, %d idle connections", clients), mib(idle.after), "")
	add("per idle connection", fmt.Sprintf("%.1f KiB", float64(idle.after-idle.before)/1024/float64(clients)), "")

	fmt.Printf("%-62s %-16s %s\n", "ripple serve over WebSockets", "measured", "target")
	for _, r := range rows {
		fmt.Printf("%-62s %-16s %s\n", r[0], r[1], r[2])
	}
	return nil
}

// --- the server process

type serveProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

var urlLine = regexp.MustCompile(`ripple: serving .+ at (ws://\S+)`)

func startServe(bin, dir string, args ...string) (*serveProc, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--log-level", "warn"}, append(args, dir)...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serveProc{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stdout)
		close(lines)
	}()
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	select {
	case line, ok := <-lines:
		m := urlLine.FindStringSubmatch(line)
		if !ok || m == nil {
			p.stop()
			return nil, fmt.Errorf("no URL line (got %q)", line)
		}
		p.url = m[1]
		return p, nil
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, errors.New("no URL line within 60 s")
	}
}

// stop asks for a graceful shutdown and waits.
func (p *serveProc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// memory reads VmRSS and VmHWM of a process, in bytes.
func memory(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			hwm = kb * 1024
		}
	}
	return rss, hwm
}

// children returns the processes whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// --- projects and clients

// writeMain writes a main of n independent trivial statements v{i} = i.
func writeMain(dir string, n int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lines := []string{"def main():"}
	for i := range n {
		lines = append(lines, fmt.Sprintf("    v%d = %d", i, i))
	}
	lines = append(lines, "")
	return lines, os.WriteFile(filepath.Join(dir, "main.py"), []byte(strings.Join(lines, "\n")), 0o644)
}

func version(text string) string {
	sum := sha3.Sum224([]byte(text))
	return hex.EncodeToString(sum[:])
}

// session is a client with one context running main:main.
type session struct {
	c  *servertest.Client
	id protocol.ContextID
}

func open(ctx context.Context, url, clientID string, withContext bool) (*session, error) {
	c, _, err := servertest.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	s := &session{c: c}
	if err := c.Call(ctx, protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: clientID}, nil); err != nil {
		c.Close()
		return nil, err
	}
	if !withContext {
		return s, nil
	}
	var res protocol.CreateContextResult
	if err := c.Call(ctx, protocol.MethodCreateContext, protocol.CreateContextParams{}, &res); err != nil {
		c.Close()
		return nil, err
	}
	s.id = res.ContextID
	if err := c.Call(ctx, protocol.MethodPush, protocol.PushParams{ContextID: s.id,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil); err != nil {
		c.Close()
		return nil, err
	}
	_, err = s.waitEnd(ctx)
	return s, err
}

// waitEnd waits for the end of the context's run and returns when the
// client received it.
func (s *session) waitEnd(ctx context.Context) (time.Time, error) {
	m, err := s.c.WaitFor(ctx, func(m servertest.Message) bool {
		return m.IsNotification() && (m.Method == protocol.NotifyExecutionComplete || m.Method == protocol.NotifyExecutionFailed) &&
			strings.Contains(string(m.Params), string(s.id))
	})
	if err != nil {
		return time.Time{}, err
	}
	if m.Method == protocol.NotifyExecutionFailed {
		return time.Time{}, fmt.Errorf("run failed: %s", m.Params)
	}
	return m.Received, nil
}

// editor holds main.py's text to build edits of one statement.
type editor struct {
	lines []string
	ver   string
}

// edit sets statement k to a new value and returns the edit and the
// expression id whose update shows it.
func (e *editor) edit(k, value int) (protocol.ApplyEditParams, string) {
	row := k + 1
	old := e.lines[row]
	e.lines[row] = fmt.Sprintf("    v%d = %d", k, value)
	text := strings.Join(e.lines, "\n")
	p := protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path: "main.py",
		Edits: []protocol.TextEdit{{Range: protocol.Range{
			Start: protocol.Position{Line: row, Character: 0},
			End:   protocol.Position{Line: row, Character: len([]rune(old))},
		}, Text: e.lines[row]}},
		OldVersion: e.ver,
		NewVersion: version(text),
	}}
	e.ver = p.Edit.NewVersion
	return p, strconv.Itoa(value)
}

// --- the benchmarks

// keystrokePause is the -pause flag: the typist's pause between the
// value of one keystroke and the next keystroke. The kernels write the
// value journal when idle for 150 ms, so a pause just past that puts a
// keystroke right on a write (its cost on the keystroke is what it shows).
var keystrokePause time.Duration

// cpuPerEdit is the CPU time the server process and its kernels spent per
// timed edit.
type cpuPerEdit struct{ server, kernels time.Duration }

// cpuTime is the user+system time of process pid, from /proc (clock ticks
// of 10 ms: over hundreds of edits, fine enough).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func keystroke(bin, dir string, statements, edits int) ([]time.Duration, cpuPerEdit, error) {
	var cpu cpuPerEdit
	lines, err := writeMain(dir, statements)
	if err != nil {
		return nil, cpu, err
	}
	p, err := startServe(bin, dir, "--kernels", "1")
	if err != nil {
		return nil, cpu, err
	}
	defer p.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := open(ctx, p.url, "keystroke", true)
	if err != nil {
		return nil, cpu, err
	}
	defer s.c.Close()
	var of protocol.OpenFileResult
	if err := s.c.Call(ctx, protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &of); err != nil {
		return nil, cpu, err
	}
	ed := &editor{lines: lines, ver: of.CurrentVersion}
	r := rand.New(rand.NewPCG(1, 2))
	var out []time.Duration
	var server0, kernels0 time.Duration
	kernelsCPU := func() (t time.Duration) {
		for _, k := range children(p.cmd.Process.Pid) {
			t += cpuTime(k)
		}
		return t
	}
	for i := range edits + 10 { // 10 warm-up edits
		if i == 10 {
			server0, kernels0 = cpuTime(p.cmd.Process.Pid), kernelsCPU()
		}
		k := r.IntN(statements)
		params, preview := ed.edit(k, 1_000_000+i)
		id := protocol.ExpressionID(fmt.Sprintf("main:main/v%d", k))
		start := time.Now()
		if err := s.c.Call(ctx, protocol.MethodTextApplyEdit, params, nil); err != nil {
			return nil, cpu, err
		}
		m, err := s.c.WaitFor(ctx, func(m servertest.Message) bool {
			if m.Method != protocol.NotifyExpressionUpdates {
				return false
			}
			var u protocol.ExpressionUpdatesParams
			if json.Unmarshal(m.Params, &u) != nil {
				return false
			}
			return slices.ContainsFunc(u.Updates, func(u protocol.ExpressionUpdate) bool {
				return u.ExpressionID == id && u.Payload.Type == protocol.PayloadValue && u.Payload.Preview == preview
			})
		})
		if err != nil {
			return nil, cpu, fmt.Errorf("waiting for %s = %s: %w", id, preview, err)
		}
		if i >= 10 {
			out = append(out, m.Received.Sub(start))
		}
		if _, err := s.waitEnd(ctx); err != nil {
			return nil, cpu, err
		}
		time.Sleep(keystrokePause)
	}
	cpu.server = (cpuTime(p.cmd.Process.Pid) - server0) / time.Duration(edits)
	cpu.kernels = (kernelsCPU() - kernels0) / time.Duration(edits)
	return out, cpu, nil
}

type fanoutResult struct {
	all, last           []time.Duration
	rss, hwm, kernelRSS int64
	kernels             int
}

func fanout(bin, dir string, statements, clients, edits int) (*fanoutResult, error) {
	lines, err := writeMain(dir, statements)
	if err != nil {
		return nil, err
	}
	p, err := startServe(bin, dir)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	sessions := make([]*session, clients)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	sem := make(chan struct{}, 16)
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			s, err := open(ctx, p.url, fmt.Sprintf("fan-%03d", i), true)
			if err != nil {
				errs <- err
				return
			}
			sessions[i] = s
		}()
	}
	wg.Wait()
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.c.Close()
			}
		}
	}()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	editorClient := sessions[0]
	var of protocol.OpenFileResult
	if err := editorClient.c.Call(ctx, protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &of); err != nil {
		return nil, err
	}
	ed := &editor{lines: lines, ver: of.CurrentVersion}
	res := &fanoutResult{}
	for i := range edits {
		params, _ := ed.edit(i%statements, 2_000_000+i)
		start := time.Now()
		if err := editorClient.c.Call(ctx, protocol.MethodTextApplyEdit, params, nil); err != nil {
			return nil, err
		}
		ends := make([]time.Duration, clients)
		for j, s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				at, err := s.waitEnd(ctx)
				if err != nil {
					errs <- err
					return
				}
				ends[j] = at.Sub(start)
			}()
		}
		wg.Wait()
		select {
		case err := <-errs:
			return nil, err
		default:
		}
		res.all = append(res.all, ends...)
		res.last = append(res.last, slices.Max(ends))
	}
	res.rss, res.hwm = memory(p.cmd.Process.Pid)
	for _, k := range children(p.cmd.Process.Pid) {
		rss, _ := memory(k)
		res.kernelRSS += rss
		res.kernels++
	}
	return res, nil
}

type idleResult struct{ before, after int64 }

func idleCost(bin, dir string, clients int) (*idleResult, error) {
	if _, err := writeMain(dir, 10); err != nil {
		return nil, err
	}
	p, err := startServe(bin, dir, "--kernels", "1")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One connection first, so the baseline includes what any first
	// connection costs (handshake code paths, pools).
	first, err := open(ctx, p.url, "idle-first", false)
	if err != nil {
		return nil, err
	}
	defer first.c.Close()
	res := &idleResult{}
	res.before, _ = memory(p.cmd.Process.Pid)
	var sessions []*session
	defer func() {
		for _, s := range sessions {
			s.c.Close()
		}
	}()
	for i := range clients {
		s, err := open(ctx, p.url, fmt.Sprintf("idle-%03d", i), false)
		if err != nil {
			return nil, err
		}
		sessions = append(sessions, s)
	}
	// A status round trip on every connection: all are fully set up.
	for _, s := range sessions {
		if err := s.c.Call(ctx, protocol.MethodRuntimeStatus, nil, nil); err != nil {
			return nil, err
		}
	}
	res.after, _ = memory(p.cmd.Process.Pid)
	return res, nil
}

// --- figures

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
