// Command watchtests measures ripple run --tests --watch after one-line
// edits of a library function (issue 12's target: the affected tests'
// results p50 <= 100 ms on the largest suite, the unaffected ones not
// re-run), and prints one table.
//
// It copies sympy (pure Python, with its tests, from Debian's
// python3-sympy) into a temporary project, runs batch.Watch on a sympy
// sub-suite (by default bench/compat's, 540 tests) and then:
//
//   - hot: -edits saves of the library module, each inserting one
//     different statement at the top of -func's body (the tests' outcomes
//     do not change); from the write to the watch's results (the Ran
//     hook), and how many tests each re-ran;
//   - module: -fallback-edits saves that add a module-level statement to
//     the same file instead, which the hot path must not patch: the
//     module path (purge, re-import, the importers' test modules).
//
// Saves alternate with nothing else; each waits for the previous
// results. Run it from the repository root:
//
//	go run ./bench/watchtests          # -edits 20 -fallback-edits 1 -kernels 2 -func ... -suite ...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ripple-run/ripple/batch"
)

const defaultSuite = "sympy/sets/tests,sympy/logic/tests,sympy/core/tests/test_subs.py,sympy/core/tests/test_relational.py,sympy/core/tests/test_assumptions.py"

type ran struct {
	rep  *batch.Report
	err  error
	at   time.Time
	took time.Duration // from the save
	why  string
}

