package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
)

// The projects under testdata/pytest are the ways a runner that is not
// pytest gets a suite wrong (discovery, fixtures, marks, node ids,
// outcomes), one small project each. Each runs under pytest itself (the oracle) and
// under ripple run --tests with two kernels, through the binary: the
// JUnit testcases (classname, name, file, line, outcome) and the exit
// status must be pytest's, and the outcomes pinned here must hold (so
// that a mistake shared by both cannot pass).
func TestPytestProjects(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	cases := []struct {
		dir  string
		code int
		want map[string]batch.Status // node id -> status, in ripple's JSON report
		n    int                     // tests in the report
	}{
		{"scopes", 0, map[string]batch.Status{"test_scopes.py::TestOne::test_a": batch.StatusPassed, "test_scopes.py::test_module_level": batch.StatusPassed}, 4},
		{"conftests", 1, map[string]batch.Status{"test_root.py::test_root": batch.StatusPassed, "sub/test_sub.py::test_sub": batch.StatusPassed,
			"sub/test_sub.py::test_sub_fails": batch.StatusFailed}, 3},
		{"params", 1, map[string]batch.Status{"test_params.py::test_number[one]": batch.StatusPassed, "test_params.py::test_number[three]": batch.StatusFailed,
			"test_params.py::test_both[two-b]": batch.StatusPassed}, 9},
		{"skipif_names", 1, map[string]batch.Status{"test_skipif.py::test_needs_feature": batch.StatusSkipped, "test_skipif.py::test_new_enough": batch.StatusPassed,
			"test_skipif.py::test_known_bug": batch.StatusXFailed, "test_skipif.py::test_py3": batch.StatusPassed,
			"test_skipif.py::test_xpass": batch.StatusXPassed, "test_skipif.py::test_xpass_strict": batch.StatusFailed}, 6},
		{"hyphen", 1, map[string]batch.Status{"test_max-min.py::test_max_min": batch.StatusPassed, "test_max-min.py::test_max_min_fails": batch.StatusFailed}, 2},
		{"decorators", 0, map[string]batch.Status{"test_decorators.py::TestDecorated::test_method_with_self": batch.StatusPassed,
			"test_decorators.py::TestDecorated::test_patched": batch.StatusPassed, "test_decorators.py::test_patch_dict": batch.StatusPassed,
			"test_decorators.py::test_calls_after": batch.StatusPassed}, 4},
		{"unittest_order", 0, map[string]batch.Status{"test_order.py::TestOrder::test_z_last": batch.StatusPassed}, 4},
		{"runtest", 1, map[string]batch.Status{"test_runtest.py::OnlyRunTest::runTest": batch.StatusPassed, "test_runtest.py::WithSetUp::runTest": batch.StatusFailed}, 2},
		{"inherit", 1, map[string]batch.Status{"test_child.py::TestOne::test_inherited": batch.StatusPassed, "test_child.py::TestTwo::test_inherited": batch.StatusFailed,
			"test_child.py::TestTwo::test_inherited_fails_for_two": batch.StatusFailed, "test_child.py::TestTwo::test_own": batch.StatusPassed}, 5},
		{"testpaths", 0, map[string]batch.Status{"tests/check_inside.py::check_inside": batch.StatusPassed}, 1},
		{"parametrize_ids", 0, map[string]batch.Status{"test_ids.py::test_kind[Identifier]": batch.StatusPassed, "test_ids.py::test_kind[int]": batch.StatusPassed,
			"test_ids.py::test_kind[make]": batch.StatusPassed, "test_ids.py::test_kind[len]": batch.StatusPassed, "test_ids.py::test_kind[None]": batch.StatusPassed,
			"test_ids.py::test_kind[1.5]": batch.StatusPassed, "test_ids.py::test_kind[x y]": batch.StatusPassed,
			"test_ids.py::test_pairs[1-2]": batch.StatusPassed, "test_ids.py::test_pairs[three-four]": batch.StatusPassed,
			"test_ids.py::test_pairs[5-6]": batch.StatusXFailed}, 10},
		{"bigclass", 0, map[string]batch.Status{"test_big.py::TestBig::test_0000": batch.StatusPassed, "test_big.py::TestBig::test_4999": batch.StatusPassed}, 5000},
		{"repr_mutates", 0, map[string]batch.Status{"test_repr.py::test_repr_not_called": batch.StatusPassed}, 1},
		{"collect_error", 2, map[string]batch.Status{"test_bad.py": batch.StatusError}, 1},
		// Project modules import as under pytest (package data, loaders,
		// source), with no trace of the engine's import hooks.
		{"project_modules", 0, map[string]batch.Status{"tests/test_project_modules.py::test_package_data": batch.StatusPassed,
			"tests/test_project_modules.py::test_loader_is_pythons": batch.StatusPassed, "tests/test_project_modules.py::test_no_ripple_hooks": batch.StatusPassed}, 5},
		// A session fixture that fails when another session holds its
		// directory: each kernel's session would fail it but the first.
		{"session_clash", 0, map[string]batch.Status{"test_a.py::test_a_one": batch.StatusPassed, "test_b.py::test_b_one": batch.StatusPassed,
			"test_c.py::test_c_two": batch.StatusPassed, "test_d.py::test_d_two": batch.StatusPassed}, 8},
		// What a test sees of its process is what it sees under pytest:
		// signal handlers, the wakeup fd, no ripple module or variable,
		// Python's input() (click binds it at import; its prompt tests
		// feed it through sys.stdin), sys.argv as `python -m pytest` has it,
		// no thread of ripple's.
		{"process_state", 0, map[string]batch.Status{"test_process.py::test_sigint_is_default": batch.StatusPassed,
			"test_process.py::test_wakeup_fd_is_free": batch.StatusPassed, "test_process.py::test_wakeup_fd_trio_style": batch.StatusPassed,
			"test_process.py::test_no_ripple_module": batch.StatusPassed, "test_process.py::test_no_ripple_environment": batch.StatusPassed,
			"test_process.py::test_collector_thresholds_are_a_fresh_interpreters": batch.StatusPassed,
			"test_process.py::test_input_reads_stdin":                             batch.StatusPassed,
			"test_process.py::test_argv_is_pytests_command_line":                  batch.StatusPassed,
			"test_process.py::test_threads_are_pytests":                           batch.StatusPassed}, 12},
		// A later module (the larger one) changes a global default the
		// earlier one relies on: each kernel runs in pytest's order.
		{"order", 0, map[string]batch.Status{"test_a_uses_default.py::test_default_precision": batch.StatusPassed,
			"test_b_big_changes_default.py::test_set_default": batch.StatusPassed}, 14},
		// A session fixture that fails everywhere: its tests are errors,
		// the others pass, as under pytest.
		{"session_broken", 1, map[string]batch.Status{"test_a.py::test_a_needs_service": batch.StatusError, "test_c.py::test_c_needs_service": batch.StatusError,
			"test_b.py::test_b_plain": batch.StatusPassed}, 6},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			t.Parallel()
			root := copyProject(t, filepath.Join("testdata", "pytest", c.dir))
			want := pytestJUnit(t, py, root, c.code)
			os.Remove(filepath.Join(root, "log.txt"))
			dir := t.TempDir()
			junit, report := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
			code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", "2", "--junit", junit, "--json", report, "--", "-p", "no:cacheprovider")
			if code != c.code {
				t.Fatalf("exit %d, pytest's %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errOut)
			}
			got := junitOutcomes(t, junit)
			if d := diffLines(want, got); d != "" {
				t.Errorf("JUnit testcases differ from pytest's (-pytest +ripple):\n%s", d)
			}
			statuses := reportStatuses(t, report)
			if len(statuses) != c.n {
				t.Errorf("%d tests in the report, want %d", len(statuses), c.n)
			}
			for id, st := range c.want {
				if statuses[id] != st {
					t.Errorf("%s: %q, want %q", id, statuses[id], st)
				}
			}
		})
	}
}

