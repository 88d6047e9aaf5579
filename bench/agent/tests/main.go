// Command tests times `ripple run --tests` over runtime agents against the
// same run on local kernels, in one invocation, and prints one table
// (the target: efficiency >= 85% of the ideal over 4 agents x 2
// kernels). It builds cmd/ripple, writes a suite of -tests tests sleeping
// -sleep each (modules of -per-module tests: ripple hands a module's
// tests to one kernel, so a suite needs more modules than kernels), and
// runs, alternately, -repeat times each:
//
//   - local: ripple run --tests --kernels A*K (children of the run);
//   - agents: ripple run --tests --agents-listen 127.0.0.1:0 --kernels A*K
//     with A `ripple agent --kernels K --preload pytest` processes started
//     beside it, each in a copy of the suite (its own working directory),
//     on loopback (-preload "" for agents whose kernels start cold).
//
// What is measured, from the run's own log (--log-level debug) and JSON
// report: the run's phase starts when it has its kernels (agents: A*K
// agent kernels connected and ready; local: when it starts its kernels,
// so the local figure includes their start), collection is that start to
// the last kernel's collection (every kernel collects, as pytest-xdist's
// workers do), the tests phase is collection to the last result. Ideal =
// collection + tests x sleep / kernels; efficiency = ideal / (collection +
// tests phase). With the collection measured in the run itself (ideal A)
// the figure is the distribution's; ideal B counts collection as one
// plain `pytest --collect-only` process on the same suite (what the
// collection would cost if the kernels' collections did not share the
// machine's cores), a stricter figure. Medians of -repeat.
//
//	go run ./bench/agent/tests [-tests 400] [-sleep 20ms] [-agents 4] [-kernels 2] [-repeat 3] [-python /usr/bin/python3]
package main

import (
	"bufio"
	"bytes"
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
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
)

func main() {
	tests := flag.Int("tests", 400, "tests in the suite")
	sleep := flag.Duration("sleep", 20*time.Millisecond, "sleep of each test")
	perModule := flag.Int("per-module", 10, "tests per module")
	agents := flag.Int("agents", 4, "ripple agent processes")
	kernels := flag.Int("kernels", 2, "kernels per agent")
	repeat := flag.Int("repeat", 3, "runs of each peer (medians)")
	python := flag.String("python", "/usr/bin/python3", "interpreter with pytest, for every kernel and for pytest")
	split := flag.Bool("split", false, "run with --split-collection (each kernel imports only its share of the test modules)")
	preload := flag.String("preload", "pytest", "the agents' --preload (their kernels import it when they start, as a test run's Slurm agents do); \"\" for cold kernels")
	flag.Parse()
	b := &bench{tests: *tests, sleep: *sleep, perModule: *perModule, agents: *agents, perAgent: *kernels, python: *python, split: *split, preload: *preload}
	if err := b.run(*repeat); err != nil {
		fmt.Fprintln(os.Stderr, "bench/agent/tests:", err)
		os.Exit(1)
	}
}

type bench struct {
	tests, perModule, agents, perAgent int
	sleep                              time.Duration
	python                             string
	tmp, bin, suite                    string
	split                              bool   // ripple run --split-collection
	preload                            string // ripple agent --preload
}

// sample is one run's figures.
type sample struct {
	wall    time.Duration // the ripple run process, start to exit
	collect time.Duration // phase start (kernels ready) to the last kernel's collection
	phase   time.Duration // phase start to the last result (the report's duration)
}

func (b *bench) run(repeat int) error {
	if err := exec.Command(b.python, "-c", "import pytest").Run(); err != nil {
		return fmt.Errorf("%s cannot import pytest (apt install python3-pytest): %v", b.python, err)
	}
	var err error
	if b.tmp, err = os.MkdirTemp("", "ripple-bench-agent-tests-"); err != nil {
		return err
	}
	defer os.RemoveAll(b.tmp)
	b.bin = filepath.Join(b.tmp, "ripple")
	if out, err := exec.Command("go", "build", "-o", b.bin, "./cmd/ripple").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	b.suite = filepath.Join(b.tmp, "suite")
	if err := b.writeSuite(b.suite); err != nil {
		return err
	}
	var plain []time.Duration
	for range max(repeat, 3) {
		start := time.Now()
		cmd := exec.Command(b.python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider")
		cmd.Dir = b.suite
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("pytest --collect-only: %v\n%s", err, out)
		}
		plain = append(plain, time.Since(start))
	}
	var local, remote []sample
	for i := range repeat {
		s, err := b.local()
		if err != nil {
			return fmt.Errorf("local run %d: %w", i+1, err)
		}
		local = append(local, s)
		if s, err = b.overAgents(); err != nil {
			return fmt.Errorf("agents run %d: %w", i+1, err)
		}
		remote = append(remote, s)
	}

	k := b.agents * b.perAgent
	work := time.Duration(b.tests) * b.sleep / time.Duration(k)
	cPlain := median(plain)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%d tests x %s, %d modules, %d kernels (median of %d)\tprocess wall\tcollection\ttests phase\tcollection + tests\tideal A\teff. A\tideal B\teff. B\t\n",
		b.tests, b.sleep, (b.tests+b.perModule-1)/b.perModule, k, repeat)
	row := func(name string, ss []sample) {
		wall := median(pick(ss, func(s sample) time.Duration { return s.wall }))
		col := median(pick(ss, func(s sample) time.Duration { return s.collect }))
		ph := median(pick(ss, func(s sample) time.Duration { return s.phase }))
		idealA, idealB := col+work, cPlain+work
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\t%s\t%.0f%%\t\n", name, ms(wall), ms(col), ms(ph-col), ms(ph),
			ms(idealA), 100*float64(idealA)/float64(ph), ms(idealB), 100*float64(idealB)/float64(ph))
	}
	row(fmt.Sprintf("local: ripple run --kernels %d (kernel start in collection)", k), local)
	agentArgs := fmt.Sprintf("--kernels %d", b.perAgent)
	if b.preload != "" {
		agentArgs += " --preload " + b.preload
	}
	row(fmt.Sprintf("agents: %d x ripple agent %s, loopback", b.agents, agentArgs), remote)
	fmt.Fprintf(w, "ideal tests phase: %d x %s / %d kernels\t\t\t%s\t\t\t\t\t\t\n", b.tests, b.sleep, k, ms(work))
	fmt.Fprintf(w, "one pytest --collect-only process (collection of ideal B)\t%s\t\t\t\t\t\t\t\t\n", ms(cPlain))
	return w.Flush()
}

