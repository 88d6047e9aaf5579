package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

// ripple runs the built binary and returns its exit status and output.
func ripple(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return rippleEnv(t, nil, args...)
}

// rippleEnv is ripple with env (NAME=value) added to the environment.
func rippleEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rippleBin, args...)
	cmd.Env = append(append(os.Environ(), "CI=true"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("ripple %q: %v", args, err)
	return 0, "", ""
}

// The fixture through the real binary: exit status 1, one line per entry
// in report order, and reports that parse (JUnit checked with Go's and
// Python's XML parsers).
func TestCLIFixture(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junit, jsonPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
	code, out, errOut := ripple(t, "run", fixture, "--tests", "--python", pytestPython(t), "--timeout", "1s", "--kernels", "2", "--junit", junit, "--json", jsonPath,
		"--", "--continue-on-collection-errors", "-rA")
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// pytest's short test summary (-rA): a line per result, by outcome.
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 1 && slices.Contains([]string{"PASSED", "FAILED", "ERROR", "CRASHED", "TIMEOUT", "SKIPPED"}, f[0]) {
			ids = append(ids, f[0]+" "+f[1])
		}
	}
	want := []string{"PASSED test_math.py::test_add", "PASSED test_math.py::test_needs_fixture", "PASSED test_math.py::TestCalc::test_method",
		"PASSED test_print.py::test_prints", "SKIPPED [1]", "ERROR test_syntax.py", "ERROR test_uses_broken.py",
		"FAILED test_math.py::test_add_wrong", "FAILED test_math.py::test_raises_in_helper",
		"FAILED test_math.py::TestCalc::test_method_wrong", "FAILED test_print.py::test_prints_then_fails",
		"CRASHED test_crash.py::test_exit", "CRASHED test_crash.py::test_segfault", "TIMEOUT test_hang.py::test_hang_ignoring_sigint"}
	if strings.Join(ids, "\n") != strings.Join(want, "\n") {
		t.Errorf("result lines:\n%s\nwant:\n%s", strings.Join(ids, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range []string{
		"_ test_prints_then_fails _",
		"- Captured stdout call -",
		"the context of the failure",
		">       assert total == expected, \"2 + 2 should be 5\"",
		"E       assert 4 == 5",
		"ripple run: 14 tests in ",
		"4 passed, 4 failed, 2 errors, 2 crashed, 1 timed out, 1 skipped",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}

	root := readJUnitFile(t, junit)
	if mustAttr(root, "tests") != "14" || mustAttr(root, "failures") != "4" || mustAttr(root, "errors") != "5" || mustAttr(root, "skipped") != "1" {
		t.Errorf("JUnit totals %+v", root.Attrs)
	}
	py := exec.Command(python(t).Path, "-c", "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); print(len(r.findall('testsuite/testcase')))", junit)
	if b, err := py.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != "14" {
		t.Errorf("Python's XML parser on the JUnit report: %v: %s", err, b)
	}
	var doc struct {
		Summary map[string]int `json:"summary"`
		Entries []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
			Stdout string `json:"stdout"`
		} `json:"entries"`
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary["total"] != 14 || doc.Summary["crashed"] != 2 || doc.Summary["timeout"] != 1 || len(doc.Entries) != 14 ||
		doc.Entries[12].ID != "test_print.py::test_prints" {
		t.Errorf("JSON report: %+v", doc)
	}
}

func TestCLIPasses(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"main.py": "def main():\n    x = 1\n    print('ran', x)\n"})
	code, out, errOut := ripple(t, "run", "--show-values", root)
	if code != 0 || !strings.Contains(out, "PASSED   main.py:1  main:main") || !strings.Contains(out, "=> 1") ||
		!strings.Contains(out, "1 passed") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// --log-level debug shows the run's phases on stderr, and only there: the
// console output and the exit status are those of a quiet run.
func TestCLILogLevelDebug(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"main.py": "def main():\n    x = 1\n"})
	code, out, errOut := ripple(t, "run", "--log-level", "debug", root)
	if code != 0 || !strings.Contains(out, "1 passed") || strings.Contains(out, "level=DEBUG") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, phase := range []string{`msg="kernels started"`, `msg="entries discovered"`, `msg="run start"`, `msg="entries ended"`, `msg="engine stopped"`} {
		if !strings.Contains(errOut, phase) {
			t.Errorf("stderr lacks %s:\n%s", phase, errOut)
		}
	}
	if _, _, quiet := ripple(t, "run", root); quiet != "" {
		t.Errorf("default log level wrote to stderr: %q", quiet)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	noMain := project(t, map[string]string{"lib.py": "x = 1\n"})
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", fixture, "--bogus"}, "bogus"},
		{[]string{"run", fixture, "--tests", "--shard", "3/2"}, `--shard "3/2"`},
		{[]string{"run", fixture, "--entry", "nocolon"}, `--entry "nocolon"`},
		{[]string{"run", fixture, "--entry", "nosuch:main"}, "module nosuch is not in the project"},
		{[]string{"run", fixture, "--kernels", "-1"}, "--kernels -1"},
		{[]string{"run", fixture, "--timeout", "soon"}, "soon"},
		{[]string{"run", fixture, "--log-level", "loud"}, `--log-level "loud": want debug, info, warn or error`},
		{[]string{"run", fixture, "--tests", "--junit", filepath.Join(file, "junit.xml")}, "not a directory"},
		{[]string{"run", fixture, "--tests", "--json", t.TempDir()}, "is a directory"},
		{[]string{"run", filepath.Join(t.TempDir(), "missing")}, "missing"},
		{[]string{"run", file}, "not a directory"},
		{[]string{"run", fixture, noMain}, "at most one project directory"},
		{[]string{"run", noMain}, "no main.py"},
		{[]string{"run", fixture, "-k", "add"}, "need --tests"},
		{[]string{"run", fixture, "--tests", "--entry", "main:main"}, "--tests and --entry"},
		{[]string{"run", fixture, "--python", "/nonexistent/python3"}, "/nonexistent/python3"},
		{[]string{"report"}, "usage: ripple report merge"},
		{[]string{"report", "merge", "out.xml"}, "at least one IN"},
		{[]string{"report", "merge", filepath.Join(t.TempDir(), "out.txt"), "a.xml"}, "want a .xml (JUnit) or .json"},
		{[]string{"report", "merge", filepath.Join(t.TempDir(), "out.xml"), "/nonexistent/a.xml"}, "/nonexistent/a.xml"},
	}
	for _, c := range cases {
		code, out, errOut := ripple(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("ripple %q: exit %d, stderr %q; want exit 2 naming %q (stdout %q)", c.args, code, errOut, c.want, out)
		}
	}
	if code, out, _ := ripple(t, "run", "-h"); code != 0 || !strings.Contains(out, "-fail-fast") || !strings.Contains(out, "-- PYTEST_ARGS") {
		t.Errorf("run -h: exit %d, %q", code, out)
	}
}