// Fixture set-up and tear-down order with one kernel is pytest's exactly
// (the scopes project logs every set-up, run and tear-down).
func TestPytestFixtureOrder(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "scopes"))
	logPath := filepath.Join(root, "log.txt")
	pytestJUnit(t, py, root, 0)
	want, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(logPath)
	if code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", "1", "--", "-p", "no:cacheprovider"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	got, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("fixture log:\n%s\npytest's:\n%s", got, want)
	}
	if !strings.HasPrefix(string(got), "setup session\nsetup module\nsetup class\nsetup function\nrun TestOne.test_a\nteardown function\n") ||
		!strings.HasSuffix(string(got), "teardown module\nteardown session\n") {
		t.Errorf("fixture log out of order:\n%s", got)
	}
	// Two kernels: each kernel sets up the session once and tears it down
	// at its end; a class's fixture is set up once for the class.
	os.Remove(logPath)
	if code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", "2", "--", "-p", "no:cacheprovider"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	got, _ = os.ReadFile(logPath)
	log := string(got)
	if n := strings.Count(log, "setup session"); n < 1 || n > 2 || n != strings.Count(log, "teardown session") {
		t.Errorf("two kernels: session set up %d times:\n%s", n, log)
	}
	if strings.Count(log, "setup class") != 2 || strings.Count(log, "teardown class") != 2 {
		t.Errorf("two kernels: class fixture not once per class:\n%s", log)
	}
}

