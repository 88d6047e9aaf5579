package batch_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
)

// logImport is the head of every test module of these projects: it
// appends "file pid" to imports.log in the working directory (the project
// root, for pytest and for the kernels) when the module is imported.
const logImport = `import os

with open("imports.log", "a") as _log:
    _log.write("%s %d\n" % (os.path.basename(__file__), os.getpid()))
`

// splitProject is a suite with pytest.ini's testpaths, python_files and
// norecursedirs, a conftest.py with a session fixture, a package, module-
// and class-scoped fixtures, parametrize, unittest, skip, xfail, a
// failure, a module that fails to import, and modules pytest must not
// collect (outside testpaths, in a norecursedirs directory).
func splitProject(t *testing.T) string {
	return project(t, map[string]string{
		"pytest.ini": "[pytest]\ntestpaths = tests\npython_files = test_*.py check_*.py\nnorecursedirs = skipme .*\n",
		"tests/conftest.py": `import os

import pytest


@pytest.fixture(scope="session")
def session_value():
    return 42


def pytest_collection_finish(session):
    with open("imports.log", "a") as log:
        log.write("-- %d\n" % os.getpid())
`,
		"tests/test_alpha.py": logImport + `import pytest


@pytest.fixture(scope="module")
def module_value():
    return 1


class TestAlpha:
    def test_one(self, module_value, session_value):
        assert module_value + session_value == 43

    def test_fails(self):
        assert 1 + 1 == 3


@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n):
    assert n > 0


def test_deselected():
    pass
`,
		"tests/test_beta.py": logImport + `import unittest


class TestBeta(unittest.TestCase):
    def test_b(self):
        self.assertEqual(2, 2)

    def test_a(self):
        self.assertTrue(True)
`,
		"tests/sub/check_gamma.py": logImport + `import pytest


def test_gamma():
    pass


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass
`,
		"tests/pkg/__init__.py": "",
		"tests/pkg/test_delta.py": logImport + `import pytest


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False


def test_delta():
    pass
`,
		"tests/pkg/test_broken.py": logImport + "import no_such_module_anywhere\n",
		"tests/test_big.py": logImport + "# " + strings.Repeat("padding ", 400) + `


def test_big_1():
    pass


def test_big_2():
    pass


class TestBig:
    def test_3(self):
        pass

    def test_4(self, session_value):
        assert session_value == 42
`,
		"tests/test_eps.py": logImport + `
def test_eps():
    pass
`,
		"tests/skipme/test_never.py": logImport + "def test_never():\n    pass\n",
		"outside/test_outside.py":    logImport + "def test_outside():\n    pass\n",
	})
}

// imports reads imports.log: file -> the pids that imported it, in order;
// and per pid, the files it imported in its first collection (before its
// first "-- pid" line, which splitProject's conftest.py writes when a
// session's collection ends).
func imports(t *testing.T, root string) (map[string][]string, map[string][]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "imports.log"))
	if err != nil {
		t.Fatal(err)
	}
	m, first := map[string][]string{}, map[string][]string{}
	done := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		file, pid, _ := strings.Cut(line, " ")
		if file == "--" {
			done[pid] = true
			continue
		}
		m[file] = append(m[file], pid)
		if !done[pid] {
			first[pid] = append(first[pid], file)
		}
	}
	return m, first
}

// pytestOracle runs pytest itself in root with args: its exit status, its
// JUnit testcases (junitOutcomes) and its items in order (--collect-only).
// It leaves no imports.log behind.
func pytestOracle(t *testing.T, py, root string, args ...string) (int, []string, []string) {
	t.Helper()
	junit := filepath.Join(t.TempDir(), "pytest.xml")
	cmd := exec.Command(py, append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", junit, "-o", "junit_family=xunit1"}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	outcomes := junitOutcomes(t, junit)
	cmd = exec.Command(py, append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only"}, args...)...)
	cmd.Dir = root
	out, _ = cmd.CombinedOutput()
	var order []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "::") && !strings.ContainsAny(line, " \t") {
			order = append(order, line)
		}
	}
	if len(order) == 0 {
		t.Fatalf("pytest --collect-only listed nothing:\n%s", out)
	}
	os.Remove(filepath.Join(root, "imports.log"))
	return code, outcomes, order
}

