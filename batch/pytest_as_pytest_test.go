package batch_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

var (
	consoleAddress  = regexp.MustCompile(`0x[0-9a-f]+`)
	consoleDuration = regexp.MustCompile(`(?m)^[0-9]+\.[0-9]{2}s `)
)

// normalConsole is a console output with what two runs may differ in
// blanked (session and test times, object addresses) and ripple's own
// lines (its start and summary, "ripple run: ...") left out.
func normalConsole(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "ripple run: ") {
			keep = append(keep, l)
		}
	}
	s = strings.Join(keep, "")
	s = sessionTimes.ReplaceAllString(s, "in TIME")
	s = consoleAddress.ReplaceAllString(s, "0xADDR")
	return sortDurations(consoleDuration.ReplaceAllString(s, "T.TTs "))
}

// sortDurations sorts the lines of --durations' section: their order is
// the measured times', which a loaded machine may swap for two tests
// whose sleeps differ by 0.14 s (it did, for pytest itself).
func sortDurations(s string) string {
	lines := strings.SplitAfter(s, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.Contains(lines[i], " slowest ") && !strings.Contains(lines[i], "slowest durations") {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.HasPrefix(lines[j], "T.TTs ") {
			j++
		}
		slices.Sort(lines[i+1 : j])
		i = j - 1
	}
	return strings.Join(lines, "")
}

// The console is pytest's terminal reporter's output, line for line (up
// to times, addresses and ripple's own two lines), at 2 kernels and 1:
// per-file progress lines at default verbosity, -v and -vv lines, -q and
// -qq, the ERRORS and FAILURES sections (--tb styles), the warnings
// summary (warnings at import and in tests, grouped by message, twelve of
// one kind counted by file), PASSES (-rP), --durations and
// --durations-min, the -r short summary (pytest's default fE, -ra, -rA,
// -rfE), -x's and --maxfail's stop line, the last line, and the colours
// of all of it with --color=yes.
func TestPytestConsoleLayoutAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	console := copyProject(t, filepath.Join("testdata", "pytest", "console"))
	reports := copyProject(t, filepath.Join("testdata", "pytest", "reports"))
	// Several warnings at once, at collection and in a test: each counts.
	warned := copyProject(t, filepath.Join("testdata", "pytest", "warnings_count"))
	cases := []struct {
		root string
		args []string
	}{
		{console, nil},
		{console, []string{"-v"}},
		{console, []string{"-vv", "-rA"}},
		{console, []string{"-q"}},
		{console, []string{"-qq"}},
		{console, []string{"-ra"}},
		{console, []string{"-rfE", "--tb=short"}},
		{console, []string{"--durations=5", "--durations-min=0.1"}},
		{console, []string{"--durations=2"}},
		{console, []string{"-W", "error::DeprecationWarning", "--tb=line"}},
		{console, []string{"--disable-warnings", "-rP"}},
		{console, []string{"--maxfail=2"}},
		{console, []string{"-x", "-v"}},
		{console, []string{"--color=yes", "-rA"}},
		{console, []string{"--color=yes", "-v"}},
		{console, []string{"--color=yes", "-q"}},
		// pytest's junitxml says where it wrote, after the passes.
		{console, []string{"--junitxml=reports/junit.xml", "-rA", "--durations=2"}},
		{console, []string{"--junitxml=reports/junit.xml", "-qq"}},
		{reports, []string{"-o", "addopts=", "-p", "no:cacheprovider"}},
		{reports, []string{"-o", "addopts=", "-p", "no:cacheprovider", "--tb=no", "-ra"}},
		{reports, []string{"-o", "addopts=", "-p", "no:cacheprovider", "--color=yes", "-v", "-k", "not marked"}},
		{warned, []string{"-p", "no:cacheprovider"}},
		{warned, []string{"-q", "-p", "no:cacheprovider"}},
	}
	for _, c := range cases {
		_, pOut, _ := pytestRunSplit(t, py, c.root, c.args...)
		want := normalConsole(pOut)
		for _, kernels := range []string{"2", "1"} {
			_, out, errOut := ripple(t, append([]string{"run", c.root, "--tests", "--python", py, "--kernels", kernels, "--"}, c.args...)...)
			if got := normalConsole(out); got != want {
				t.Errorf("%s %q, %s kernels: console differs from pytest's (-pytest +ripple):\n%s\nstderr:\n%s", filepath.Base(c.root), c.args, kernels,
					diffLines(strings.Split(want, "\n"), strings.Split(got, "\n")), errOut)
			}
		}
	}
}

