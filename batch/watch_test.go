package batch_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
)

type watchRun struct {
	rep     *batch.Report
	err     error
	changed []string
}

// --watch: after the first run, a saved change re-runs the tests of the
// modules that import the changed file (through other project modules
// too) and only those, with the code as saved; a change no test imports
// runs nothing; a configuration file re-runs everything.
func TestWatchRerunsAffectedTests(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{
		"pkg/__init__.py": "",
		"pkg/lib.py":      "def add(a, b):\n    return a + b\n",
		"pkg/api.py":      "from .lib import add\n\n\ndef total(xs):\n    return sum(add(x, 0) for x in xs)\n",
		"test_api.py":     "from pkg.api import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
		"test_other.py":   "def test_other():\n    assert True\n",
		"notes.py":        "x = 1\n",
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make(chan watchRun, 8)
	skipped := make(chan []string, 8)
	done := make(chan error, 1)
	go func() {
		done <- batch.Watch(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: 2}, batch.WatchHooks{
			Ran:     func(rep *batch.Report, err error, changed []string) { runs <- watchRun{rep, err, changed} },
			Skipped: func(changed []string) { skipped <- changed },
		})
	}()
	next := func(what string) watchRun {
		t.Helper()
		select {
		case r := <-runs:
			if r.err != nil && r.rep == nil {
				t.Fatalf("%s: %v", what, r.err)
			}
			return r
		case err := <-done:
			t.Fatalf("%s: Watch returned %v", what, err)
		case <-time.After(2 * time.Minute):
			t.Fatalf("%s: no run", what)
		}
		return watchRun{}
	}
	if r := next("first run"); outline(r.rep) != "test_api.py::test_total passed\ntest_other.py::test_other passed\n" || r.changed != nil {
		t.Fatalf("first run:\n%s", outline(r.rep))
	}
	writeFile(t, root, "pkg/lib.py", "def add(a, b):\n    return a + b + 1\n")
	r := next("after lib.py")
	if got := outline(r.rep); got != "test_api.py::test_total failed\n" || !slices.Equal(r.changed, []string{"pkg/lib.py"}) {
		t.Errorf("after editing pkg/lib.py (imported through pkg/api.py): %v\n%s", r.changed, got)
	}
	if m := r.rep.Results[0].Message; !strings.HasPrefix(m, "assert 5 == 3\n") {
		t.Errorf("message %q: the edited code did not run", m)
	}
	writeFile(t, root, "notes.py", "x = 2\n")
	select {
	case c := <-skipped:
		if !slices.Equal(c, []string{"notes.py"}) {
			t.Errorf("skipped %v", c)
		}
	case r := <-runs:
		t.Errorf("a change no test imports ran:\n%s", outline(r.rep))
	case <-time.After(2 * time.Minute):
		t.Fatal("no word on notes.py")
	}
	writeFile(t, root, "test_other.py", "def test_other():\n    assert False\n\n\ndef test_new():\n    pass\n")
	if got := outline(next("after test_other.py").rep); got != "test_other.py::test_other failed\ntest_other.py::test_new passed\n" {
		t.Errorf("after editing test_other.py:\n%s", got)
	}
	writeFile(t, root, "pytest.ini", "[pytest]\n")
	if got := outline(next("after pytest.ini").rep); strings.Count(got, "\n") != 3 {
		t.Errorf("a configuration change re-runs everything:\n%s", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch after cancel: %v", err)
	}
	if pids := kernelsIn(t, root); len(pids) > 0 {
		t.Errorf("kernels left: %v", pids)
	}
}

func TestWatchUsage(t *testing.T) {
	t.Parallel()
	err := batch.Watch(context.Background(), batch.Options{Root: t.TempDir()}, batch.WatchHooks{})
	if err == nil || !strings.Contains(err.Error(), "--tests") {
		t.Errorf("Watch without Tests: %v", err)
	}
	code, _, errOut := ripple(t, "run", t.TempDir(), "--watch")
	if code != 2 || !strings.Contains(errOut, "--watch re-runs tests: it needs --tests") {
		t.Errorf("--watch without --tests: exit %d %q", code, errOut)
	}
}