// reportIDs lists a JSON report's entry ids in report order.
func reportIDs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []struct {
			ID string `json:"id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range doc.Entries {
		ids = append(ids, e.ID)
	}
	return ids
}

// items keeps the ids of items (not those of collection reports).
func items(ids []string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !strings.Contains(id, "::") })
}

// Two kernels split the collection: in its collection each kernel imports
// only its share of the test modules, the shares make the suite and each
// kernel has some; later a kernel may import a module of the other's share
// (work stealing), once; modules pytest does not collect are imported by
// none; the outcomes, the exit status, the report's order, -k's
// deselection and the collection error (reported once) are pytest's.
func TestPytestSplitCollection(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := splitProject(t)
	args := []string{"-k", "not deselected", "--continue-on-collection-errors"}
	wantCode, want, wantOrder := pytestOracle(t, py, root, args...)
	dir := t.TempDir()
	junit, report := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
	code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--split-collection", "--python", py, "--kernels", "2", "--junit", junit, "--json", report,
		"--", "-p", "no:cacheprovider"}, args...)...)
	if code != wantCode {
		t.Fatalf("exit %d, pytest's %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errOut)
	}
	if d := diffLines(want, junitOutcomes(t, junit)); d != "" {
		t.Errorf("JUnit testcases differ from pytest's (-pytest +ripple):\n%s", d)
	}
	ids := reportIDs(t, report)
	if got := items(ids); !slices.Equal(got, wantOrder) {
		t.Errorf("report order:\n%s\npytest's:\n%s", strings.Join(got, "\n"), strings.Join(wantOrder, "\n"))
	}
	if n := strings.Count(strings.Join(ids, "\n")+"\n", "tests/pkg/test_broken.py\n"); n != 1 {
		t.Errorf("collection error reported %d times, want once: %q", n, ids)
	}
	got, first := imports(t, root)
	if len(first) != 2 {
		t.Fatalf("%d kernels collected test modules, want 2 (each its share): %v", len(first), first)
	}
	share := map[string]string{} // file -> the pid whose collection imported it
	for pid, files := range first {
		for _, f := range files {
			if share[f] != "" {
				t.Errorf("%s imported by the collections of both kernels", f)
			}
			share[f] = pid
		}
	}
	for _, f := range []string{"test_alpha.py", "test_beta.py", "check_gamma.py", "test_delta.py", "test_broken.py", "test_big.py", "test_eps.py"} {
		switch pids := got[f]; {
		case share[f] == "":
			t.Errorf("%s not imported by any kernel's collection (imported by %v)", f, pids)
		case len(pids) > 2 || (len(pids) == 2 && pids[0] == pids[1]):
			t.Errorf("%s imported by %v: want by its kernel's collection, and at most once more by the other (stealing it)", f, pids)
		}
	}
	for _, f := range []string{"test_never.py", "test_outside.py"} {
		if len(got[f]) != 0 {
			t.Errorf("%s imported by %v: pytest does not collect it", f, got[f])
		}
	}
}

// When the split cannot be applied every kernel collects the whole suite
// (each imports every module), and the outcomes and the report's order
// are still pytest's: an option that needs the whole collection
// (--keep-duplicates: the kernel says so before collecting), the user's
// -p no:ripple-split, a hook that reorders the items by the whole
// collection (found after collecting: the kernels collect again), and
// a run that does not ask for the split (the default).
func TestPytestSplitFallback(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	modules := map[string]string{}
	for _, m := range []string{"one", "two", "three"} {
		modules["test_"+m+".py"] = logImport + "\n\ndef test_" + m + "_a():\n    pass\n\n\ndef test_" + m + "_b():\n    assert '" + m + "' != 'two'\n"
	}
	everyKernel := func(t *testing.T, root string) {
		t.Helper()
		got, _ := imports(t, root)
		for m := range modules {
			if pids := got[m]; len(pids) != 2 || pids[0] == pids[1] {
				t.Errorf("%s imported by %v, want by both kernels", m, pids)
			}
		}
	}
	cases := []struct {
		name  string
		files map[string]string
		args  []string
	}{
		{"keep-duplicates", nil, []string{"--keep-duplicates"}},
		{"no:ripple-split", nil, []string{"-p", "no:ripple-split"}},
		{"reordering hook", map[string]string{"conftest.py": "def pytest_collection_modifyitems(items):\n    items.reverse()\n"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			files := maps(modules, c.files)
			root := project(t, files)
			wantCode, want, wantOrder := pytestOracle(t, py, root, c.args...)
			dir := t.TempDir()
			junit, report := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
			code, out, errOut := ripple(t, append([]string{"run", root, "--tests", "--split-collection", "--python", py, "--kernels", "2", "--junit", junit, "--json", report,
				"--", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"}, c.args...)...)
			if code != wantCode {
				t.Fatalf("exit %d, pytest's %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errOut)
			}
			if d := diffLines(want, junitOutcomes(t, junit)); d != "" {
				t.Errorf("JUnit testcases differ from pytest's (-pytest +ripple):\n%s", d)
			}
			if got := items(reportIDs(t, report)); !slices.Equal(got, wantOrder) {
				t.Errorf("report order:\n%s\npytest's:\n%s", strings.Join(got, "\n"), strings.Join(wantOrder, "\n"))
			}
			everyKernel(t, root)
		})
	}
	t.Run("NotAskedFor", func(t *testing.T) {
		t.Parallel()
		root := project(t, modules)
		os.Remove(filepath.Join(root, "imports.log"))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		rep, err := batch.Run(ctx, batch.Options{Root: root, Python: py, Tests: true, Kernels: 2,
			PytestArgs: []string{"-p", "no:cacheprovider"}})
		if err != nil && rep == nil {
			t.Fatal(err)
		}
		if got := len(rep.Results); got != 6 {
			t.Errorf("%d results, want 6", got)
		}
		for _, r := range rep.Results {
			want := batch.StatusPassed
			if r.Entry.NodeID == "test_two.py::test_two_b" {
				want = batch.StatusFailed
			}
			if r.Status != want {
				t.Errorf("%s: %s, want %s", r.Entry.NodeID, r.Status, want)
			}
		}
		everyKernel(t, root)
	})
}

// maps is the union of two file sets.
func maps(a, b map[string]string) map[string]string {
	m := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

// padTo pads a module with a comment to exactly size bytes: the
// kernels deal the test files out by size (largest first, to the least
// loaded share; ties by path, then to the lowest share).
func padTo(t *testing.T, text string, size int) string {
	t.Helper()
	n := size - len(text) - 3
	if n < 0 {
		t.Fatalf("module longer than %d bytes", size)
	}
	return text + "\n# " + strings.Repeat("x", n)
}

// Work stealing: kernel 0's share is test_block.py (first in pytest's
// order), test_c2.py, test_c4.py and test_c6.py; test_block.py's last test
// waits until another process has imported one of the other three (or
// 20 s, so that pytest's serial run passes too), and a kernel holds a
// group's last test back until its next group is known, so kernel 0 then
// holds test_c2.py too. Kernel 1 runs its share (test_c1.py, test_c3.py,
// test_c5.py, test_z.py), then steals one of kernel 0's queued modules,
// which releases test_block.py. The outcomes and the order are pytest's.
func TestPytestSplitSteal(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	quick := logImport + `

def test_quick():
    pass
`
	block := logImport + `import time


def test_1():
    pass


def test_2():
    pass


def test_3():
    pass


def test_4():
    pass


def test_5():
    pass


def stolen():
    try:
        with open("imports.log") as f:
            lines = [line.split() for line in f]
    except OSError:
        return False
    return any(n in ("test_c2.py", "test_c4.py", "test_c6.py") and int(pid) != os.getpid() for n, pid in lines)


def test_wait_steal():
    deadline = time.monotonic() + 20
    while not stolen() and time.monotonic() < deadline:
        time.sleep(0.01)
`
	z := logImport + `

def test_z1():
    pass


def test_z2():
    pass


def test_z3():
    pass


def test_z4():
    pass
`
	root := project(t, map[string]string{
		"test_block.py": padTo(t, block, 10000),
		"test_z.py":     padTo(t, z, 9000),
		"test_c1.py":    padTo(t, quick, 1000),
		"test_c2.py":    padTo(t, quick, 1000),
		"test_c3.py":    padTo(t, quick, 1000),
		"test_c4.py":    padTo(t, quick, 1000),
		"test_c5.py":    padTo(t, quick, 1000),
		"test_c6.py":    padTo(t, quick, 1000),
	})
	wantCode, want, wantOrder := pytestOracle(t, py, root)
	os.Remove(filepath.Join(root, "imports.log"))
	dir := t.TempDir()
	junit, report := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
	code, out, errOut := ripple(t, "run", root, "--tests", "--split-collection", "--python", py, "--kernels", "2", "--junit", junit, "--json", report,
		"--log-level", "debug", "--", "-p", "no:cacheprovider", "-o", "junit_family=xunit1")
	if code != wantCode || code != 0 {
		t.Fatalf("exit %d, pytest's %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errOut)
	}
	if d := diffLines(want, junitOutcomes(t, junit)); d != "" {
		t.Errorf("JUnit testcases differ from pytest's (-pytest +ripple):\n%s", d)
	}
	if got := items(reportIDs(t, report)); !slices.Equal(got, wantOrder) {
		t.Errorf("report order:\n%s\npytest's:\n%s", strings.Join(got, "\n"), strings.Join(wantOrder, "\n"))
	}
	m := regexp.MustCompile(`msg="stealing a module" kernel=gw1 module=(test_c[246].py)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("kernel gw1 did not steal a module of gw0's:\n%s", errOut)
	}
	got, _ := imports(t, root)
	if pids := got[m[1]]; len(pids) != 2 || pids[0] == pids[1] {
		t.Errorf("%s imported by %v, want by both kernels (its share's collection, the steal)", m[1], pids)
	}
	for _, f := range []string{"test_block.py", "test_z.py", "test_c1.py", "test_c3.py", "test_c5.py"} {
		if len(got[f]) != 1 {
			t.Errorf("%s imported by %v, want by its share's kernel only", f, got[f])
		}
	}
}