// ripple run --tests --watch writes pytest's --junitxml (from addopts)
// and its cache on every run as a run without --watch does: the first
// run's file and cache are pytest's for the suite, and a hot re-run's
// are pytest's for the tests it re-ran (here one, now failing), with the
// cache carried over as pytest carries it.
func TestWatchWritesJUnitAndCacheAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := map[string]string{
		"pytest.ini":      "[pytest]\naddopts = --junitxml=reports/junit.xml\njunit_family = xunit1\n",
		"pkg/__init__.py": "",
		"pkg/lib.py":      "def double(x):\n    return x * 2\n",
		"test_lib.py":     "from pkg.lib import double\n\n\ndef test_double():\n    assert double(2) == 4\n\n\ndef test_other():\n    assert True\n",
	}
	oracle := project(t, files)
	w := watchProject(t, files, 2)
	junit := func(root string) string { return normalJUnit(t, filepath.Join(root, "reports", "junit.xml")) }
	check := func(step string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(w.root, "reports", "junit.xml")); err != nil {
			t.Errorf("%s: no --junitxml file: %v", step, err)
			return
		}
		if got, want := junit(w.root), junit(oracle); got != want {
			t.Errorf("%s: --junitxml:\n%s\npytest's:\n%s", step, got, want)
		}
		if got, want := cacheFiles(t, w.root), cacheFiles(t, oracle); got != want {
			t.Errorf("%s: cache:\n%s\npytest's:\n%s", step, got, want)
		}
	}
	if code, out := pytestRun(t, py, oracle); code != 0 {
		t.Fatalf("pytest: exit %d\n%s", code, out)
	}
	check("first run")

	broken := "def double(x):\n    return x * 3\n"
	writeFile(t, oracle, "pkg/lib.py", broken)
	if code, out := pytestRun(t, py, oracle, "test_lib.py::test_double"); code != 1 {
		t.Fatalf("pytest after the change: exit %d\n%s", code, out)
	}
	r, _ := w.save("pkg/lib.py", broken, true)
	if r.rep == nil || len(r.rep.Results) != 1 || r.rep.Results[0].Status != batch.StatusFailed {
		t.Fatalf("hot re-run: %v\n%s", r.err, outline(r.rep))
	}
	check("hot re-run")
}

// What tests leave for the end of the process happens before ripple run
// exits, as before pytest exits: atexit handlers, a non-daemon thread
// joined, an unclosed file flushed, a module global's __del__, logging's
// shutdown. (A kernel that ran pytest skips the collector's last walks of
// its heap at exit: kernel.py _freeze_heap.)
func TestPytestExitEffectsAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	effects := func(root string) map[string]string {
		t.Helper()
		got := map[string]string{}
		entries, err := os.ReadDir(filepath.Join(root, "effects"))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(root, "effects", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got[e.Name()] = string(data)
		}
		return got
	}
	src := filepath.Join("testdata", "pytest", "exit_effects")
	proot := copyProject(t, src)
	if code, out, errOut := pytestRunSplit(t, py, proot, "-p", "no:cacheprovider"); code != 0 {
		t.Fatalf("pytest: exit %d\n%s\n%s", code, out, errOut)
	}
	want := effects(proot)
	if len(want) != 5 {
		t.Fatalf("pytest left %d effects, want 5: %v", len(want), want)
	}
	for _, kernels := range []string{"1", "2"} {
		root := copyProject(t, src)
		code, out, errOut := ripple(t, "run", root, "--tests", "--python", py, "--kernels", kernels, "--", "-p", "no:cacheprovider")
		if code != 0 {
			t.Fatalf("--kernels %s: exit %d\n%s\n%s", kernels, code, out, errOut)
		}
		got := effects(root)
		for name, text := range want {
			if got[name] != text {
				t.Errorf("--kernels %s: effects/%s holds %q, under pytest %q", kernels, name, got[name], text)
			}
		}
		if len(got) != len(want) {
			t.Errorf("--kernels %s: effects %v, under pytest %v", kernels, got, want)
		}
	}
}

