package batch_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// handOverProject: six modules of two slow tests (0.5 s each) and one
// whose tests addopts deselect; every module logs its import, every test
// its run, with the kernel (PYTEST_XDIST_WORKER) that did it. Every
// test_b checks that sub/conftest.py (a directory with no test a late
// kernel is handed) was loaded, as pytest loads it when its walk reaches
// sub/.
func handOverProject(t *testing.T) string {
	files := map[string]string{
		"pytest.ini": "[pytest]\naddopts = -m \"not stress\"\nmarkers =\n    stress: deselected by default\n",
		"conftest.py": `import os
import pytest

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.log")


def log(what):
    with open(LOG, "a") as f:
        f.write("%s %s\n" % (os.environ.get("PYTEST_XDIST_WORKER", "-"), what))


@pytest.fixture(autouse=True)
def _ran(request):
    log("ran " + request.node.nodeid)
`,
		"sub/__init__.py": "", // so that its conftest is sub.conftest, not the root's "conftest"
		"sub/conftest.py": `import os

os.environ["RIPPLE_SIBLING_CONFTEST"] = "loaded"
`,
		"test_stress.py": `import pytest
from conftest import log

log("import test_stress.py")


@pytest.mark.stress
@pytest.mark.parametrize("n", range(3))
def test_stress(n):
    pass
`,
	}
	for m := range 6 {
		files[fmt.Sprintf("test_m%d.py", m)] = fmt.Sprintf(`import os
import time
from conftest import log

log("import test_m%d.py")


def test_a():
    time.sleep(0.5)


def test_b():
    assert os.environ.get("RIPPLE_SIBLING_CONFTEST") == "loaded"
    time.sleep(0.5)
`, m)
	}
	return project(t, files)
}

// The default kernels share one collection (issue 28): the first kernel
// collects the suite with pytest's deselection; a late kernel is handed
// the files of the tests it may run and imports only those, never a
// module whose every test addopts deselected. Each kernel runs a
// subsequence of pytest's order, and the outcomes are pytest's. The
// second run has the first one's test times, so the late kernel joins as
// soon as the first has collected (the handed tests take far longer than
// collecting them).
func TestPytestHandOver(t *testing.T) {
	t.Parallel()
	if runtime.NumCPU() < 2 {
		t.Skip("the default kernels are the CPUs: one here, so no kernel is late")
	}
	python := pytestPython(t)
	root := handOverProject(t)
	code, out := pytestRun(t, python, root, "-q", "-p", "no:cacheprovider", "--co")
	if code != 0 {
		t.Fatalf("pytest --co: exit %d\n%s", code, out)
	}
	var order []string // pytest's collection order
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "::") {
			order = append(order, strings.TrimSpace(l))
		}
	}
	if len(order) != 12 {
		t.Fatalf("pytest collected %d tests, want 12:\n%s", len(order), out)
	}
	if code, out := pytestRun(t, python, root, "-q", "-p", "no:cacheprovider", "-k", "m5 and test_b"); code != 0 {
		t.Fatalf("pytest: exit %d (sub/conftest.py not loaded?)\n%s", code, out)
	}
	// The run's test times: none before the first. Late kernels as on an
	// idle machine, whatever else the machine runs (cpuload.go).
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "RIPPLE_LATE_KERNELS=always"}
	logPath := filepath.Join(root, "kernels.log")
	for run := 1; run <= 2; run++ {
		os.Remove(logPath)
		report := filepath.Join(t.TempDir(), "r.json")
		code, out, errOut := rippleEnv(t, env, "run", root, "--tests", "--python", python, "--json", report, "--", "-p", "no:cacheprovider")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", run, code, out, errOut)
		}
		if st := reportStatuses(t, report); len(st) != 12 {
			t.Errorf("run %d: %d results, want pytest's 12", run, len(st))
		}
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		ran := map[string][]string{}      // kernel -> tests, in the order it ran them
		imported := map[string][]string{} // kernel -> modules
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			kernel, what, _ := strings.Cut(l, " ")
			if id, ok := strings.CutPrefix(what, "ran "); ok {
				ran[kernel] = append(ran[kernel], id)
			} else if mod, ok := strings.CutPrefix(what, "import "); ok {
				imported[kernel] = append(imported[kernel], mod)
			}
		}
		if !slices.Contains(imported["gw0"], "test_stress.py") {
			t.Errorf("run %d: the first kernel did not collect the suite: it imported %v", run, imported["gw0"])
		}
		late := 0
		for kernel, tests := range ran {
			last := -1
			for _, id := range tests {
				i := slices.Index(order, id)
				if i <= last {
					t.Errorf("run %d: kernel %s ran %v: not a subsequence of pytest's order", run, kernel, tests)
					break
				}
				last = i
			}
			if kernel != "gw0" {
				late += len(tests)
			}
		}
		for kernel, mods := range imported {
			if kernel == "gw0" {
				continue
			}
			if slices.Contains(mods, "test_stress.py") {
				t.Errorf("run %d: late kernel %s imported a module whose tests addopts deselect: %v", run, kernel, mods)
			}
			if len(mods) >= 6 && runtime.NumCPU() == 2 {
				t.Errorf("run %d: late kernel %s imported %v: every module, not its half", run, kernel, mods)
			}
		}
		if run == 2 && late == 0 {
			t.Errorf("run 2: no late kernel ran a test (their imports: %v); the handed tests take seconds", imported)
		}
		if t.Failed() {
			t.Logf("run %d: kernels' log:\n%s\n%s", run, data, errOut)
		}
	}
	var rec map[string]any
	matches, _ := filepath.Glob(filepath.Join(env[0][len("XDG_CACHE_HOME="):], "ripple", "test-times", "*.json"))
	if len(matches) != 1 {
		t.Fatalf("test times kept: %v, want one record", matches)
	}
	data, _ := os.ReadFile(matches[0])
	if json.Unmarshal(data, &rec) != nil || rec["count"] != float64(12) {
		t.Errorf("the record %s does not count the run's 12 tests", data)
	}
}
