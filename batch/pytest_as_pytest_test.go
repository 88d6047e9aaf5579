package batch_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ripple-run/ripple/batch"
)

// More of ripple run --tests against pytest itself (issue 28, console and
// options): each case a testdata project, pytest's own run the oracle.

// unittestPython is a python3 that cannot import pytest (a virtual
// environment of the test's python3 when that one has pytest): ripple run
// --tests then runs the suite through unittest's loader.
func unittestPython(t *testing.T) string {
	t.Helper()
	plain := python(t).Path
	if exec.Command(plain, "-c", "import pytest").Run() != nil {
		return plain
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if out, err := exec.Command(plain, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("%s -m venv: %v: %s", plain, err, out)
	}
	plain = filepath.Join(venv, "bin", "python")
	if exec.Command(plain, "-c", "import pytest").Run() == nil {
		t.Fatalf("%s imports pytest", plain)
	}
	return plain
}

// The unittest path (no pytest in the interpreter) gives its tests the
// process a fresh interpreter has, as the pytest path does: signal
// handlers, no wakeup fd, no ripple module, no ripple variable. pytest
// passes every test of the project.
func TestUnittestProcessStateAsPytest(t *testing.T) {
	t.Parallel()
	root := copyProject(t, filepath.Join("testdata", "pytest", "process_state_unittest"))
	want := pytestJUnit(t, pytestPython(t), root, 0)
	report := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ripple(t, "run", root, "--tests", "--python", unittestPython(t), "--kernels", "2", "--json", report)
	if code != 0 {
		t.Errorf("exit %d, pytest's 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	st := reportStatuses(t, report)
	if len(st) != len(want) {
		t.Errorf("%d tests, pytest's %d: %v", len(st), len(want), st)
	}
	for id, s := range st {
		if s != batch.StatusPassed {
			t.Errorf("%s: %s, passed under pytest", id, s)
		}
	}
}