// pytest's --junitxml file as pytest writes it, up to times and addresses,
// at 2 kernels and 1, and the console's last line: junit_escape, what
// pytest's bin_xml_escape escapes, characters above U+FFFF included
// (dateutil's suite has one in a failing line); junit_records, what tests
// record into the file (record_property, record_xml_attribute,
// record_testsuite_property: hypothesis's statistics are the testsuite's
// properties under pytest), in both junit families (xunit2 drops the
// added attributes and warns of them).
func TestPytestJUnitXMLRecordsAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	cases := []struct {
		dir, must string
		args      []string
	}{
		{"junit_escape", "#x1F43C", nil},
		{"junit_records", `<properties><property name="ARCH" value="x86_64" /></properties>`, nil},
		{"junit_records", `<property name="ticket" value="JIRA-1" />`, []string{"-o", "junit_family=xunit2"}},
	}
	for _, c := range cases {
		root := copyProject(t, filepath.Join("testdata", "pytest", c.dir))
		file := filepath.Join(root, "reports", "junit.xml")
		pCode, pOut := pytestRun(t, py, root, c.args...)
		want := normalJUnit(t, file)
		if !strings.Contains(want, c.must) {
			t.Fatalf("%s %q: pytest's file has no %s:\n%s", c.dir, c.args, c.must, want)
		}
		last := func(s string) string {
			l := strings.Split(strings.TrimRight(s, "\n"), "\n")
			return sessionTime.ReplaceAllString(l[len(l)-1], "in")
		}
		for _, kernels := range []string{"2", "1"} {
			os.RemoveAll(filepath.Join(root, "reports"))
			code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", kernels, "--"}, c.args...)...)
			if code != pCode {
				t.Fatalf("%s %q, %s kernels: exit %d, pytest's %d\n%s\n%s", c.dir, c.args, kernels, code, pCode, out, errOut)
			}
			if got := normalJUnit(t, file); got != want {
				t.Errorf("%s %q, %s kernels: --junitxml file differs from pytest's (-pytest +ripple):\n%s", c.dir, c.args, kernels,
					diffLines(strings.Split(want, "><"), strings.Split(got, "><")))
			}
			if got, want := last(out), last(pOut); got != want {
				t.Errorf("%s %q, %s kernels: last line %q, pytest's %q", c.dir, c.args, kernels, got, want)
			}
		}
	}
}

// Without pytest, the tests a load_tests hook adds (a module's doctests,
// a FunctionTestCase) are tests of their own, each with its own node id
// (the doctests as pytest's --doctest-modules names them), not one id per
// class (more-itertools' 165 doctests were 165 DocTestCase::runTest).
func TestUnittestLoadTestsIDs(t *testing.T) {
	t.Parallel()
	root := copyProject(t, filepath.Join("testdata", "pytest", "unittest_doctests"))
	report := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := ripple(t, "run", root, "--tests", "--python", unittestPython(t), "--kernels", "1", "--json", report)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	st := reportStatuses(t, report)
	want := []string{"test_lib.py::TestLib::test_double", "mylib.py::mylib.double", "mylib.py::mylib.halve", "test_lib.py::check_function"}
	if len(st) != len(want) {
		t.Errorf("%d tests, want %d: %v", len(st), len(want), st)
	}
	for _, id := range want {
		if st[id] != batch.StatusPassed {
			t.Errorf("%s: %q, want passed (report: %v)", id, st[id], st)
		}
	}
}