func main() {
	python := flag.String("python", "/usr/bin/python3", "interpreter with pytest and sympy")
	suite := flag.String("suite", defaultSuite, "test paths under the sympy copy, comma-separated")
	fn := flag.String("func", "sympy/logic/boolalg.py::disjuncts", "the library function to edit: path::qualname (a top-level function)")
	edits := flag.Int("edits", 20, "hot edits")
	fallbacks := flag.Int("fallback-edits", 1, "module-level edits (the module path; each re-runs every test module that imports the file)")
	kernels := flag.Int("kernels", 2, "kernels")
	verbose := flag.Bool("v", false, "the watch's debug log on stderr")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := run(logger, *python, strings.Split(*suite, ","), *fn, *edits, *fallbacks, *kernels); err != nil {
		fmt.Fprintln(os.Stderr, "watchtests:", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, python string, suite []string, fn string, edits, fallbacks, kernels int) error {
	out, err := exec.Command(python, "-c", "import sympy, pytest, os; print(os.path.dirname(sympy.__file__))").Output()
	if err != nil {
		return fmt.Errorf("%s cannot import sympy and pytest (apt install python3-sympy python3-pytest): %w", python, err)
	}
	src := strings.TrimSpace(string(out))
	root, err := os.MkdirTemp("", "ripple-watchtests-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	if err := copyTree(src, filepath.Join(root, "sympy")); err != nil {
		return err
	}
	file, qual, _ := strings.Cut(fn, "::")
	libPath := filepath.Join(root, filepath.FromSlash(file))
	orig, err := os.ReadFile(libPath)
	if err != nil {
		return err
	}
	line, indent, err := bodyLine(python, libPath, qual)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan ran, 4)
	fell := make(chan string, 4)
	done := make(chan error, 1)
	started := time.Now()
	go func() {
		done <- batch.Watch(ctx, batch.Options{Root: root, Tests: true, Python: python, Kernels: kernels,
			PytestArgs: append(slices.Clone(suite), "-p", "no:cacheprovider"),
			Logger:     logger},
			batch.WatchHooks{
				Ran:      func(rep *batch.Report, err error, _ []string) { runs <- ran{rep: rep, err: err, at: time.Now()} },
				Skipped:  func([]string) { runs <- ran{at: time.Now()} },
				Fallback: func(_ []string, why string) { fell <- why },
			})
	}()
	first := <-runs
	if first.rep == nil {
		return fmt.Errorf("first run: %v", first.err)
	}
	total := len(first.rep.Results)
	firstDur := time.Since(started)
	fmt.Printf("sympy sub-suite: %s\n%d tests, %d kernels; first run (kernel start, collection, recording) %.1f s; edited: %s\n\n",
		strings.Join(suite, " "), total, kernels, firstDur.Seconds(), fn)

	lines := strings.SplitAfter(string(orig), "\n")
	save := func(text string) (ran, error) {
		t0 := time.Now()
		if err := os.WriteFile(libPath, []byte(text), 0o644); err != nil {
			return ran{}, err
		}
		select {
		case r := <-runs:
			r.took = r.at.Sub(t0)
			select {
			case r.why = <-fell:
			default:
			}
			return r, nil
		case err := <-done:
			return ran{}, fmt.Errorf("watch ended: %v", err)
		case <-time.After(5 * time.Minute):
			return ran{}, fmt.Errorf("no results 5 minutes after a save")
		}
	}
	type row struct {
		name  string
		times []time.Duration
		tests []int
		why   string
	}
	measure := func(name string, n int, edit func(i int) string, wantHot bool) (row, error) {
		r := row{name: name}
		for i := range n {
			res, err := save(edit(i))
			if err != nil {
				return r, err
			}
			if res.err != nil {
				return r, fmt.Errorf("%s edit %d: %v", name, i, res.err)
			}
			if wantHot && res.why != "" {
				return r, fmt.Errorf("%s edit %d fell back to the module path: %s", name, i, res.why)
			}
			if !wantHot {
				r.why = res.why
			}
			r.times = append(r.times, res.took)
			n := 0
			if res.rep != nil {
				n = len(res.rep.Results)
				if f := res.rep.Summary().Failing(); f != 0 {
					return r, fmt.Errorf("%s edit %d: %d failing tests", name, i, f)
				}
			}
			r.tests = append(r.tests, n)
		}
		return r, nil
	}
	hotEdit := func(i int) string {
		l := slices.Clone(lines)
		l[line-1] = fmt.Sprintf("%s_ripple_bench = %d\n", indent, i) + l[line-1]
		return strings.Join(l, "")
	}
	hot, err := measure("hot (function)", edits, hotEdit, true)
	if err != nil {
		return err
	}
	modEdit := func(i int) string {
		return string(orig) + fmt.Sprintf("\n_RIPPLE_BENCH = %d\n", i)
	}
	mod, err := measure("module (fallback)", fallbacks, modEdit, false)
	if err != nil {
		return err
	}
	cancel()
	<-done

	fmt.Printf("%-18s %6s %8s %8s %8s %12s %8s\n", "path", "edits", "p50_ms", "p99_ms", "max_ms", "tests_rerun", "of")
	for _, r := range []row{hot, mod} {
		if len(r.times) == 0 {
			continue
		}
		ts := slices.Clone(r.times)
		slices.Sort(ts)
		fmt.Printf("%-18s %6d %8.1f %8.1f %8.1f %12s %8d\n", r.name, len(ts), ms(pct(ts, 50)), ms(pct(ts, 99)), ms(ts[len(ts)-1]), span(r.tests), total)
	}
	if mod.why != "" {
		fmt.Printf("(module path because: %s)\n", mod.why)
	}
	fmt.Println("(save -> results: from the write to the watch's report, 20 ms debounce included; target hot p50 <= 100 ms)")
	if exec.Command(python, "-c", "import testmon").Run() != nil {
		fmt.Println("pytest-testmon: not installed, and Debian has no package of it: not measured")
	}
	return nil
}

// bodyLine is the line (1-based) of the first statement of function qual's
// body after its docstring, and that statement's indentation.
func bodyLine(python, path, qual string) (int, string, error) {
	script := `import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for n in tree.body:
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == sys.argv[2]:
        b = n.body[1] if ast.get_docstring(n) is not None and len(n.body) > 1 else n.body[0]
        print(b.lineno, b.col_offset)
        break
`
	out, err := exec.Command(python, "-c", script, path, qual).Output()
	if err != nil {
		return 0, "", fmt.Errorf("finding %s in %s: %w", qual, path, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0, "", fmt.Errorf("no top-level function %s in %s", qual, path)
	}
	line, _ := strconv.Atoi(f[0])
	col, _ := strconv.Atoi(f[1])
	return line, strings.Repeat(" ", col), nil
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
}

func pct(ts []time.Duration, p int) time.Duration {
	i := (len(ts)*p + 99) / 100
	return ts[max(0, min(len(ts)-1, i-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func span(ns []int) string {
	lo, hi := slices.Min(ns), slices.Max(ns)
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}
