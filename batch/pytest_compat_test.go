package batch_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Tests of ripple run --tests against pytest itself on the same testdata
// project (issue 28): what pytest writes (its --junitxml file, its cache,
// its console) is the oracle.

// pytestRun runs pytest in root with args; its exit status and output.
func pytestRun(t *testing.T, py, root string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-m", "pytest"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CI=true") // as ripple runs (cli_test.go): pytest's output depends on it
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

var junitVolatile = regexp.MustCompile(`(time|timestamp)="[^"]*"|0x[0-9a-f]+`)

// normalJUnit is a JUnit file with what two runs may differ in (times,
// the timestamp, object addresses in tracebacks) blanked.
func normalJUnit(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return junitVolatile.ReplaceAllString(string(data), "$1=\"\"")
}

// pytest's --junitxml, given in the ini file's addopts, is written by
// ripple run as pytest writes it: the same bytes up to times and
// addresses, with 2 kernels and with 1 (each kind of report: a failure's
// longrepr, setup and teardown errors, a failure followed by a teardown
// error as two testcases, skips of type pytest.skip, xfail, a module that
// skips itself). The JSON report and the console count as pytest does.
func TestPytestJUnitXMLAsPytest(t *testing.T) {
	t.Parallel()
	python := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "reports"))
	file := filepath.Join(root, "reports", "junit.xml")
	code, out := pytestRun(t, python, root, "-q")
	if code != 1 || !strings.Contains(out, "4 failed, 2 passed, 3 skipped, 1 xfailed, 3 errors") {
		t.Fatalf("pytest: exit %d\n%s", code, out)
	}
	want := normalJUnit(t, file)
	for _, kernels := range []string{"2", "1"} {
		os.RemoveAll(filepath.Join(root, "reports"))
		report := filepath.Join(t.TempDir(), "r.json")
		code, out, errOut := ripple(t, "run", root, "--tests", "--python", python, "--kernels", kernels, "--json", report)
		if code != 1 {
			t.Fatalf("%s kernels: exit %d\n%s\n%s", kernels, code, out, errOut)
		}
		if got := normalJUnit(t, file); got != want {
			t.Errorf("%s kernels: --junitxml differs from pytest's (-pytest +ripple):\n%s", kernels, diffLines(strings.Split(strings.ReplaceAll(want, "><", ">\n<"), "\n"), strings.Split(strings.ReplaceAll(got, "><", ">\n<"), "\n")))
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Summary map[string]int `json:"summary"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		s := doc.Summary
		if s["failed"] != 4 || s["passed"] != 2 || s["errors"] != 3 || s["skipped"] != 3 || s["xfailed"] != 1 {
			t.Errorf("%s kernels: summary %v, want pytest's 4 failed, 2 passed, 3 skipped, 1 xfailed, 3 errors", kernels, s)
		}
	}
}

// cacheFiles reads pytest's cache values in root (lastfailed, nodeids,
// stepwise) as one text.
func cacheFiles(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range []string{"lastfailed", "nodeids", "stepwise"} {
		data, err := os.ReadFile(filepath.Join(root, ".pytest_cache", "v", "cache", name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		b.WriteString("== " + name + "\n" + string(data) + "\n")
	}
	return b.String()
}

// The cache plugin across the kernels: after each run ripple leaves the
// cache pytest leaves (the same bytes), and --lf, --ff, --nf and --sw
// select from it as pytest does. Each step starts both from pytest's
// cache of the step before.
func TestPytestCacheAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	src := filepath.Join("testdata", "pytest", "cache")
	pRoot, rRoot := copyProject(t, src), filepath.Join(t.TempDir(), "cache")
	steps := []struct {
		name  string
		args  []string
		fixed bool // test_a_fails passes from this step on
	}{
		{"first run", nil, false},
		{"--lf after a fix", []string{"--lf"}, true},
		{"--ff", []string{"--ff"}, true},
		{"--nf", []string{"--nf"}, true},
		{"--sw", []string{"--sw"}, true},
		{"--sw again", []string{"--sw"}, true},
		{"--sw-skip", []string{"--sw-skip"}, true},
		{"-x", []string{"-x"}, true},
	}
	for _, st := range steps {
		if st.fixed {
			writeFile(t, pRoot, "FIXED", "")
		}
		// ripple's copy starts from pytest's state before the step.
		os.RemoveAll(rRoot)
		if err := os.CopyFS(rRoot, os.DirFS(pRoot)); err != nil {
			t.Fatal(err)
		}
		pJUnit, rJUnit := filepath.Join(t.TempDir(), "p.xml"), filepath.Join(t.TempDir(), "r.xml")
		pCode, pOut := pytestRun(t, py, pRoot, append([]string{"-q", "--junitxml", pJUnit, "-o", "junit_family=xunit1"}, st.args...)...)
		code, out, errOut := ripple(t, append([]string{"run", rRoot, "--tests", "--python", py, "--kernels", "2", "--"},
			append([]string{"--junitxml", rJUnit, "-o", "junit_family=xunit1"}, st.args...)...)...)
		if code != pCode {
			t.Errorf("%s: exit %d, pytest's %d\n%s\n%s\npytest:\n%s", st.name, code, pCode, out, errOut, pOut)
		}
		if d := diffLines(junitOutcomes(t, pJUnit), junitOutcomes(t, rJUnit)); d != "" {
			t.Errorf("%s: tests run differ from pytest's (-pytest +ripple):\n%s", st.name, d)
		}
		if want, got := cacheFiles(t, pRoot), cacheFiles(t, rRoot); got != want {
			t.Errorf("%s: cache:\n%s\npytest's:\n%s", st.name, got, want)
		}
	}
}

var collectedIn = regexp.MustCompile(`in [0-9.]+s( =+)?\n`)

// --collect-only (-q and not) prints pytest's own listing, runs nothing,
// and exits as pytest does.
func TestPytestCollectOnlyAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "order"))
	for _, args := range [][]string{{"--co"}, {"--collect-only", "-q"}, {"--co", "-k", "nothing_matches"}, {"--co", "-q", "-k", "more"}} {
		pCode, pOut := pytestRun(t, py, root, append([]string{"-p", "no:cacheprovider"}, args...)...)
		code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", "2", "--", "-p", "no:cacheprovider"}, args...)...)
		if code != pCode {
			t.Errorf("%v: exit %d, pytest's %d\n%s\n%s", args, code, pCode, out, errOut)
		}
		if got, want := collectedIn.ReplaceAllString(out, "collected"), collectedIn.ReplaceAllString(pOut, "collected"); got != want {
			t.Errorf("%v: output:\n%s\npytest's:\n%s", args, got, want)
		}
	}
}

var sessionTime = regexp.MustCompile(`in [0-9.]+s( =+)?$`)

// The console follows pytest's terminal reporter where a CI log reader
// looks: pytest's header with the deselected count, -q's progress line,
// and the last line in pytest's words.
func TestPytestConsoleAsPytest(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := copyProject(t, filepath.Join("testdata", "pytest", "reports"))
	lines := func(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }
	last := func(s string) string { l := lines(s); return sessionTime.ReplaceAllString(l[len(l)-1], "in") }
	for _, quiet := range []bool{false, true} {
		args := []string{"-k", "not marked", "-o", "addopts=", "-p", "no:cacheprovider"}
		if quiet {
			args = append(args, "-q")
		}
		_, pOut := pytestRun(t, py, root, args...)
		_, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--python", py, "--kernels", "2", "--"}, args...)...)
		if got, want := last(out), last(pOut); got != want {
			t.Errorf("quiet %v: last line %q, pytest's %q\n%s", quiet, got, want, errOut)
		}
		if quiet {
			if got, want := lines(out)[1], lines(pOut)[0]; got != want {
				t.Errorf("-q: progress line %q, pytest's %q", got, want)
			}
			continue
		}
		// The header: the session line, platform, rootdir, plugins and
		// "collected 10 items / 1 deselected / 1 skipped / 9 selected".
		if got, want := lines(out)[:5], lines(pOut)[:5]; !slices.Equal(got, want) {
			t.Errorf("header:\n%s\npytest's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
