// Command kernel compares ripple's kernel with Jupyter's ipykernel on the
// kernel's targets (round trip, output streaming, interrupt latency,
// start-up, reset) and prints one table. Both sides run /usr/bin/python3
// (or -python). Run it with bench/kernel/run.sh, which installs Jupyter's
// Debian packages when they are missing.
//
//	go run ./bench/kernel [-python /usr/bin/python3] [-n 2000] [-no-jupyter]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/ripple-run/ripple/kernel"
)

// The workloads, identical on both sides (see jupyter.py).
const (
	stdoutCode  = "import sys\ns = 'x' * 65535 + '\\n'\nfor _ in range(800): sys.stdout.write(s)"
	stdoutBytes = 800 * 65536
	busyCode    = "print('go', flush=True)\nwhile True: pass"
)

// results holds one side's figures; the JSON names are jupyter.py's.
type results struct {
	RTp50us    float64  `json:"rt_p50_us"`
	RTp99us    float64  `json:"rt_p99_us"`
	StdoutMBs  float64  `json:"stdout_mb_s"`
	IntP50ms   float64  `json:"int_p50_ms"`
	IntMaxms   float64  `json:"int_max_ms"`
	StartP50ms float64  `json:"start_p50_ms"`
	ResetP50ms float64  `json:"restart_p50_ms"`
	Python     string   `json:"python"`
	KernelArgv []string `json:"kernel_argv"`
}

func main() {
	python := flag.String("python", "/usr/bin/python3", "interpreter for both sides")
	n := flag.Int("n", 2000, "round trips to time")
	noJupyter := flag.Bool("no-jupyter", false, "measure ripple only")
	flag.Parse()
	if err := run(*python, *n, !*noJupyter); err != nil {
		fmt.Fprintln(os.Stderr, "bench/kernel:", err)
		os.Exit(1)
	}
}

func run(python string, n int, withJupyter bool) error {
	ctx := context.Background()
	py, err := kernel.FindPython(ctx, python, ".")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ripple: measuring on %s (Python %s), %d CPUs\n", py.Path, py.Version, runtime.NumCPU())
	rip, err := measureRipple(ctx, py, n)
	if err != nil {
		return fmt.Errorf("ripple: %w", err)
	}
	var jup *results
	if withJupyter {
		fmt.Fprintln(os.Stderr, "jupyter: measuring ipykernel (takes a minute)")
		if jup, err = measureJupyter(python, n); err != nil {
			return fmt.Errorf("jupyter: %w", err)
		}
	}
	printTable(rip, jup)
	return nil
}

func measureRipple(ctx context.Context, py kernel.Interpreter, n int) (*results, error) {
	root, err := os.MkdirTemp("", "ripple-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	cfg := kernel.Config{Python: py, Root: root, LogDir: root}
	if _, err := kernel.ScriptDir(); err != nil {
		return nil, err
	}
	r := &results{Python: py.Version}

	var starts []time.Duration
	for range 10 {
		t0 := time.Now()
		k, err := kernel.Start(ctx, cfg)
		if err != nil {
			return nil, err
		}
		starts = append(starts, time.Since(t0))
		k.Stop(ctx)
	}
	r.StartP50ms = ms(percentile(starts, 0.5))

	k, err := kernel.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer k.Stop(ctx)

	for range 200 {
		if err := k.Eval(ctx, "x = 1", nil); err != nil {
			return nil, err
		}
	}
	rts := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if err := k.Eval(ctx, "x = 1", nil); err != nil {
			return nil, err
		}
		rts = append(rts, time.Since(t0))
	}
	r.RTp50us = us(percentile(rts, 0.5))
	r.RTp99us = us(percentile(rts, 0.99))

	var rates []float64
	for range 5 {
		var got atomic.Int64
		sink := kernel.SinkFuncs{OutputFunc: func(_ kernel.Stream, b []byte) { got.Add(int64(len(b))) }}
		t0 := time.Now()
		if err := k.Eval(ctx, stdoutCode, sink); err != nil {
			return nil, err
		}
		dt := time.Since(t0)
		if got.Load() != stdoutBytes {
			return nil, fmt.Errorf("got %d bytes of output, want %d", got.Load(), stdoutBytes)
		}
		rates = append(rates, stdoutBytes/dt.Seconds()/1e6)
	}
	slices.Sort(rates)
	r.StdoutMBs = rates[len(rates)/2]

	var lat []time.Duration
	for range 20 {
		d, err := interruptOnce(ctx, k)
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	r.IntP50ms = ms(percentile(lat, 0.5))
	r.IntMaxms = ms(slices.Max(lat))

	r.ResetP50ms, err = measureReset(ctx, cfg)
	return r, err
}

// interruptOnce starts a busy loop, waits for its first output, then
// cancels the call and times how long the call takes to return.
func interruptOnce(ctx context.Context, k *kernel.Kernel) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{})
	var once sync.Once
	sink := kernel.SinkFuncs{OutputFunc: func(kernel.Stream, []byte) { once.Do(func() { close(started) }) }}
	errc := make(chan error, 1)
	go func() { errc <- k.Eval(ctx, busyCode, sink) }()
	select {
	case <-started:
	case err := <-errc:
		return 0, fmt.Errorf("busy loop ended early: %v", err)
	}
	t0 := time.Now()
	cancel()
	err := <-errc
	d := time.Since(t0)
	if !errors.Is(err, kernel.ErrInterrupted) {
		return 0, fmt.Errorf("interrupt: %v", err)
	}
	return d, nil
}

