package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
)

// watching is a Watch running on a project, for the function-granularity
// tests: its runs, skips and fallbacks arrive on channels.
type watching struct {
	t         *testing.T
	root      string
	runs      chan watchRun
	skipped   chan []string
	fallbacks chan string
	done      chan error
}

// watchProject starts Watch on a new project of files, with kernels
// kernels, and waits for its first run, which must pass every test.
func watchProject(t *testing.T, files map[string]string, kernels int) *watching {
	t.Helper()
	py := pytestPython(t)
	w := &watching{t: t, root: project(t, files), runs: make(chan watchRun, 8), skipped: make(chan []string, 8),
		fallbacks: make(chan string, 8), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		w.done <- batch.Watch(ctx, batch.Options{Root: w.root, Tests: true, Python: py, Kernels: kernels}, batch.WatchHooks{
			Ran:      func(rep *batch.Report, err error, changed []string) { w.runs <- watchRun{rep, err, changed} },
			Skipped:  func(changed []string) { w.skipped <- changed },
			Fallback: func(_ []string, why string) { w.fallbacks <- why },
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-w.done; err != nil {
			t.Errorf("Watch after cancel: %v", err)
		}
		if pids := kernelsIn(t, w.root); len(pids) > 0 {
			t.Errorf("kernels left: %v", pids)
		}
	})
	r := w.next("first run")
	if r.rep == nil {
		t.Fatalf("first run: %v", r.err)
	}
	if r.err != nil || r.rep.Summary().Failing() != 0 {
		t.Fatalf("first run: %v\n%s", r.err, outline(r.rep))
	}
	return w
}

// next waits for the next run.
func (w *watching) next(what string) watchRun {
	w.t.Helper()
	select {
	case r := <-w.runs:
		return r
	case err := <-w.done:
		w.t.Fatalf("%s: Watch returned %v", what, err)
	case <-time.After(2 * time.Minute):
		w.t.Fatalf("%s: no run", what)
	}
	return watchRun{}
}

// save writes a file and returns the run it causes, failing when the
// change took the module path (hot) or did not (!hot).
func (w *watching) save(name, text string, hot bool) (watchRun, string) {
	w.t.Helper()
	writeFile(w.t, w.root, name, text)
	r := w.next("after saving " + name)
	why := ""
	select {
	case why = <-w.fallbacks:
	default:
	}
	if hot && why != "" {
		w.t.Errorf("saving %s fell back to the module path: %s", name, why)
	}
	if !hot && why == "" {
		w.t.Errorf("saving %s took the hot path", name)
	}
	return r, why
}

const hotLib = `import functools


def double(x):
    return x * 2


def triple(x):
    return x * 3


class Calc:
    def add(self, a, b):
        return a + b

    @staticmethod
    def neg(a):
        return -a


def logged(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f(*args)
    return wrapper


@logged
def shout(s):
    return s.upper()


def make_adder(n):
    def add(x):
        return x + n
    return add


def unused():
    return 0
`

var hotProject = map[string]string{
	"pkg/__init__.py": "",
	"pkg/lib.py":      hotLib,
	"test_lib.py": `from pkg.lib import double, triple, Calc, shout, make_adder


def test_double():
    assert double(2) == 4


def test_triple():
    assert triple(2) == 6


def test_calc():
    assert Calc().add(1, 2) == 3


def test_neg():
    assert Calc.neg(1) == -1


def test_shout():
    assert shout("a") == "A"


def test_adder():
    assert make_adder(1)(2) == 3
`,
	"test_other.py": "def test_other():\n    assert True\n",
}

// --watch at function granularity: an edit of a function's body re-runs
// the tests that reached it and no other, with the new code (pass, fail,
// pass again), for a plain function, a method, a staticmethod, a function
// under a functools.wraps decorator and a closure's inner function.
func TestWatchHotReruns(t *testing.T) {
	t.Parallel()
	w := watchProject(t, hotProject, 2)
	for _, c := range []struct {
		name, from, to, test string
	}{
		{"function", "return x * 2", "return x * 2 + 1", "test_lib.py::test_double"},
		{"method", "return a + b", "return a - b", "test_lib.py::test_calc"},
		{"staticmethod", "return -a", "return a", "test_lib.py::test_neg"},
		{"decorated", "return s.upper()", "return s.lower()", "test_lib.py::test_shout"},
		{"closure", "return x + n", "return x + n + 1", "test_lib.py::test_adder"},
	} {
		broken := strings.Replace(hotLib, c.from, c.to, 1)
		r, _ := w.save("pkg/lib.py", broken, true)
		if got := outline(r.rep); got != c.test+" failed\n" {
			t.Errorf("%s: after breaking it: %v\n%s", c.name, r.err, got)
		}
		r, _ = w.save("pkg/lib.py", hotLib, true)
		if got := outline(r.rep); got != c.test+" passed\n" {
			t.Errorf("%s: after mending it: %v\n%s", c.name, r.err, got)
		}
	}
	// A function no test reached: patched, nothing re-runs.
	writeFile(t, w.root, "pkg/lib.py", strings.Replace(hotLib, "return 0", "return 1", 1))
	select {
	case c := <-w.skipped:
		if len(c) != 1 || c[0] != "pkg/lib.py" {
			t.Errorf("skipped %v", c)
		}
	case r := <-w.runs:
		t.Errorf("an edit of a function no test reached ran:\n%s", outline(r.rep))
	case why := <-w.fallbacks:
		t.Errorf("an edit of a function no test reached fell back: %s", why)
	case <-time.After(2 * time.Minute):
		t.Fatal("no word on the edit of unused")
	}
}

// A hot change that also moves functions (lines added above them):
// their code is refreshed, so a failure's traceback names the new line.
func TestWatchHotMovedLines(t *testing.T) {
	t.Parallel()
	w := watchProject(t, hotProject, 1)
	text := "# one\n# two\n# three\n" + strings.Replace(hotLib, "return x * 3", "return x * 3 + 1", 1)
	r, _ := w.save("pkg/lib.py", text, true)
	if got := outline(r.rep); got != "test_lib.py::test_triple failed\n" {
		t.Fatalf("after breaking triple: %v\n%s", r.err, got)
	}
	// Breaking double now: its line moved by three with the comments.
	text = strings.Replace(text, "return x * 2", "raise ValueError('double')", 1)
	r, _ = w.save("pkg/lib.py", text, true)
	if got := outline(r.rep); got != "test_lib.py::test_double failed\n" {
		t.Fatalf("after breaking double: %v\n%s", r.err, got)
	}
	if lr := r.rep.Results[0].Longrepr; !strings.Contains(lr, "pkg/lib.py:8: ValueError") {
		t.Errorf("the traceback does not name the moved line 8:\n%s", lr)
	}
}

// A saved module that does not parse is reported and changes nothing;
// the watch goes on, and the next save is compared with the code the
// kernels still run.
func TestWatchHotSyntaxError(t *testing.T) {
	t.Parallel()
	w := watchProject(t, hotProject, 1)
	writeFile(t, w.root, "pkg/lib.py", strings.Replace(hotLib, "return x * 2", "return x *", 1))
	r := w.next("after a syntax error")
	if !errors.Is(r.err, batch.ErrSyntax) || !strings.Contains(r.err.Error(), "pkg/lib.py: line 5") || r.rep != nil {
		t.Errorf("syntax error: %v %v", r.err, r.rep)
	}
	r, _ = w.save("pkg/lib.py", strings.Replace(hotLib, "return x * 2", "return x * 5", 1), true)
	if got := outline(r.rep); r.err != nil || got != "test_lib.py::test_double failed\n" {
		t.Errorf("after the fix: %v\n%s", r.err, got)
	}
}

// What the hot path must not patch takes the module path: a module-level
// constant, a function that ran at import, a function a module-scoped
// fixture called in its setup or in its teardown, a test module. The module path re-runs the modules that
// import the file, with the code as saved.
func TestWatchHotFallsBack(t *testing.T) {
	t.Parallel()
	lib := `FACTOR = 2


def build():
    return {"a": 1}


TABLE = build()


def base():
    return 10


def done():
    return None


def scale(x):
    return x * FACTOR
`
	w := watchProject(t, map[string]string{
		"pkg/__init__.py": "",
		"pkg/lib.py":      lib,
		"test_fix.py": `import pytest
from pkg import lib


@pytest.fixture(scope="module")
def start():
    yield lib.base()
    lib.done()


def test_base(start):
    assert start == 10


def test_scale():
    assert lib.scale(2) == 4


def test_table():
    assert lib.TABLE == {"a": 1}
`,
		"test_other.py": "def test_other():\n    assert True\n",
	}, 1)
	for _, c := range []struct {
		name, from, to, why, want string
	}{
		{"constant", "FACTOR = 2", "FACTOR = 3", "module-level", "test_fix.py::test_base passed\ntest_fix.py::test_scale failed\ntest_fix.py::test_table passed\n"},
		{"import", `return {"a": 1}`, `return {"a": 2}`, "imported", "test_fix.py::test_base passed\ntest_fix.py::test_scale passed\ntest_fix.py::test_table failed\n"},
		{"fixture", "return 10", "return 11", "module, class, package or session scope", "test_fix.py::test_base failed\ntest_fix.py::test_scale passed\ntest_fix.py::test_table passed\n"},
		{"fixture teardown", "return None", "return 1", "module, class, package or session scope", "test_fix.py::test_base passed\ntest_fix.py::test_scale passed\ntest_fix.py::test_table passed\n"},
	} {
		r, why := w.save("pkg/lib.py", strings.Replace(lib, c.from, c.to, 1), false)
		if !strings.Contains(why, c.why) {
			t.Errorf("%s: fell back because %q, want %q", c.name, why, c.why)
		}
		if got := outline(r.rep); got != c.want {
			t.Errorf("%s: %v\n%s", c.name, r.err, got)
		}
		r, _ = w.save("pkg/lib.py", lib, false)
		if got := outline(r.rep); r.rep.Summary().Failing() != 0 || strings.Count(got, "\n") != 3 {
			t.Errorf("%s: after the revert: %v\n%s", c.name, r.err, got)
		}
	}
	// After the module path, the hot path again: scale's body.
	r, _ := w.save("pkg/lib.py", strings.Replace(lib, "return x * FACTOR", "return x * FACTOR + 1", 1), true)
	if got := outline(r.rep); got != "test_fix.py::test_scale failed\n" {
		t.Errorf("hot after fallbacks: %v\n%s", r.err, got)
	}
	// A test module: the module path, without trying the hot one.
	writeFile(t, w.root, "test_other.py", "def test_other():\n    assert False\n")
	if got := outline(w.next("after test_other.py").rep); got != "test_other.py::test_other failed\n" {
		t.Errorf("test module:\n%s", got)
	}
	select {
	case why := <-w.fallbacks:
		t.Errorf("a test module tried the hot path: %s", why)
	default:
	}
}

// A plain run records nothing: the kernels neither load the recorder nor
// trace; a watch's do (the same test fails there).
func TestPlainRunDoesNotRecord(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{
		"test_plain.py": `import sys


def test_not_recording():
    assert "ripple_kernel.watchfn" not in sys.modules
    assert sys.gettrace() is None
    assert getattr(sys, "monitoring", None) is None or all(sys.monitoring.get_tool(i) is None for i in range(6))
`,
	})
	rep := run(t, batch.Options{Root: root, Tests: true, Python: py, Kernels: 1})
	if got := outline(rep); got != "test_plain.py::test_not_recording passed\n" {
		t.Errorf("plain run:\n%s%s", got, rep.Results[0].Message)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan *batch.Report, 1)
	done := make(chan error, 1)
	go func() {
		done <- batch.Watch(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: 1}, batch.WatchHooks{
			Ran: func(rep *batch.Report, _ error, _ []string) { runs <- rep },
		})
	}()
	select {
	case rep := <-runs:
		if got := outline(rep); got != "test_plain.py::test_not_recording failed\n" {
			t.Errorf("watch run: the recorder is not on:\n%s", got)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("no watch run")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
}
