// Command batch measures ripple run against pytest on its targets
// (parallel efficiency, per-test and per-module overhead) and prints one
// table. Both run the same generated suites on the
// same interpreter (/usr/bin/python3 or -python). Run it with
// bench/batch/run.sh, which installs Debian's python3-pytest when missing.
//
//	go run ./bench/batch [-python /usr/bin/python3] [-repeat 3] [-sleepers 200] [-trivial 2000] [-modules 300]
//
// Figures:
//   - sleepers: N tests each sleeping 20 ms; ripple with 2 and 4 kernels
//     against the ideal (N x 20 ms / kernels): efficiency = ideal / wall;
//     serial pytest on the same suite, and its ratio to ripple.
//   - trivial: N tests of two statements; per-test overhead = (wall of N
//     tests - wall of 1 test) / (N - 1), for ripple (1 and 2 kernels) and
//     pytest, so the fixed start-up cost is left out.
//   - modules: M modules of 10 trivial tests each (what a kernel pays per
//     module: compile and import), ripple with 1 and 2 kernels and pytest.
//
// Wall times are of the whole process (start to exit), the median of
// -repeat runs. "ripple run phase" is the report's own duration (engine
// start to last result, kernel boot included, exit excluded).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	python := flag.String("python", "/usr/bin/python3", "interpreter for ripple's kernels and pytest")
	repeat := flag.Int("repeat", 3, "runs per figure (the median is kept)")
	sleepers := flag.Int("sleepers", 200, "tests in the sleeping suite")
	sleep := flag.Duration("sleep", 20*time.Millisecond, "sleep of each sleeping test")
	trivial := flag.Int("trivial", 2000, "tests in the trivial suite")
	modules := flag.Int("modules", 300, "modules of 10 trivial tests each in the many-modules suite (0: skip it)")
	noPytest := flag.Bool("no-pytest", false, "measure ripple only")
	flag.Parse()
	if err := run(*python, *repeat, *sleepers, *sleep, *trivial, *modules, !*noPytest); err != nil {
		fmt.Fprintln(os.Stderr, "bench/batch:", err)
		os.Exit(1)
	}
}

// suite writes n tests whose body is body into modules of at most 100
// tests each, and returns the directory.
func suite(dir, name string, n int, body string) (string, error) {
	return suiteOf(dir, name, n, 100, body)
}