// Selection: PATH::NODE arguments, -k and -m go to pytest; the console
// speaks pytest's words and shows pytest's assertion message.
func TestPytestSelectionAndConsole(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{
		"pytest.ini": "[pytest]\nmarkers =\n    slow: slow tests\n",
		"test_sel.py": `import pytest


def test_one():
    assert 1 + 1 == 3


@pytest.mark.slow
def test_slow():
    pass


def test_other():
    pass
`})
	code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "test_sel.py::test_one", "test_sel.py::test_other", "--", "-rA")
	if code != 1 || !strings.Contains(out, "FAILED test_sel.py::test_one") || !strings.Contains(out, "PASSED test_sel.py::test_other") ||
		strings.Contains(out, "test_slow") || !strings.Contains(out, "E       assert (1 + 1) == 3") || !strings.Contains(out, "ripple run: 2 tests in") {
		t.Errorf("node ids: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = ripple(t, "run", root, "--tests", "--python", py, "-m", "slow", "--", "-v")
	if code != 0 || !strings.Contains(out, "test_sel.py::test_slow PASSED") || strings.Contains(out, "test_one") {
		t.Errorf("-m slow: exit %d\n%s", code, out)
	}
	code, out, _ = ripple(t, "run", root, "--tests", "--python", py, "-k", "other or slow")
	if code != 0 || !strings.Contains(out, "2 passed") {
		t.Errorf("-k: exit %d\n%s", code, out)
	}
	code, out, errOut = ripple(t, "run", root, "--tests", "--python", py, "-k", "nothing_matches")
	if code != 5 || !strings.Contains(errOut, "no tests collected") {
		t.Errorf("nothing selected: exit %d, want 5\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = ripple(t, "run", root, "--tests", "--python", py, "-x", "test_sel.py")
	if code != 2 || !strings.Contains(errOut, "-x") {
		t.Errorf("a ripple flag pytest-style: exit %d\n%s", code, errOut)
	}
	code, out, _ = ripple(t, "run", root, "--tests", "--python", py, "--", "-x")
	// As pytest: the tests after the stop are not run, and not reported.
	if code != 1 || !strings.Contains(out, "FAILED test_sel.py::test_one") || strings.Contains(out, "test_sel.py::test_slow") {
		t.Errorf("-- -x: exit %d\n%s", code, out)
	}
}

// Without pytest in the interpreter: a unittest suite runs through
// unittest's loader; tests written for pytest stop the run with exit 2
// and one line saying how to install pytest.
func TestNoPytest(t *testing.T) {
	t.Parallel()
	plain := python(t).Path
	if exec.Command(plain, "-c", "import pytest").Run() == nil {
		// This python3 has pytest: a virtual environment of it has not.
		venv := filepath.Join(t.TempDir(), "venv")
		if out, err := exec.Command(plain, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
			t.Fatalf("%s -m venv: %v: %s", plain, err, out)
		}
		plain = filepath.Join(venv, "bin", "python")
		if exec.Command(plain, "-c", "import pytest").Run() == nil {
			t.Fatalf("%s imports pytest", plain)
		}
	}
	root := copyProject(t, filepath.Join("testdata", "pytest", "nopytest_unittest"))
	dir := t.TempDir()
	code, out, errOut := ripple(t, "run", root, "--tests", "--python", plain, "--kernels", "2", "--json", filepath.Join(dir, "r.json"))
	if code != 1 {
		t.Fatalf("unittest suite: exit %d\n%s\n%s", code, out, errOut)
	}
	st := reportStatuses(t, filepath.Join(dir, "r.json"))
	want := map[string]batch.Status{"test_plain.py::TestPlain::test_ok": batch.StatusPassed, "test_plain.py::TestPlain::test_fails": batch.StatusFailed,
		"test_plain.py::TestPlain::test_skipped": batch.StatusSkipped}
	if len(st) != 3 {
		t.Errorf("statuses %v", st)
	}
	for id, s := range want {
		if st[id] != s {
			t.Errorf("%s: %q, want %q (all: %v)", id, st[id], s, st)
		}
	}
	if !strings.Contains(out, "AssertionError: 1 != 2") {
		t.Errorf("console lacks the failure:\n%s", out)
	}
	// Paths select, as they do for pytest: a directory that is not a
	// package (discovery from the project does not reach it), a file.
	for _, sel := range []struct {
		arg  string
		code int
		ids  []string
	}{
		{"more", 0, []string{"more/test_more.py::TestMore::test_more"}},
		{"more/test_more.py", 0, []string{"more/test_more.py::TestMore::test_more"}},
		{"test_plain.py", 1, []string{"test_plain.py::TestPlain::test_fails", "test_plain.py::TestPlain::test_ok", "test_plain.py::TestPlain::test_skipped"}},
	} {
		report := filepath.Join(dir, "sel.json")
		code, out, errOut := ripple(t, "run", root, "--tests", "--python", plain, "--json", report, sel.arg)
		var ids []string
		for id := range reportStatuses(t, report) {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if code != sel.code || !slices.Equal(ids, sel.ids) {
			t.Errorf("unittest, path %s: exit %d, tests %v; want %d, %v\n%s\n%s", sel.arg, code, ids, sel.code, sel.ids, out, errOut)
		}
	}
	// What only pytest can do is refused, naming it; a missing path is a
	// usage error naming it.
	code, out, errOut = ripple(t, "run", root, "--tests", "--python", plain, "-k", "ok")
	if code != 2 || !strings.Contains(errOut, "-k needs it") || !strings.Contains(errOut, "pip install pytest") {
		t.Errorf("unittest with -k: exit %d, want 2 saying -k needs pytest\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = ripple(t, "run", root, "--tests", "--python", plain, "no_such_dir")
	if code != 4 || !strings.Contains(errOut, "unittest (pytest is not installed): file or directory not found: no_such_dir") {
		t.Errorf("unittest, a missing path: exit %d, want pytest's 4 naming it\n%s\n%s", code, out, errOut)
	}

	root = copyProject(t, filepath.Join("testdata", "pytest", "nopytest_pytest_style"))
	code, out, errOut = ripple(t, "run", root, "--tests", "--python", plain)
	if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, plain) ||
		!strings.Contains(errOut, "cannot import pytest") || !strings.Contains(errOut, "test_style.py") || !strings.Contains(errOut, "pip install pytest") {
		t.Errorf("pytest-style tests without pytest: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// The same suite named as a path from another project directory: the
	// files looked at are those given.
	code, out, errOut = ripple(t, "run", t.TempDir(), "--tests", "--python", plain, filepath.Join(root, "test_style.py"))
	if code != 2 || !strings.Contains(errOut, "cannot import pytest") || !strings.Contains(errOut, "test_style.py") {
		t.Errorf("pytest-style tests given as a path, without pytest: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// A usage error pytest reports, and a kernel interpreter that is not
// there, are errors naming what is at fault; no report is written.
func TestPytestUsageErrors(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{"test_u.py": "def test_u():\n    pass\n"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := batch.Run(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: 1, PytestArgs: []string{"--no-such-option"}})
	if rep != nil || !errors.Is(err, batch.ErrUsage) || !strings.Contains(err.Error(), "--no-such-option") {
		t.Errorf("unknown pytest option: %v, %v", rep, err)
	}
	rep, err = batch.Run(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: 1, PytestArgs: []string{"no_such_file.py"}})
	if rep != nil || !errors.Is(err, batch.ErrUsage) || !strings.Contains(err.Error(), "no_such_file.py") {
		t.Errorf("missing path: %v, %v", rep, err)
	}
	// pytest's debugger reads a terminal no kernel has (pdb would read an
	// end of file and quit): refused, as pytest-xdist refuses it, at any
	// number of kernels; the option may come from addopts too.
	for _, c := range []struct {
		kernels int
		args    []string
		want    string
	}{{1, []string{"--pdb"}, "--pdb"}, {2, []string{"--trace"}, "--trace"}, {0, []string{"-o", "addopts=--pdb"}, "--pdb"}} {
		rep, err = batch.Run(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: c.kernels, PytestArgs: c.args})
		if rep != nil || !errors.Is(err, batch.ErrUsage) || !strings.Contains(err.Error(), c.want+": pytest's debugger reads the terminal") {
			t.Errorf("%q at %d kernels: %v, %v; want a usage error naming %s", c.args, c.kernels, rep, err, c.want)
		}
	}
	// pytest-cov in a worker measures for xdist's controller to combine
	// (it failed with an internal error): refused, naming --cov; its
	// --no-cov runs the tests.
	t.Run("cov", func(t *testing.T) {
		if err := exec.Command(py, "-c", "import pytest_cov").Run(); err != nil {
			t.Skipf("pytest-cov is not installed for %s (.ci/run installs python3-pytest-cov): %v", py, err)
		}
		for _, kernels := range []int{1, 2} {
			rep, err := batch.Run(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: kernels, PytestArgs: []string{"--cov=."}})
			if rep != nil || !errors.Is(err, batch.ErrUsage) || !strings.Contains(err.Error(), "--cov: pytest-cov's coverage") {
				t.Errorf("--cov at %d kernels: %v, %v; want a usage error naming --cov", kernels, rep, err)
			}
		}
		rep, err := batch.Run(ctx, batch.Options{Root: root, Tests: true, Python: py, Kernels: 2, PytestArgs: []string{"--cov=.", "--no-cov"}})
		if err != nil || rep == nil || rep.Summary().Passed != 1 {
			t.Errorf("--cov --no-cov: %v, %v; want the test run", rep, err)
		}
	})
}

// copyProject copies a testdata project into a temporary directory (pytest
// writes caches and bytecode next to the tests).
func copyProject(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// pytestJUnit runs pytest itself in root and returns its testcases as
// junitOutcomes does; its exit status must be code.
func pytestJUnit(t *testing.T, py, root string, code int) []string {
	t.Helper()
	junit := filepath.Join(t.TempDir(), "pytest.xml")
	cmd := exec.Command(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", junit, "-o", "junit_family=xunit1")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	got := 0
	if errors.As(err, &exit) {
		got = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if got != code {
		t.Fatalf("pytest exit %d, want %d:\n%s", got, code, out)
	}
	return junitOutcomes(t, junit)
}

// junitOutcomes lists a JUnit file's testcases as "classname | name |
// file:line outcome", sorted; the outcome as pytest's junitxml encodes
// it: failure, error, xfail (skipped of type pytest.xfail), skipped or
// passed.
func junitOutcomes(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		Classname string    `xml:"classname,attr"`
		Name      string    `xml:"name,attr"`
		File      string    `xml:"file,attr"`
		Line      string    `xml:"line,attr"`
		Failure   *struct{} `xml:"failure"`
		Error     *struct{} `xml:"error"`
		Skipped   *struct {
			Type string `xml:"type,attr"`
		} `xml:"skipped"`
	}
	var doc struct {
		Cases  []tc `xml:"testsuite>testcase"`
		Direct []tc `xml:"testcase"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, c := range append(doc.Cases, doc.Direct...) {
		outcome := "passed"
		switch {
		case c.Error != nil:
			outcome = "error"
		case c.Failure != nil:
			outcome = "failure"
		case c.Skipped != nil && c.Skipped.Type == "pytest.xfail":
			outcome = "xfail"
		case c.Skipped != nil:
			outcome = "skipped"
		}
		line := c.Line
		if line == "" {
			line = "0"
		}
		out = append(out, fmt.Sprintf("%s | %s | %s:%s %s", c.Classname, c.Name, c.File, line, outcome))
	}
	slices.Sort(out)
	return out
}

// diffLines lists the lines only in a (-) or only in b (+).
func diffLines(a, b []string) string {
	var d []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			d = append(d, "-"+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			d = append(d, "+"+l)
		}
	}
	if len(d) > 20 {
		d = append(d[:20], fmt.Sprintf("... %d more", len(d)-20))
	}
	if len(d) == 0 && !slices.Equal(a, b) {
		// The same lines in another order (durations sorted otherwise).
		return "the same lines in another order:\n-" + strings.Join(a, "\n-") + "\n+" + strings.Join(b, "\n+")
	}
	return strings.Join(d, "\n")
}

// reportStatuses reads a JSON report's statuses by entry id.
func reportStatuses(t *testing.T, path string) map[string]batch.Status {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []struct {
			ID     string       `json:"id"`
			Status batch.Status `json:"status"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	m := make(map[string]batch.Status, len(doc.Entries))
	for _, e := range doc.Entries {
		m[e.ID] = e.Status
	}
	return m
}

// A run with several kernels divides the cores among the kernels' native
// thread pools (threads.go); a variable the user set reaches the tests
// unchanged.
func TestPytestThreadLimits(t *testing.T) {
	t.Setenv("NUMEXPR_NUM_THREADS", "7")
	for _, v := range []string{"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"} {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	py := pytestPython(t)
	root := project(t, map[string]string{
		"test_env.py":  "import os\n\n\ndef test_a():\n    print(os.environ.get('OPENBLAS_NUM_THREADS'), os.environ.get('NUMEXPR_NUM_THREADS'))\n    assert False\n",
		"test_env2.py": "import os\n\n\ndef test_b():\n    print(os.environ.get('OMP_NUM_THREADS'))\n    assert False\n",
	})
	want := fmt.Sprint(max(runtime.NumCPU()/2, 1))
	rep := run(t, batch.Options{Root: root, Tests: true, Python: py, Kernels: 2})
	got := byID(rep)
	if a := got["test_env.py::test_a"]; a == nil || strings.TrimSpace(a.Stdout) != want+" 7" {
		t.Errorf("2 kernels: test_a printed %q, want %q", a.Stdout, want+" 7")
	}
	if b := got["test_env2.py::test_b"]; b == nil || strings.TrimSpace(b.Stdout) != want {
		t.Errorf("2 kernels: test_b printed %q, want %q", b.Stdout, want)
	}
	rep = run(t, batch.Options{Root: root, Tests: true, Python: py, Kernels: 1})
	if a := byID(rep)["test_env.py::test_a"]; a == nil || strings.TrimSpace(a.Stdout) != "None 7" {
		t.Errorf("1 kernel: test_a printed %q, want the libraries' defaults (None 7)", a.Stdout)
	}
}

// A test that raises KeyboardInterrupt itself (or sends SIGINT to its own
// process) ends pytest's session: exit status 2, the tests after it not
// run. ripple's run ends the same way, on one kernel or several.
func TestPytestTestRaisesKeyboardInterrupt(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{
		"test_a.py": "import sys\n\n\ndef test_exit():\n    sys.exit(3)\n\n\ndef test_raises():\n    raise KeyboardInterrupt\n\n\ndef test_after():\n    pass\n",
		"test_b.py": "import os\nimport signal\nimport time\n\n\ndef test_signals_itself():\n    os.kill(os.getpid(), signal.SIGINT)\n    time.sleep(5)\n",
	})
	pytestJUnit(t, py, root, 2) // pytest's own exit status
	for _, kernels := range []string{"1", "2"} {
		report := filepath.Join(t.TempDir(), "report.json")
		code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", kernels, "--json", report, "--", "-p", "no:cacheprovider")
		if code != 2 {
			t.Fatalf("%s kernels: exit %d, want pytest's 2\nstdout:\n%s\nstderr:\n%s", kernels, code, out, errOut)
		}
		st := reportStatuses(t, report)
		// With 2 kernels test_b.py may interrupt the run before test_exit ran.
		if kernels == "1" && st["test_a.py::test_exit"] != batch.StatusFailed {
			t.Errorf("%s kernels: SystemExit in a test is %q, want failed as under pytest", kernels, st["test_a.py::test_exit"])
		}
		interrupted := 0
		for _, id := range []string{"test_a.py::test_raises", "test_b.py::test_signals_itself"} {
			if st[id] == batch.StatusInterrupted {
				interrupted++
			}
		}
		if interrupted == 0 || (kernels == "1" && st["test_a.py::test_after"] == batch.StatusPassed) {
			t.Errorf("%s kernels: %v, want the run interrupted by the test's KeyboardInterrupt and test_after not run", kernels, st)
		}
		// As pytest's: where the interrupt landed, the test's line.
		if !regexp.MustCompile(`(?m)^/.*/(test_a\.py:9|test_b\.py:7): KeyboardInterrupt$`).MatchString(out) {
			t.Errorf("%s kernels: the console does not say where the interrupt landed:\n%s", kernels, out)
		}
	}
}

// --dist: loadfile (the default) runs a module's classes on one kernel,
// its module fixture set up once; loadscope (xdist's) hands each class to
// a kernel, so two slow classes run at once, each kernel setting up the
// module fixture; load (xdist's default) cuts a module of test functions
// into chunks for both kernels, each setting up its fixture once. The
// outcomes are pytest's either way; an unknown mode is a usage error
// naming it.
func TestPytestDist(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "dist"))
	want := pytestJUnit(t, py, root, 0)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	setups := func(prefix string) []string {
		files, err := filepath.Glob(filepath.Join(root, prefix+"setups-*"))
		if err != nil {
			t.Fatal(err)
		}
		var counts []string
		for _, f := range files {
			counts = append(counts, fmt.Sprint(strings.Count(read(filepath.Base(f)), "setup")))
			os.Remove(f)
		}
		return counts
	}
	// pids: the distinct kernels that ran the module of test functions.
	pids := func() []string {
		files, err := filepath.Glob(filepath.Join(root, "fpid-*"))
		if err != nil || len(files) != 4 {
			t.Fatalf("fpid files %v (%v), want 4", files, err)
		}
		var ps []string
		for _, f := range files {
			ps = append(ps, read(filepath.Base(f)))
			os.Remove(f)
		}
		slices.Sort(ps)
		return slices.Compact(ps)
	}
	setups("") // pytest's
	setups("f")
	pids()
	for _, dist := range []string{"", "loadscope", "load"} {
		args := []string{"run", root, "--tests", "--python", py, "--kernels", "2"}
		if dist != "" {
			args = append(args, "--dist", dist)
		}
		junit := filepath.Join(t.TempDir(), "junit.xml")
		code, out, errOut := ripple(t, append(args, "--junit", junit, "--", "-p", "no:cacheprovider")...)
		if code != 0 {
			t.Fatalf("--dist %q: exit %d\nstdout:\n%s\nstderr:\n%s", dist, code, out, errOut)
		}
		if d := diffLines(want, junitOutcomes(t, junit)); d != "" {
			t.Errorf("--dist %q: JUnit testcases differ from pytest's (-pytest +ripple):\n%s", dist, d)
		}
		first, second, counts := read("pid-TestFirst"), read("pid-TestSecond"), setups("")
		if dist == "" && (first != second || !slices.Equal(counts, []string{"1"})) {
			t.Errorf("loadfile: classes on kernels %s and %s, module fixture set-ups per kernel %v; want one kernel, one set-up", first, second, counts)
		}
		if dist == "loadscope" && (first == second || !slices.Equal(counts, []string{"1", "1"})) {
			t.Errorf("loadscope: classes on kernels %s and %s, module fixture set-ups per kernel %v; want two kernels, one set-up on each", first, second, counts)
		}
		ran, fcounts := pids(), setups("f")
		if dist != "load" && (len(ran) != 1 || !slices.Equal(fcounts, []string{"1"})) {
			t.Errorf("--dist %q: the module of functions ran on kernels %v, its fixture set up %v times per kernel; want one kernel, once", dist, ran, fcounts)
		}
		if dist == "load" && (len(ran) != 2 || !slices.Equal(fcounts, []string{"1", "1"})) {
			t.Errorf("load: the module of functions ran on kernels %v, its fixture set up %v times per kernel; want two kernels, once on each", ran, fcounts)
		}
	}
	code, _, errOut := ripple(t, "run", root, "--tests", "--python", py, "--dist", "each")
	if code != 2 || !strings.Contains(errOut, `--dist "each"`) {
		t.Errorf("--dist each: exit %d, want 2 naming it:\n%s", code, errOut)
	}
}

// Where pytest cannot cache its assertion rewriting (PYTHONDONTWRITEBYTECODE
// here; a read-only tree alike), the kernels take it from ripple's cache
// (kernel/python/ripple_kernel/rewrite_cache.py): the second run reads the entry
// the first wrote (its file is not replaced), an edit of the module
// replaces it, a corrupt entry is rewritten, "off" writes nothing, and an
// entry whose source is gone is pruned. The failure message shows the
// values every time: what runs is pytest's rewritten code.
func TestPytestRewriteCache(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "rewrite_cache"))
	cache := filepath.Join(t.TempDir(), "rewrite")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(cache, "0123456789abcdef")
	if err := os.WriteFile(stale, []byte("ripple-rewrite-2\n/nonexistent/test_gone.py\njunk"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PYTHONDONTWRITEBYTECODE=1", "RIPPLE_REWRITE_CACHE=" + cache}
	run := func(env []string, want string) {
		t.Helper()
		code, out, errOut := rippleEnv(t, env, "run", root, "--tests", "--python", py, "--kernels", "2", "--", "-p", "no:cacheprovider")
		if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "1 passed") {
			t.Fatalf("exit %d, want 1 with %q and 1 passed:\n%s\n%s", code, want, out, errOut)
		}
	}
	entry := func() (string, os.FileInfo) {
		t.Helper()
		var found []string
		names, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if n.Name() != "pruned" {
				found = append(found, n.Name())
			}
		}
		if len(found) != 1 {
			t.Fatalf("cache holds %v, want one entry (the test module's)", found)
		}
		p := filepath.Join(cache, found[0])
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return p, info
	}
	run(env, "assert (2 + 1) == 4")
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the entry of a deleted source was not pruned: %v", err)
	}
	path, first := entry()
	if _, err := os.Stat(filepath.Join(root, "__pycache__")); err == nil {
		t.Fatal("pytest wrote __pycache__ despite PYTHONDONTWRITEBYTECODE: the cache is not what this run uses")
	}

	firstData, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run(env, "assert (2 + 1) == 4")
	if _, again := entry(); !os.SameFile(first, again) || !again.ModTime().Equal(first.ModTime()) {
		t.Error("the second run replaced the entry: it rewrote the module instead of reading the cache")
	}

	src := filepath.Join(root, "test_values.py")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte(strings.Replace(string(data), "== 4", "== 5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	run(env, "assert (2 + 1) == 5")
	if editedPath, _ := entry(); editedPath != path {
		t.Errorf("the edited module's entry is %s, want the same name %s (one entry per file)", editedPath, path)
	}
	if b, err := os.ReadFile(path); err != nil || bytes.Equal(b, firstData) {
		t.Errorf("the entry was not replaced after the module changed (%v)", err)
	}

	if err := os.WriteFile(path, []byte("ripple-rewrite-2\nnot an entry"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(env, "assert (2 + 1) == 5")
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "ripple-rewrite-2\n"+src+"\n") {
		t.Errorf("a corrupt entry was not rewritten: %q %v", b[:min(len(b), 80)], err)
	}

	xdg := t.TempDir()
	run([]string{"PYTHONDONTWRITEBYTECODE=1", "RIPPLE_REWRITE_CACHE=off", "XDG_CACHE_HOME=" + xdg}, "assert (2 + 1) == 5")
	if _, err := os.Stat(filepath.Join(xdg, "ripple", "pytest-rewrite")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RIPPLE_REWRITE_CACHE=off: the default cache directory exists (%v)", err)
	}
	run([]string{"PYTHONDONTWRITEBYTECODE=1", "RIPPLE_REWRITE_CACHE=", "XDG_CACHE_HOME=" + xdg}, "assert (2 + 1) == 5")
	if names, _ := os.ReadDir(filepath.Join(xdg, "ripple", "pytest-rewrite")); len(names) < 1 {
		t.Errorf("by default the cache is $XDG_CACHE_HOME/ripple/pytest-rewrite: it holds nothing")
	}
}

// A kernel holds the progress of tests that pass for a moment (capture.py
// Output.hold_locked); when it dies (os._exit) or is killed (a test that
// ignores the interrupt at its timeout) with some of it unsent, the held
// journal gives it back: every test before is passed, the one that
// killed or hung the kernel has its own result, and the tests after run
// in the new kernel.
func TestPytestHeldProgressSurvivesTheKernel(t *testing.T) {
	t.Parallel()
	root := copyProject(t, filepath.Join("testdata", "pytest", "held_crash"))
	report := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ripple(t, "run", root, "--tests", "--python", pytestPython(t), "--kernels", "1", "--timeout", "3s",
		"--json", report, "--", "-p", "no:cacheprovider")
	if code == 0 {
		t.Errorf("exit 0 with a crash and a timeout\n%s\n%s", out, errOut)
	}
	st := reportStatuses(t, report)
	want := map[string]batch.Status{"test_held.py::test_exit": batch.StatusCrashed, "test_held.py::test_hang": batch.StatusTimeout}
	for n := range 150 {
		want[fmt.Sprintf("test_held.py::test_before_exit[%d]", n)] = batch.StatusPassed
		want[fmt.Sprintf("test_held.py::test_before_hang[%d]", n)] = batch.StatusPassed
	}
	for n := range 50 {
		want[fmt.Sprintf("test_held.py::test_after[%d]", n)] = batch.StatusPassed
	}
	for id, s := range want {
		if st[id] != s {
			t.Errorf("%s: %q, want %q", id, st[id], s)
		}
	}
	if len(st) != len(want) {
		t.Errorf("%d results, want %d", len(st), len(want))
	}
}

// --basetemp, which pytest clears when a session first uses it, is each
// kernel's own popen-gwN directory under the one given when a run has
// several kernels, as under xdist: test_a's kernel keeps its file while
// the other kernel's test_b starts on its own temporary directory
// (before, that start deleted test_a's). One kernel uses the directory
// given, as pytest.
func TestPytestBasetempPerKernel(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{
		"test_a.py": `import os
import time


def test_a(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    deadline = time.monotonic() + 20
    while not os.path.exists("solo") and not os.path.exists("b.started") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "a.txt").read_text() == "a"
    with open("a.tmp", "w") as f:
        f.write(str(tmp_path))
`,
		"test_b.py": `def test_b(tmp_path):
    assert tmp_path.is_dir()
    with open("b.tmp", "w") as f:
        f.write(str(tmp_path))
    open("b.started", "w").close()
`,
	})
	base := filepath.Join(t.TempDir(), "base")
	tmpOf := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", "2", "--json", report, "--", "-p", "no:cacheprovider", "--basetemp", base)
	if st := reportStatuses(t, report); code != 0 || st["test_a.py::test_a"] != batch.StatusPassed || st["test_b.py::test_b"] != batch.StatusPassed {
		t.Fatalf("2 kernels: exit %d, %v\n%s\n%s", code, st, out, errOut)
	}
	a, b := tmpOf("a.tmp"), tmpOf("b.tmp")
	kernelDir := func(p string) bool {
		return filepath.Dir(filepath.Dir(p)) == base && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "popen-gw")
	}
	if !kernelDir(a) || !kernelDir(b) || filepath.Dir(a) == filepath.Dir(b) {
		t.Errorf("2 kernels: tmp_path %s and %s, want each under its kernel's %s/popen-gwN", a, b, base)
	}
	if err := os.WriteFile(filepath.Join(root, "solo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", "1", "--", "-p", "no:cacheprovider", "--basetemp", base); code != 0 {
		t.Fatalf("1 kernel: exit %d\n%s\n%s", code, out, errOut)
	}
	if a := tmpOf("a.tmp"); filepath.Dir(a) != base {
		t.Errorf("1 kernel: tmp_path %s, want directly under %s as pytest's", a, base)
	}
}