// A collection error with -x or --maxfail ends the session as pytest's
// ends: when it reaches the limit before the last module, pytest's
// Session.Failed ("stopping after 1 failures", exit status 1; ripple's
// kernel failed with a project error); in the last module, that line over
// pytest's Interrupted (exit status 2). Console and status as pytest's, at
// 2 kernels and 1.
func TestPytestCollectionStopAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "collect_stop"))
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"-x"}, 1},
		{[]string{"--maxfail=1", "-q"}, 1},
		{[]string{"-x", "test_a.py", "test_b_broken.py"}, 2},
		{[]string{"--maxfail=2"}, 2},
	} {
		args := append([]string{"-p", "no:cacheprovider"}, c.args...)
		pCode, pOut, _ := pytestRunSplit(t, py, root, args...)
		if pCode != c.code {
			t.Fatalf("%q: pytest's exit %d, want %d\n%s", c.args, pCode, c.code, pOut)
		}
		for _, kernels := range []string{"2", "1"} {
			code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", kernels, "--"}, args...)...)
			if code != pCode {
				t.Errorf("%q, %s kernels: exit %d, pytest's %d\n%s\n%s", c.args, kernels, code, pCode, out, errOut)
			}
			if got, want := normalConsole(out), normalConsole(pOut); got != want {
				t.Errorf("%q, %s kernels: console differs from pytest's (-pytest +ripple):\n%s", c.args, kernels,
					diffLines(strings.Split(want, "\n"), strings.Split(got, "\n")))
			}
		}
	}
}

// A conftest hook that raises while pytest collects is pytest's internal
// error: exit status 3, its INTERNALERROR> lines on stdout (the frames of
// pytest's own main, which a kernel does not run, aside) and its last
// line, at 2 kernels and 1 (ripple reported a project error, status 2).
func TestPytestInternalErrorAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "internal_error"))
	args := []string{"-p", "no:cacheprovider"}
	pCode, pOut, _ := pytestRunSplit(t, py, root, args...)
	if pCode != 3 {
		t.Fatalf("pytest: exit %d, want 3\n%s", pCode, pOut)
	}
	internal := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "INTERNALERROR>") {
				out = append(out, l)
			}
		}
		return out
	}
	want := internal(pOut)
	for _, kernels := range []string{"2", "1"} {
		code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", kernels, "--"}, args...)...)
		if code != 3 {
			t.Errorf("%s kernels: exit %d, pytest's 3\n%s\n%s", kernels, code, out, errOut)
		}
		got := internal(out)
		// Each of ripple's lines is pytest's, in pytest's order, down to
		// the exception's line.
		j := 0
		for _, l := range got {
			for j < len(want) && want[j] != l {
				j++
			}
			if j == len(want) {
				t.Errorf("%s kernels: %q is not among pytest's INTERNALERROR lines, in order:\n%s", kernels, l, strings.Join(want, "\n"))
				break
			}
		}
		if len(got) == 0 || got[len(got)-1] != "INTERNALERROR> RuntimeError: broken hook" {
			t.Errorf("%s kernels: INTERNALERROR lines end %q\n%s", kernels, got, out)
		}
		lines := strings.Split(strings.TrimRight(normalConsole(out), "\n"), "\n")
		pLines := strings.Split(strings.TrimRight(normalConsole(pOut), "\n"), "\n")
		if lines[len(lines)-1] != pLines[len(pLines)-1] {
			t.Errorf("%s kernels: last line %q, pytest's %q", kernels, lines[len(lines)-1], pLines[len(pLines)-1])
		}
	}
}

// A --collect-only listing longer than the kernel's answer may be (click's
// suite: 137 KB) is pytest's whole listing, at 1 and 2 kernels.
func TestPytestCollectOnlyLongAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "long_listing"))
	for _, args := range [][]string{{"--co", "-q"}, {"--co"}} {
		args = append([]string{"-p", "no:cacheprovider"}, args...)
		pCode, pOut := pytestRun(t, py, root, args...)
		if len(pOut) < 100_000 {
			t.Fatalf("%q: pytest's listing has only %d bytes", args, len(pOut))
		}
		for _, kernels := range []string{"2", "1"} {
			code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", kernels, "--"}, args...)...)
			if code != pCode {
				t.Errorf("%q, %s kernels: exit %d, pytest's %d\n%s", args, kernels, code, pCode, errOut)
			}
			if got, want := collectedIn.ReplaceAllString(out, "collected"), collectedIn.ReplaceAllString(pOut, "collected"); got != want {
				t.Errorf("%q, %s kernels: listing differs from pytest's (-pytest +ripple):\n%s", args, kernels,
					diffLines(strings.Split(want, "\n"), strings.Split(got, "\n")))
			}
		}
	}
}