// suiteOf writes n tests whose body is body into modules of perModule
// tests each, and returns the directory.
func suiteOf(dir, name string, n, perModule int, body string) (string, error) {
	root := filepath.Join(dir, name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	for m := 0; m*perModule < n; m++ {
		var b strings.Builder
		b.WriteString("import time\n")
		for i := m * perModule; i < min(n, (m+1)*perModule); i++ {
			fmt.Fprintf(&b, "\n\ndef test_%05d():\n%s", i, body)
		}
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("test_m%03d.py", m)), []byte(b.String()), 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}

// timed runs a command and returns its wall time; it fails when the
// command does.
func timed(name string, args []string, dir string) (time.Duration, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CI=true")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(string(out)))
	}
	return d, nil
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// median runs f repeat times and returns the median result.
func median(repeat int, f func() (time.Duration, error)) (time.Duration, error) {
	var ds []time.Duration
	for range repeat {
		d, err := f()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

// bench is what the figures share: the ripple binary, the interpreter,
// the suites' directory and the table.
type bench struct {
	ripple, python, tmp string
	repeat              int
	withPytest          bool // pytest's figures beside ripple's
	w                   *tabwriter.Writer
}

// rippleRun runs ripple run on a suite and returns the wall time and the
// report's own duration.
func (b *bench) rippleRun(root string, kernels, expect int) (wall, phase time.Duration, err error) {
	report := filepath.Join(b.tmp, "report.json")
	wall, err = median(b.repeat, func() (time.Duration, error) {
		return timed(b.ripple, []string{"run", root, "--tests", "--kernels", fmt.Sprint(kernels), "--python", b.python, "--json", report}, root)
	})
	if err != nil {
		return 0, 0, err
	}
	var doc struct {
		Duration float64        `json:"duration"`
		Summary  map[string]int `json:"summary"`
	}
	data, err := os.ReadFile(report)
	if err != nil {
		return 0, 0, err
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return 0, 0, err
	}
	if doc.Summary["passed"] != expect {
		return 0, 0, fmt.Errorf("ripple run %s: %d passed, want %d", root, doc.Summary["passed"], expect)
	}
	return wall, time.Duration(doc.Duration * float64(time.Second)), nil
}

func (b *bench) pytest(root string) (time.Duration, error) {
	return median(b.repeat, func() (time.Duration, error) {
		return timed(b.python, []string{"-m", "pytest", "-q", "-p", "no:cacheprovider", root}, root)
	})
}

// run builds ripple, then measures and prints the three figures.
func run(python string, repeat, sleepers int, sleep time.Duration, trivial, modules int, withPytest bool) error {
	tmp, err := os.MkdirTemp("", "ripple-bench-batch-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &bench{ripple: filepath.Join(tmp, "ripple"), python: python, tmp: tmp, repeat: repeat, withPytest: withPytest,
		w: tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)}
	build := exec.Command("go", "build", "-o", b.ripple, "./cmd/ripple")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build ripple: %w", err)
	}
	fmt.Fprintf(b.w, "bench/batch: %s, %d CPUs, median of %d runs\n\n", python, runtime.NumCPU(), repeat)
	fmt.Fprintf(b.w, "figure\tripple\tpytest\tratio / target\n")
	if err := b.sleepers(sleepers, sleep); err != nil {
		return err
	}
	if err := b.trivial(trivial); err != nil {
		return err
	}
	if modules > 0 {
		if err := b.modules(modules); err != nil {
			return err
		}
	}
	return b.w.Flush()
}

// sleepers is the first figure: n tests each sleeping sleep, ripple with
// 2 and 4 kernels against the ideal, and serial pytest.
func (b *bench) sleepers(n int, sleep time.Duration) error {
	sleepy, err := suite(b.tmp, "sleepy", n, fmt.Sprintf("    time.sleep(%g)\n", sleep.Seconds()))
	if err != nil {
		return err
	}
	total := time.Duration(n) * sleep
	var pytestSleepy time.Duration
	if b.withPytest {
		if pytestSleepy, err = b.pytest(sleepy); err != nil {
			return err
		}
	}
	for _, k := range []int{2, 4} {
		wall, phase, err := b.rippleRun(sleepy, k, n)
		if err != nil {
			return err
		}
		ideal := total / time.Duration(k)
		fmt.Fprintf(b.w, "%d x %s sleep, %d kernels: wall (ideal %s)\t%s\t\tefficiency %.0f%% (target >= 85%%)\n",
			n, sleep, k, ms(ideal), ms(wall), 100*float64(ideal)/float64(wall))
		fmt.Fprintf(b.w, "  ripple run phase (engine start to last result)\t%s\t\tefficiency %.0f%%\n", ms(phase), 100*float64(ideal)/float64(phase))
		if b.withPytest {
			fmt.Fprintf(b.w, "  vs serial pytest\t%s\t%s\tpytest / ripple = %.2f (target > 1 with 2 kernels)\n", ms(wall), ms(pytestSleepy), float64(pytestSleepy)/float64(wall))
		}
	}
	return nil
}

// trivial is the second figure: the per-test overhead of n tests of two
// statements, for ripple (1 and 2 kernels) and pytest, the fixed
// start-up cost (a 1-test suite's wall) left out.
func (b *bench) trivial(n int) error {
	many, err := suite(b.tmp, "trivial", n, "    x = 1\n    assert x == 1\n")
	if err != nil {
		return err
	}
	one, err := suite(b.tmp, "one", 1, "    x = 1\n    assert x == 1\n")
	if err != nil {
		return err
	}
	for _, k := range []int{1, 2} {
		wallMany, _, err := b.rippleRun(many, k, n)
		if err != nil {
			return err
		}
		wallOne, _, err := b.rippleRun(one, k, 1)
		if err != nil {
			return err
		}
		per := (wallMany - wallOne) / time.Duration(n-1)
		line := fmt.Sprintf("%d trivial tests, %d %s: wall; per test\t%s; %s", n, k, plural(k, "kernel"), ms(wallMany), us(per))
		if b.withPytest && k == 1 {
			pMany, err := b.pytest(many)
			if err != nil {
				return err
			}
			pOne, err := b.pytest(one)
			if err != nil {
				return err
			}
			pPer := (pMany - pOne) / time.Duration(n-1)
			line += fmt.Sprintf("\t%s; %s\tripple / pytest per test = %.2f", ms(pMany), us(pPer), float64(per)/float64(pPer))
			fmt.Fprintf(b.w, "%s\n", line)
			fmt.Fprintf(b.w, "  start-up (a 1-test suite)\t%s\t%s\t\n", ms(wallOne), ms(pOne))
			continue
		}
		fmt.Fprintf(b.w, "%s\t\t\n", line)
	}
	return nil
}

// modules is the third figure: many small modules, what a kernel pays per
// module (compile, import) beside what it pays per test.
func (b *bench) modules(modules int) error {
	n := modules * 10
	spread, err := suiteOf(b.tmp, "spread", n, 10, "    x = 1\n    assert x == 1\n")
	if err != nil {
		return err
	}
	var pSpread time.Duration
	if b.withPytest {
		if pSpread, err = b.pytest(spread); err != nil {
			return err
		}
	}
	for _, k := range []int{1, 2} {
		wall, _, err := b.rippleRun(spread, k, n)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%d trivial tests in %d modules, %d %s: wall\t%s", n, modules, k, plural(k, "kernel"), ms(wall))
		if b.withPytest && k == 1 {
			line += fmt.Sprintf("\t%s\tripple / pytest = %.2f", ms(pSpread), float64(wall)/float64(pSpread))
		} else {
			line += "\t\t"
		}
		fmt.Fprintln(b.w, line)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
func us(d time.Duration) string { return fmt.Sprintf("%.0f us", float64(d)/float64(time.Microsecond)) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
