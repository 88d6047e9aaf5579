// Command watchtests measures ripple run --tests --watch after one-line
// edits of a library function (the target: the affected tests' results
// p50 <= 100 ms on the largest suite, the unaffected ones not re-run), and
// prints one table.
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

// ran is what the watch reported after a save: a run's report and error
// (none when no test depended on the change), when, and why it took the
// module path (empty on the hot path).
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

// run copies sympy, starts the watch, measures the hot and the module
// edits and prints the table.
func run(logger *slog.Logger, python string, suite []string, fn string, edits, fallbacks, kernels int) error {
	p, err := copyProject(python, fn)
	if err != nil {
		return err
	}
	defer os.RemoveAll(p.root)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	w := startWatch(ctx, batch.Options{Root: p.root, Tests: true, Python: python, Kernels: kernels,
		PytestArgs: append(slices.Clone(suite), "-p", "no:cacheprovider"),
		Logger:     logger})
	first := <-w.runs
	if first.rep == nil {
		return fmt.Errorf("first run: %v", first.err)
	}
	total := len(first.rep.Results)
	firstDur := time.Since(started)
	fmt.Printf("sympy sub-suite: %s\n%d tests, %d kernels; first run (kernel start, collection, recording) %.1f s; edited: %s\n\n",
		strings.Join(suite, " "), total, kernels, firstDur.Seconds(), fn)

	hot, err := w.measure("hot (function)", edits, p.path, p.hotEdit, true)
	if err != nil {
		return err
	}
	mod, err := w.measure("module (fallback)", fallbacks, p.path, p.moduleEdit, false)
	if err != nil {
		return err
	}
	cancel()
	<-w.done

	printTable(total, hot, mod)
	if exec.Command(python, "-c", "import testmon").Run() != nil {
		fmt.Println("pytest-testmon: not installed, and Debian has no package of it: not measured")
	}
	return nil
}

// project is the copy of sympy and the library file the edits change.
type project struct {
	root   string
	path   string   // the edited file
	orig   []byte   // its text before the edits
	lines  []string // orig's lines, each with its "\n"
	line   int      // the line (1-based) a hot edit inserts a statement before
	indent string   // that line's indentation
}

// copyProject copies python's sympy into a new temporary directory and
// finds the body of the function fn (path::qualname) in it.
func copyProject(python, fn string) (*project, error) {
	out, err := exec.Command(python, "-c", "import sympy, pytest, os; print(os.path.dirname(sympy.__file__))").Output()
	if err != nil {
		return nil, fmt.Errorf("%s cannot import sympy and pytest (apt install python3-sympy python3-pytest): %w", python, err)
	}
	src := strings.TrimSpace(string(out))
	root, err := os.MkdirTemp("", "ripple-watchtests-")
	if err != nil {
		return nil, err
	}
	p := &project{root: root}
	if err := p.load(python, src, fn); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	return p, nil
}

// load copies src into the project and reads the function fn.
func (p *project) load(python, src, fn string) error {
	if err := copyTree(src, filepath.Join(p.root, "sympy")); err != nil {
		return err
	}
	file, qual, _ := strings.Cut(fn, "::")
	p.path = filepath.Join(p.root, filepath.FromSlash(file))
	orig, err := os.ReadFile(p.path)
	if err != nil {
		return err
	}
	p.orig, p.lines = orig, strings.SplitAfter(string(orig), "\n")
	p.line, p.indent, err = bodyLine(python, p.path, qual)
	return err
}

// hotEdit is edit i of the function: one different statement at the top
// of its body (the tests' outcomes do not change).
func (p *project) hotEdit(i int) string {
	l := slices.Clone(p.lines)
	l[p.line-1] = fmt.Sprintf("%s_ripple_bench = %d\n", p.indent, i) + l[p.line-1]
	return strings.Join(l, "")
}

// moduleEdit is edit i of the module: a module-level statement, which the
// hot path must not patch.
func (p *project) moduleEdit(i int) string {
	return string(p.orig) + fmt.Sprintf("\n_RIPPLE_BENCH = %d\n", i)
}

// watch is batch.Watch running on its own goroutine, its hooks turned
// into channels.
type watch struct {
	runs chan ran    // a Ran or Skipped hook
	fell chan string // a Fallback hook's reason
	done chan error  // batch.Watch's result
}

func startWatch(ctx context.Context, opts batch.Options) *watch {
	w := &watch{runs: make(chan ran, 4), fell: make(chan string, 4), done: make(chan error, 1)}
	go func() {
		w.done <- batch.Watch(ctx, opts, batch.WatchHooks{
			Ran:      func(rep *batch.Report, err error, _ []string) { w.runs <- ran{rep: rep, err: err, at: time.Now()} },
			Skipped:  func([]string) { w.runs <- ran{at: time.Now()} },
			Fallback: func(_ []string, why string) { w.fell <- why },
		})
	}()
	return w
}

// save writes text to path and waits for the watch's results.
func (w *watch) save(path, text string) (ran, error) {
	t0 := time.Now()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return ran{}, err
	}
	select {
	case r := <-w.runs:
		r.took = r.at.Sub(t0)
		select {
		case r.why = <-w.fell:
		default:
		}
		return r, nil
	case err := <-w.done:
		return ran{}, fmt.Errorf("watch ended: %v", err)
	case <-time.After(5 * time.Minute):
		return ran{}, fmt.Errorf("no results 5 minutes after a save")
	}
}

// row is one line of the table: the save-to-results times and the tests
// re-run of one kind of edit.
type row struct {
	name  string
	times []time.Duration
	tests []int
	why   string
}

// measure saves n edits of path, one after the other's results. wantHot:
// an edit that falls back to the module path is an error.
func (w *watch) measure(name string, n int, path string, edit func(i int) string, wantHot bool) (row, error) {
	r := row{name: name}
	for i := range n {
		res, err := w.save(path, edit(i))
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

// printTable prints the rows against the suite's total.
func printTable(total int, hot, mod row) {
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