// A KeyboardInterrupt that ends a test (here the test's own, raised in a
// helper) ends the session as pytest's does: no progress character for
// the interrupted test or for those never started, pytest's
// "KeyboardInterrupt" line, where the interrupt landed (file:line) with
// the --full-trace hint, and a last line that counts what ran; exit
// status 2. Console as pytest's at 2 kernels and 1, at three
// verbosities.
func TestPytestKeyboardInterruptAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "keyboard_interrupt"))
	for _, extra := range [][]string{nil, {"-v"}, {"-q", "-rA"}} {
		args := append([]string{"-p", "no:cacheprovider"}, extra...)
		if code := consoleAsPytest(t, py, root, args, "test_interrupt.py:8: KeyboardInterrupt", false); code != 2 {
			t.Errorf("%q: pytest's exit %d, want 2 (interrupted)", extra, code)
		}
	}
}

// consoleAsPytest runs pytest in root with args, which must print want,
// then ripple at 2 kernels and 1 with the same arguments: its exit
// status and stdout (normalConsole), and with stderr its stderr, must be
// pytest's. It returns pytest's exit status.
func consoleAsPytest(t *testing.T, py, root string, args []string, want string, stderr bool) int {
	t.Helper()
	pCode, pOut, pErr := pytestRunSplit(t, py, root, args...)
	if !strings.Contains(pOut, want) {
		t.Fatalf("%q: pytest's stdout lacks %q:\n%s", args, want, pOut)
	}
	for _, kernels := range []string{"2", "1"} {
		code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", kernels, "--"}, args...)...)
		if code != pCode {
			t.Errorf("%q, %s kernels: exit %d, pytest's %d\n%s\n%s", args, kernels, code, pCode, out, errOut)
		}
		if got, want := normalConsole(out), normalConsole(pOut); got != want {
			t.Errorf("%q, %s kernels: stdout differs from pytest's (-pytest +ripple):\n%s", args, kernels,
				diffLines(strings.Split(want, "\n"), strings.Split(got, "\n")))
		}
		if got := normalConsole(errOut); stderr && got != pErr {
			t.Errorf("%q, %s kernels: stderr %q, pytest's %q", args, kernels, got, pErr)
		}
	}
	return pCode
}

// What tests write past pytest's capture (-s; a write to fd 1 under
// --capture=sys) reaches the console where pytest's terminal shows it:
// after the test's location, each part before the letter of the report
// that followed it (the console project prints in a teardown that
// fails, after the call's letter), not counted in the progress line's
// width; what they write to stderr goes to stderr. Stdout and stderr as
// pytest's, at 2 kernels and 1.
func TestPytestPassThroughAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	passthrough := copyProject(t, filepath.Join("testdata", "pytest", "passthrough"))
	console := copyProject(t, filepath.Join("testdata", "pytest", "console"))
	for _, c := range []struct {
		root, wrote string
		extra       []string
	}{
		{passthrough, "two: straight to fd 1", []string{"-s"}},
		{passthrough, "two: straight to fd 1", []string{"-s", "-v"}},
		{passthrough, "two: straight to fd 1", []string{"-s", "-q", "-rA"}},
		{passthrough, "two: straight to fd 1", []string{"--capture=sys"}},
		{console, "in teardown", []string{"-s"}},
		{console, "in teardown", []string{"-s", "-v", "-rA"}},
	} {
		consoleAsPytest(t, py, c.root, append([]string{"-p", "no:cacheprovider"}, c.extra...), c.wrote, true)
	}
}
