package batch_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// Usage errors pytest reports (an unknown option, a bad -k expression, a
// path or node that does not exist) end the run as they end pytest's: exit
// status 4, pytest's message on stderr, and on stdout what its terminal
// reporter wrote (the header and last line once collection had begun).
func TestPytestUsageErrorsAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "reports"))
	base := []string{"-o", "addopts=", "-p", "no:cacheprovider"}
	for _, args := range [][]string{{"--bogus"}, {"-k", "a and"}, {"-m", "(x"}, {"no_such_file.py"}, {"test_reports.py::no_such_test"}} {
		pCode, pOut, pErr := pytestRunSplit(t, py, root, append(base, args...)...)
		code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", "2", "--"}, append(base, args...)...)...)
		if code != pCode || code != 4 {
			t.Errorf("%q: exit %d, pytest's %d\n%s\n%s", args, code, pCode, out, errOut)
		}
		// pytest runs here as python -m pytest: argparse names it so.
		pErr = strings.ReplaceAll(pErr, "__main__.py", "pytest")
		if errOut != pErr {
			t.Errorf("%q: stderr:\n%s\npytest's:\n%s", args, errOut, pErr)
		}
		if got, want := sessionTimes.ReplaceAllString(out, "in TIME"), sessionTimes.ReplaceAllString(pOut, "in TIME"); got != want {
			t.Errorf("%q: stdout:\n%s\npytest's:\n%s", args, got, want)
		}
	}
}

var sessionTimes = regexp.MustCompile(`in [0-9.]+s\b`)

// pytestRunSplit runs pytest in root with args; its exit status, stdout
// and stderr.
func pytestRunSplit(t *testing.T, py, root string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-m", "pytest"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CI=true")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stdout.String(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// --maxfail counts failures over the whole run, as one pytest session
// does: with a failure in each of three modules on three kernels, pytest's
// --maxfail=2 stops at the second failure in its order, and ripple runs
// and reports the same tests (each kernel alone saw one failure).
func TestPytestMaxfailAcrossKernelsAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "maxfail"))
	for _, args := range [][]string{{"--maxfail=2"}, {"--maxfail", "3"}, {"-x"}} {
		pJUnit, rJUnit := filepath.Join(t.TempDir(), "p.xml"), filepath.Join(t.TempDir(), "r.xml")
		pCode, pOut := pytestRun(t, py, root, append([]string{"--junitxml", pJUnit, "-o", "junit_family=xunit1"}, args...)...)
		for _, kernels := range []string{"3", "1"} {
			code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", kernels, "--",
				"--junitxml", rJUnit, "-o", "junit_family=xunit1"}, args...)...)
			if code != pCode {
				t.Errorf("%q, %s kernels: exit %d, pytest's %d\n%s\n%s\npytest:\n%s", args, kernels, code, pCode, out, errOut, pOut)
			}
			if d := diffLines(junitOutcomes(t, pJUnit), junitOutcomes(t, rJUnit)); d != "" {
				t.Errorf("%q, %s kernels: tests run differ from pytest's (-pytest +ripple):\n%s", args, kernels, d)
			}
		}
	}
}