// writeSuite writes the tests into modules of perModule tests.
func (b *bench) writeSuite(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for m := 0; m*b.perModule < b.tests; m++ {
		var s strings.Builder
		s.WriteString("import time\n")
		for i := m * b.perModule; i < min(b.tests, (m+1)*b.perModule); i++ {
			fmt.Fprintf(&s, "\n\ndef test_%05d():\n    time.sleep(%g)\n", i, b.sleep.Seconds())
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("test_m%03d.py", m)), []byte(s.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) runArgs(report string) []string {
	args := []string{"run", b.suite, "--tests", "--python", b.python, "--kernels", fmt.Sprint(b.agents * b.perAgent),
		"--json", report, "--log-level", "debug"}
	if b.split {
		args = append(args, "--split-collection")
	}
	return append(args, "--", "-p", "no:cacheprovider")
}

// local runs the suite on local kernels.
func (b *bench) local() (sample, error) {
	report := filepath.Join(b.tmp, "local.json")
	var stderr bytes.Buffer
	cmd := exec.Command(b.bin, b.runArgs(report)...)
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%v\n%s", err, stderr.String())
	}
	return b.read(time.Since(start), report, stderr.String())
}

var addrLine = regexp.MustCompile(`ripple: agents connect to (127\.0\.0\.1:\d+) `)

// overAgents runs the suite with the kernels of agent processes.
func (b *bench) overAgents() (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report := filepath.Join(b.tmp, "agents.json")
	const token = "bench-agent-tests"
	args := append(b.runArgs(report)[:2], append([]string{"--agents-listen", "127.0.0.1:0"}, b.runArgs(report)[2:]...)...)
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = append(os.Environ(), "RIPPLE_AGENT_TOKEN="+token)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	// The run's stderr: the agents' address first, all of it kept.
	var mu sync.Mutex
	var stderr strings.Builder
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := addrLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var agents []*exec.Cmd
	var agentLog syncbuf.Buffer
	defer func() {
		for _, a := range agents {
			a.Process.Kill()
			a.Wait()
		}
	}()
	select {
	case a := <-addr:
		for i := range b.agents {
			dir := filepath.Join(b.tmp, fmt.Sprintf("agent%d", i))
			os.RemoveAll(dir)
			if err := b.writeSuite(dir); err != nil {
				return sample{}, err
			}
			ac := exec.Command(b.bin, "agent", "--coordinator", a, "--token", token, "--kernels", fmt.Sprint(b.perAgent),
				"--python", b.python, "--root", dir, "--spare=false", "--log-level", "warn", "--host", fmt.Sprintf("bench%d", i),
				"--preload", b.preload)
			ac.Stderr = &agentLog // shown when the run fails
			if err := ac.Start(); err != nil {
				return sample{}, err
			}
			agents = append(agents, ac)
		}
	case <-ctx.Done():
		return sample{}, fmt.Errorf("no agents address")
	}
	err := cmd.Wait()
	wall := time.Since(start)
	pw.Close()
	<-scanned
	mu.Lock()
	text := stderr.String()
	mu.Unlock()
	if err != nil {
		return sample{}, fmt.Errorf("%v\n%s\nagents:\n%s", err, text, agentLog.String())
	}
	for _, a := range agents {
		a.Wait() // the run's end shuts them down
	}
	agents = nil
	return b.read(wall, report, text)
}

var collectedLine = regexp.MustCompile(`msg="kernels collected" after=(\S+)`)

// read takes the collection time from the run's log and its phase from
// the report.
func (b *bench) read(wall time.Duration, report, log string) (sample, error) {
	m := collectedLine.FindStringSubmatch(log)
	if m == nil {
		return sample{}, fmt.Errorf("no collection time in the run's log:\n%s", log)
	}
	col, err := time.ParseDuration(m[1])
	if err != nil {
		return sample{}, err
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		return sample{}, err
	}
	var rep struct {
		Duration float64 `json:"duration"`
		Summary  struct {
			Total, Passed int
		} `json:"summary"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		return sample{}, err
	}
	if rep.Summary.Total != b.tests || rep.Summary.Passed != b.tests {
		return sample{}, fmt.Errorf("report: %d of %d passed, want %d", rep.Summary.Passed, rep.Summary.Total, b.tests)
	}
	return sample{wall: wall, collect: col, phase: time.Duration(rep.Duration * float64(time.Second))}, nil
}

func pick(ss []sample, f func(sample) time.Duration) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