// measureReset times Pool.Restart of a one-slot pool whose warm spare is ready.
func measureReset(ctx context.Context, cfg kernel.Config) (float64, error) {
	p := kernel.NewPool(kernel.PoolConfig{Kernel: cfg, Size: 1})
	if err := p.Start(ctx); err != nil {
		return 0, err
	}
	defer p.Stop(ctx)
	var resets []time.Duration
	for range 10 {
		if err := waitSpare(ctx, p); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := p.Restart(ctx, 0, "bench"); err != nil {
			return 0, err
		}
		resets = append(resets, time.Since(t0))
		if err := p.Eval(ctx, 0, "x = 1", nil); err != nil {
			return 0, err
		}
	}
	return ms(percentile(resets, 0.5)), nil
}

func waitSpare(ctx context.Context, p *kernel.Pool) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, st := range p.Status() {
			if st.State == kernel.StateSpare {
				return nil
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return errors.New("no warm spare within a minute")
}

func measureJupyter(python string, n int) (*results, error) {
	if err := exec.Command(python, "-c", "import jupyter_client, ipykernel").Run(); err != nil {
		return nil, fmt.Errorf("%s cannot import jupyter_client and ipykernel: install python3-jupyter-client python3-ipykernel (bench/kernel/run.sh does)", python)
	}
	script, err := filepath.Abs(filepath.Join(sourceDir(), "jupyter.py"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(python, script, fmt.Sprint(n))
	cmd.Env = append(os.Environ(), "PYDEVD_DISABLE_FILE_VALIDATION=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, stderr.String())
	}
	var r results
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("output %q: %v", stdout.String(), err)
	}
	if len(r.KernelArgv) == 0 || r.KernelArgv[0] != python {
		return nil, fmt.Errorf("ipykernel ran on %v, not %s: the comparison would be unfair", r.KernelArgv, python)
	}
	return &r, nil
}

// sourceDir is where jupyter.py lives: next to this file when run with go
// run from the repository root.
func sourceDir() string {
	if _, err := os.Stat(filepath.Join("bench", "kernel", "jupyter.py")); err == nil {
		return filepath.Join("bench", "kernel")
	}
	return "."
}

type row struct {
	name        string
	rip, jup    float64
	unit        string
	lowerBetter bool
	target      string
	met         func(rip, jup float64, haveJup bool) bool
}

func printTable(rip, jup *results) {
	rows := []row{
		{"x = 1 round trip p50", rip.RTp50us, val(jup, func(r *results) float64 { return r.RTp50us }), "us", true,
			"<= 100 us and >= 50x", func(r, j float64, h bool) bool { return r <= 100 && (!h || j/r >= 50) }},
		{"x = 1 round trip p99", rip.RTp99us, val(jup, func(r *results) float64 { return r.RTp99us }), "us", true, "", nil},
		{"stdout throughput (50 MiB)", rip.StdoutMBs, val(jup, func(r *results) float64 { return r.StdoutMBs }), "MB/s", false,
			">= 10x", func(r, j float64, h bool) bool { return h && r/j >= 10 }},
		{"interrupt latency p50", rip.IntP50ms, val(jup, func(r *results) float64 { return r.IntP50ms }), "ms", true,
			"<= 2 ms", func(r, j float64, h bool) bool { return r <= 2 }},
		{"interrupt latency max (20)", rip.IntMaxms, val(jup, func(r *results) float64 { return r.IntMaxms }), "ms", true, "", nil},
		{"start to ready p50", rip.StartP50ms, val(jup, func(r *results) float64 { return r.StartP50ms }), "ms", true,
			"<= 150 ms", func(r, j float64, h bool) bool { return r <= 150 }},
		{"reset (ripple: warm spare) p50", rip.ResetP50ms, val(jup, func(r *results) float64 { return r.ResetP50ms }), "ms", true,
			"<= 10 ms", func(r, j float64, h bool) bool { return r <= 10 }},
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "metric\tripple\tjupyter\tripple advantage\ttarget\tmet\t\n")
	for _, r := range rows {
		jupText, ratio := "-", "-"
		if jup != nil {
			jupText = format(r.jup, r.unit)
			adv := r.jup / r.rip
			if !r.lowerBetter {
				adv = r.rip / r.jup
			}
			ratio = fmt.Sprintf("%.1fx", adv)
		}
		met := ""
		if r.met != nil {
			met = "no"
			if r.met(r.rip, r.jup, jup != nil) {
				met = "yes"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t\n", r.name, format(r.rip, r.unit), jupText, ratio, r.target, met)
	}
	w.Flush()
	py := rip.Python
	if jup != nil {
		py += ", jupyter on " + strings.Join(jup.KernelArgv[:1], "") + " " + jup.Python
	}
	fmt.Printf("(python %s; %d CPUs)\n", py, runtime.NumCPU())
}

func val(r *results, f func(*results) float64) float64 {
	if r == nil {
		return 0
	}
	return f(r)
}

func format(v float64, unit string) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)) * p)
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