func TestCLIFailFastAndTimeout(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_t.py": `import time


def test_a_slow():
    time.sleep(60)


def test_b():
    x = 1
`})
	code, out, _ := ripple(t, "run", root, "--tests", "--python", pytestPython(t), "--kernels", "1", "--timeout", "0.5", "--fail-fast")
	// The test --fail-fast left unrun: in ripple's summary line, not
	// pytest's (as after -x, pytest never started it).
	if code != 1 || !strings.Contains(out, "TIMEOUT test_t.py::test_a_slow") || !strings.Contains(out, "1 timed out, 1 skipped (stopped at the first failure") ||
		!strings.Contains(out, "= 1 timed out in ") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// Ctrl-C: the binary stops its kernels, writes the reports of what ran
// and exits with 2, as pytest does when interrupted.
func TestCLIInterrupt(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "running")
	root := project(t, map[string]string{"test_i.py": `import time


def test_1():
    x = 1


def test_2_waits():
    open('` + marker + `', 'w').close()
    time.sleep(120)
`})
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(rippleBin, "run", root, "--tests", "--python", pytestPython(t), "--kernels", "1", "--json", jsonPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !testenv.Poll(testenv.Deadline(t), func() bool { _, err := os.Stat(marker); return err == nil }) {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("test_2 never started:\n%s\n%s", stdout.String(), stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// pytest's account of a Ctrl-C (where it landed, the --full-trace
	// hint), ripple's summary line saying the run was interrupted.
	if !strings.Contains(stdout.String(), "/test_i.py:10: KeyboardInterrupt\n(to show a full traceback on KeyboardInterrupt use --full-trace)\n") ||
		!strings.Contains(stdout.String(), "(interrupted)") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	var doc struct {
		Interrupted bool `json:"interrupted"`
		Entries     []struct {
			Status string `json:"status"`
		} `json:"entries"`
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &doc); err != nil || !doc.Interrupted || len(doc.Entries) != 2 || doc.Entries[0].Status != "passed" ||
		doc.Entries[1].Status != "interrupted" {
		t.Errorf("report %v: %s", err, data)
	}
	if pids := kernelsIn(t, root); len(pids) > 0 {
		t.Errorf("kernels left after Ctrl-C: %v", pids)
	}
}

// Shards of a run, merged, give the unsharded run's report.
func TestCLIShardsMerge(t *testing.T) {
	t.Parallel()
	root := project(t, sleepyTests(10))
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	if code, out, errOut := ripple(t, "run", root, "--tests", "--python", pytestPython(t), "--kernels", "2", "--junit", p("all.xml"), "--json", p("all.json")); code != 1 {
		t.Fatalf("unsharded: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, k := range []string{"1", "2"} {
		code, out, errOut := ripple(t, "run", root, "--tests", "--python", pytestPython(t), "--kernels", "2", "--shard", k+"/2", "--junit", p(k+".xml"), "--json", p(k+".json"))
		if code != 0 && code != 1 {
			t.Fatalf("shard %s: exit %d\n%s\n%s", k, code, out, errOut)
		}
		if !strings.Contains(out, "(shard "+k+"/2)") {
			t.Errorf("shard %s summary:\n%s", k, out)
		}
	}
	for _, ext := range []string{".xml", ".json"} {
		code, out, errOut := ripple(t, "report", "merge", p("merged"+ext), p("1"+ext), p("2"+ext))
		if code != 0 || !strings.Contains(out, "wrote") {
			t.Fatalf("merge %s: exit %d\n%s\n%s", ext, code, out, errOut)
		}
	}
	if got, want := strings.Join(testcases(readJUnitFile(t, p("merged.xml"))), "\n"), strings.Join(testcases(readJUnitFile(t, p("all.xml"))), "\n"); got != want {
		t.Errorf("merged JUnit:\n%s\nunsharded:\n%s", got, want)
	}
	statuses := func(path string) string {
		var doc struct {
			Entries []struct{ ID, Status string } `json:"entries"`
		}
		data, _ := os.ReadFile(path)
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range doc.Entries {
			b.WriteString(e.ID + " " + e.Status + "\n")
		}
		return b.String()
	}
	if got, want := statuses(p("merged.json")), statuses(p("all.json")); got != want || strings.Count(got, "\n") != 10 {
		t.Errorf("merged JSON:\n%s\nunsharded:\n%s", got, want)
	}
}
