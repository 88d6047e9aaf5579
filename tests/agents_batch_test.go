package tests

import (
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/batch"
	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
)

// End-to-end tests of ripple run over runtime agents: a real `ripple run
// --agents-listen` process, real `ripple agent` processes, each with a
// copy of the project in a working directory of its own, real python3
// kernels with real pytest; outcomes compared with pytest itself and with
// a run on local kernels.

// batchRun is a running `ripple run --agents-listen 127.0.0.1:0`.
type batchRun struct {
	cmd            *exec.Cmd
	stdout, stderr *syncbuf.Buffer
	done           chan struct{}
	err            error
	addr           string // where its agents connect
}

var agentsAddrLine = regexp.MustCompile(`ripple: agents connect to (127\.0\.0\.1:\d+) \(loopback, plain TCP\)`)

// startBatchRun runs `ripple run dir --agents-listen 127.0.0.1:0 args...`
// and waits for the address its agents connect to.
func startBatchRun(t *testing.T, dir string, args ...string) *batchRun {
	t.Helper()
	r := &batchRun{cmd: exec.Command(buildBinary(t), append([]string{"run", dir, "--agents-listen", "127.0.0.1:0"}, args...)...),
		stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	r.cmd.Env = append(os.Environ(), "RIPPLE_AGENT_TOKEN="+agentToken)
	r.cmd.Stdout, r.cmd.Stderr = r.stdout, r.stderr
	r.cmd.WaitDelay = 10 * time.Second
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("ripple run stdout:\n%s\nstderr:\n%s", r.stdout.String(), r.stderr.String())
		}
	})
	if !testenv.PollEvery(stepDeadline(t), 10*time.Millisecond, func() bool {
		if m := agentsAddrLine.FindStringSubmatch(r.stderr.String()); m != nil {
			r.addr = m[1]
			return true
		}
		return false
	}) {
		t.Fatalf("no agents address from ripple run:\n%s", r.stderr.String())
	}
	return r
}

// wait waits for the run to end and returns its exit status.
func (r *batchRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-stepCtx(t).Done():
		t.Fatalf("ripple run did not end:\n%s", r.stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case r.err == nil:
		return 0
	case errors.As(r.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("ripple run: %v", r.err)
	return -1
}

// pytestPython is an interpreter that can import pytest: $RIPPLE_PYTEST_PYTHON,
// else Debian's /usr/bin/python3 (python3-pytest). Without one the test is
// skipped, except under CI, which installs it.
func pytestPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("RIPPLE_PYTEST_PYTHON"), "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import pytest").Run() == nil {
			return p
		}
	}
	testenv.NeedOrSkip(t, "no python3 with pytest (apt install python3-pytest, or set RIPPLE_PYTEST_PYTHON)")
	return ""
}

// projectCopy writes files into a new directory (one per agent, as each
// host has its own checkout).
func projectCopy(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		writeFile(t, dir, name, text)
	}
	return dir
}

// junitOutcomes reads a JUnit file: "classname::name" -> passed, failure,
// error or skipped.
func junitOutcomes(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// pytest and ripple both write <testsuites><testsuite><testcase>.
	var doc struct {
		Suites []struct {
			Cases []struct {
				Class   string    `xml:"classname,attr"`
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			o := "passed"
			switch {
			case c.Failure != nil:
				o = "failure"
			case c.Error != nil:
				o = "error"
			case c.Skipped != nil:
				o = "skipped"
			}
			out[c.Class+"::"+c.Name] = o
		}
	}
	return out
}

// pytestRun runs pytest itself in dir (the oracle) and returns its exit
// status and JUnit outcomes.
func pytestRun(t *testing.T, py, dir string) (int, map[string]string) {
	t.Helper()
	junit := filepath.Join(t.TempDir(), "pytest.xml")
	cmd := exec.Command(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1", "--junitxml", junit)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("pytest: %v\n%s", err, out)
	}
	return code, junitOutcomes(t, junit)
}

// jsonStatuses reads ripple's JSON report: node id -> status and message.
func jsonStatuses(t *testing.T, path string) (kernels int, statuses map[string]string) {
	t.Helper()
	var rep struct {
		Kernels int `json:"kernels"`
		Entries []struct {
			ID      string `json:"id"`
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"entries"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mustDecode(t, b, &rep)
	statuses = map[string]string{}
	for _, e := range rep.Entries {
		statuses[e.ID] = e.Status + ": " + e.Message
	}
	return rep.Kernels, statuses
}

// diffMaps lists the keys whose values differ.
func diffMaps(a, b map[string]string) string {
	var d []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if a[k] != b[k] {
			d = append(d, fmt.Sprintf("%s: %q / %q", k, a[k], b[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: missing / %q", k, b[k]))
		}
	}
	return strings.Join(d, "\n")
}

// The scopes project: every fixture and test logs itself with its
// process id into log.txt next to the test files (so into the directory
// of the agent that ran it), and the tests assert that what they share
// (module and class fixtures) was set up in their own process.
const scopesConftest = `import os

import pytest

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log.txt")


def log(*what):
    with open(LOG, "a") as f:
        f.write(" ".join(str(w) for w in what) + " %d\n" % os.getpid())


@pytest.fixture(scope="session")
def session_pid():
    log("session", "-")
    return os.getpid()
`

const scopesModule = `import os
import time

import pytest

from conftest import log


@pytest.fixture(scope="module")
def module_pid():
    log("module", __name__)
    return os.getpid()


def test_one(module_pid, session_pid):
    log("run", __name__)
    time.sleep(0.05)
    assert os.getpid() == module_pid == session_pid


class TestShared:
    @pytest.fixture(scope="class")
    def class_pid(self, module_pid):
        log("class", __name__)
        return module_pid

    def test_two(self, class_pid):
        log("run", __name__)
        time.sleep(0.05)
        assert class_pid == os.getpid()

    def test_three(self, class_pid, module_pid):
        log("run", __name__)
        time.sleep(0.05)
        assert class_pid == module_pid == os.getpid()


@pytest.mark.parametrize("n", [1, 2, 3])
def test_param(n, module_pid):
    log("run", __name__)
    assert n < 3, "n is %d" % n
`

const scopesExtra = `

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 1 == 2


@pytest.fixture
def broken():
    raise RuntimeError("no database")


def test_setup_error(broken):
    pass


def test_worker_env():
    log("run", __name__)
    assert os.environ.get("PYTEST_XDIST_WORKER", "gw0").startswith("gw")
`

func scopesProject() map[string]string {
	files := map[string]string{"conftest.py": scopesConftest}
	for _, m := range []string{"a", "b", "c", "d", "e", "f"} {
		text := scopesModule
		if m == "a" {
			text += scopesExtra
		}
		files["test_"+m+".py"] = text
	}
	return files
}

// logLine is one line of a log.txt: what, its module, the process.
type logLine struct{ what, module, pid, dir string }

func readLog(t *testing.T, dir string) []logLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "log.txt"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("%s/log.txt: line %q", dir, l)
		}
		out = append(out, logLine{f[0], f[1], f[2], dir})
	}
	return out
}

// ripple run --tests over two agents of two kernels each and a local
// kernel: the outcomes are pytest's and those of a run on local kernels,
// the tests ran on kernels of both agents, and the fixture scopes held
// across them (each module's fixture set up once, in the process that ran
// all of that module's tests; each class's once; a session per kernel).
func TestAgentsBatchTests(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := scopesProject()
	wantCode, want := pytestRun(t, py, projectCopy(t, files))
	if wantCode != 1 || want["test_a::test_param[3]"] != "failure" || want["test_a::test_setup_error"] != "error" ||
		want["test_a::test_skipped"] != "skipped" || want["test_b.TestShared::test_three"] != "passed" || len(want) != 6*6+4 {
		t.Fatalf("pytest: exit %d, %v", wantCode, want)
	}

	// The same project on five local kernels.
	local := projectCopy(t, files)
	out := t.TempDir()
	localJSON := filepath.Join(out, "local.json")
	cmd := exec.Command(buildBinary(t), "run", local, "--tests", "--python", py, "--kernels", "5", "--json", localJSON, "--", "-p", "no:cacheprovider")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != wantCode {
		t.Fatalf("local run: %v, want exit %d\n%s", err, wantCode, b)
	}

	// Over agents: the coordinator's copy runs the local kernel; each
	// agent has a copy of its own.
	coord := projectCopy(t, files)
	junit, agentsJSON := filepath.Join(out, "agents.xml"), filepath.Join(out, "agents.json")
	run := startBatchRun(t, coord, "--tests", "--python", py, "--kernels", "4", "--local-kernels", "1",
		"--junit", junit, "--json", agentsJSON, "--", "-p", "no:cacheprovider", "-o", "junit_family=xunit1")
	alpha := startAgent(t, run.addr, projectCopy(t, files), "--host", "alpha", "--kernels", "2", "--python", py)
	beta := startAgent(t, run.addr, projectCopy(t, files), "--host", "beta", "--kernels", "2", "--python", py)
	if code := run.wait(t); code != wantCode {
		t.Fatalf("ripple run over agents: exit %d, pytest's %d", code, wantCode)
	}
	if d := diffMaps(want, junitOutcomes(t, junit)); d != "" {
		t.Errorf("JUnit outcomes over agents differ from pytest's (pytest / ripple):\n%s", d)
	}
	nLocal, localStatuses := jsonStatuses(t, localJSON)
	nAgents, agentStatuses := jsonStatuses(t, agentsJSON)
	if d := diffMaps(localStatuses, agentStatuses); d != "" {
		t.Errorf("outcomes over agents differ from the local run's (local / agents):\n%s", d)
	}
	if nLocal != 5 || nAgents != 5 {
		t.Errorf("kernels in the reports: local %d, agents %d; want 5", nLocal, nAgents)
	}
	if !strings.Contains(run.stdout.String(), "40 tests in") || !strings.Contains(run.stdout.String(), "on 5 kernels") {
		t.Errorf("console summary:\n%s", run.stdout.String())
	}

	// Where each test ran, and what was set up where.
	var lines []logLine
	ran := map[string]int{} // directory -> tests run there
	for _, dir := range []string{coord, alpha.dir, beta.dir} {
		for _, l := range readLog(t, dir) {
			lines = append(lines, l)
			if l.what == "run" {
				ran[dir]++
			}
		}
	}
	t.Logf("test bodies run: agent alpha %d, agent beta %d, the local kernel %d", ran[alpha.dir], ran[beta.dir], ran[coord])
	if ran[alpha.dir] == 0 || ran[beta.dir] == 0 {
		t.Errorf("tests ran on alpha %d, beta %d, the local kernel %d: want both agents", ran[alpha.dir], ran[beta.dir], ran[coord])
	}
	if n := ran[coord] + ran[alpha.dir] + ran[beta.dir]; n != 6*6+1 {
		t.Errorf("%d test bodies ran, want %d", n, 6*6+1)
	}
	for _, m := range []string{"test_a", "test_b", "test_c", "test_d", "test_e", "test_f"} {
		var setups, classes []logLine
		where := map[string]bool{}
		for _, l := range lines {
			if l.module != m {
				continue
			}
			switch l.what {
			case "module":
				setups = append(setups, l)
			case "class":
				classes = append(classes, l)
			}
			where[l.dir+" pid "+l.pid] = true
		}
		if len(setups) != 1 || len(classes) != 1 || len(where) != 1 {
			t.Errorf("%s: module fixture set up %d times, class fixture %d times, in %d processes (want 1, 1, 1): %v", m, len(setups), len(classes), len(where), where)
		}
	}
	sessions := map[string]int{}
	for _, l := range lines {
		if l.what == "session" {
			sessions[l.dir+" pid "+l.pid]++
		}
	}
	for k, n := range sessions {
		if n != 1 {
			t.Errorf("session fixture set up %d times in %s", n, k)
		}
	}
}

// A test that waits for a file the test writes (so that the agent running
// it can be killed at a known point, without timing).
const blockingModule = `import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def test_before():
    pass


def test_block():
    open(os.path.join(HERE, "started"), "w").close()
    while not os.path.exists(os.path.join(HERE, "release")):
        time.sleep(0.01)


def test_after():
    pass
`

const quickModule = `def test_q1():
    pass


def test_q2():
    assert 2 + 2 == 4
`

// releasedOracle runs pytest on a copy of files with the release file in
// place (nothing waits), which must pass its n tests, and returns its
// JUnit outcomes.
func releasedOracle(t *testing.T, py string, files map[string]string, n int) map[string]string {
	t.Helper()
	oracle := projectCopy(t, files)
	writeFile(t, oracle, "release", "")
	code, want := pytestRun(t, py, oracle)
	if code != 0 || len(want) != n {
		t.Fatalf("pytest: exit %d, %v; want 0 and %d tests", code, want, n)
	}
	return want
}

// waitFile waits until one of dirs has file name and returns that dir.
func waitFile(t *testing.T, name string, dirs ...string) string {
	t.Helper()
	var found string
	if !testenv.PollEvery(stepDeadline(t), 10*time.Millisecond, func() bool {
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				found = d
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no %s in %v", name, dirs)
	}
	return found
}

// An agent killed with kill -9 while one of its tests runs: that test and
// the rest of what its kernel held run again on the other agent's kernel,
// the run's outcomes are pytest's, and the loss is said naming the agent.
func TestAgentsBatchTestsAgentLost(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := map[string]string{"test_block.py": blockingModule, "test_quick.py": quickModule}
	want := releasedOracle(t, py, files, 5)
	junit := filepath.Join(t.TempDir(), "agents.xml")
	run := startBatchRun(t, projectCopy(t, files), "--tests", "--python", py, "--kernels", "2", "--junit", junit,
		"--", "-p", "no:cacheprovider", "-o", "junit_family=xunit1")
	agents := map[string]*agentProc{}
	for _, h := range []string{"kappa", "lambda"} {
		agents[h] = startAgent(t, run.addr, projectCopy(t, files), "--host", h, "--python", py)
	}
	first := waitFile(t, "started", agents["kappa"].dir, agents["lambda"].dir)
	victim, other := "kappa", "lambda"
	if first == agents["lambda"].dir {
		victim, other = other, victim
	}
	agents[victim].kill9(t)
	writeFile(t, agents[other].dir, "release", "")
	if code := run.wait(t); code != 0 {
		t.Fatalf("ripple run: exit %d, want 0 (pytest's)", code)
	}
	if d := diffMaps(want, junitOutcomes(t, junit)); d != "" {
		t.Errorf("JUnit outcomes differ from pytest's (pytest / ripple):\n%s", d)
	}
	if _, err := os.Stat(filepath.Join(agents[other].dir, "started")); err != nil {
		t.Errorf("test_block did not run again on %s: %v", other, err)
	}
	if !regexp.MustCompile(`agent lost during the run.*agent=` + victim).MatchString(run.stderr.String()) {
		t.Errorf("the loss of agent %s is not said:\n%s", victim, run.stderr.String())
	}
}

// The only agent killed while a test runs: the run does not wait for it;
// the tests it did not finish are crashed, naming the agent, and the run
// fails.
func TestAgentsBatchTestsOnlyAgentLost(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := map[string]string{"test_block.py": blockingModule}
	report := filepath.Join(t.TempDir(), "agents.json")
	run := startBatchRun(t, projectCopy(t, files), "--tests", "--python", py, "--kernels", "1", "--json", report,
		"--", "-p", "no:cacheprovider")
	a := startAgent(t, run.addr, projectCopy(t, files), "--host", "omega", "--python", py)
	waitFile(t, "started", a.dir)
	a.kill9(t)
	if code := run.wait(t); code != 1 {
		t.Fatalf("ripple run: exit %d, want 1", code)
	}
	_, got := jsonStatuses(t, report)
	if !strings.HasPrefix(got["test_block.py::test_before"], "passed") {
		t.Errorf("test_before: %s", got["test_block.py::test_before"])
	}
	for _, id := range []string{"test_block.py::test_block", "test_block.py::test_after"} {
		if s := got[id]; !strings.HasPrefix(s, "crashed: not run: no kernel left to run it: ") || !strings.Contains(s, "agent omega lost") {
			t.Errorf("%s: %q, want crashed naming agent omega", id, s)
		}
	}
}

const faultsModule = `import os
import time


def test_first():
    pass


def test_exits():
    os._exit(3)


def test_middle():
    assert os.environ["PYTEST_XDIST_WORKER"].startswith("gw")


def test_hangs():
    time.sleep(600)


def test_last():
    pass
`

// A test that kills its kernel and one past --timeout, on an agent's
// kernel: the same outcomes as on a local kernel (crashed, timeout), the
// agent replaces the kernel each time, and the module's other tests run
// on the replacement.
func TestAgentsBatchTestsCrashAndTimeout(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := map[string]string{"test_faults.py": faultsModule}
	out := t.TempDir()
	localJSON, agentsJSON := filepath.Join(out, "local.json"), filepath.Join(out, "agents.json")
	cmd := exec.Command(buildBinary(t), "run", projectCopy(t, files), "--tests", "--python", py, "--kernels", "1", "--timeout", "5s",
		"--json", localJSON, "--", "-p", "no:cacheprovider")
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("local run: %v, want exit 1\n%s", err, b)
	}
	run := startBatchRun(t, projectCopy(t, files), "--tests", "--python", py, "--kernels", "1", "--timeout", "5s",
		"--json", agentsJSON, "--", "-p", "no:cacheprovider")
	startAgent(t, run.addr, projectCopy(t, files), "--host", "mu", "--python", py)
	if code := run.wait(t); code != 1 {
		t.Fatalf("ripple run over an agent: exit %d, want 1", code)
	}
	_, local := jsonStatuses(t, localJSON)
	_, agents := jsonStatuses(t, agentsJSON)
	if d := diffMaps(local, agents); d != "" {
		t.Errorf("outcomes over an agent differ from the local run's (local / agent):\n%s", d)
	}
	want := map[string]string{"test_first": "passed: ", "test_exits": "crashed: the kernel died: exit status 3", "test_middle": "passed: ",
		"test_hangs": "timeout: timed out after 5s", "test_last": "passed: "}
	for name, w := range want {
		if got := agents["test_faults.py::"+name]; got != w {
			t.Errorf("%s over an agent: %q, want %q", name, got, w)
		}
	}
}

// A conftest.py that waits, while pytest collects, for a file the test
// writes.
const blockingConftest = `import os
import time

HERE = os.path.dirname(os.path.abspath(__file__))
open(os.path.join(HERE, "collecting"), "w").close()
while not os.path.exists(os.path.join(HERE, "release")):
    time.sleep(0.01)
`

// An agent killed while its kernel collects: the run goes on with the
// other agent's kernel, with pytest's outcomes, and says which agent it
// lost.
func TestAgentsBatchTestsAgentLostInCollection(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := map[string]string{"conftest.py": blockingConftest, "test_quick.py": quickModule}
	want := releasedOracle(t, py, files, 2)
	dir := t.TempDir()
	junit, report := filepath.Join(dir, "agents.xml"), filepath.Join(dir, "agents.json")
	run := startBatchRun(t, projectCopy(t, files), "--tests", "--python", py, "--kernels", "2", "--junit", junit, "--json", report,
		"--", "-p", "no:cacheprovider", "-o", "junit_family=xunit1")
	nu := startAgent(t, run.addr, projectCopy(t, files), "--host", "nu", "--python", py)
	xi := startAgent(t, run.addr, projectCopy(t, files), "--host", "xi", "--python", py)
	waitFile(t, "collecting", nu.dir)
	waitFile(t, "collecting", xi.dir)
	nu.kill9(t)
	writeFile(t, xi.dir, "release", "")
	if code := run.wait(t); code != 0 {
		t.Fatalf("ripple run: exit %d, want 0 (pytest's)", code)
	}
	if d := diffMaps(want, junitOutcomes(t, junit)); d != "" {
		t.Errorf("JUnit outcomes differ from pytest's (pytest / ripple):\n%s", d)
	}
	if n, _ := jsonStatuses(t, report); n != 1 {
		t.Errorf("the report says %d kernels, want 1 (xi's)", n)
	}
	if !regexp.MustCompile(`agent lost while its kernel collected.*agent=nu`).MatchString(run.stderr.String()) {
		t.Errorf("the loss of agent nu is not said:\n%s", run.stderr.String())
	}
}

// batch.Run over an in-process agents launcher with a real agent: the
// run's goroutines (the coordinator's included) end with it, which the
// package's leak check verifies; the outcomes are pytest's.
func TestAgentsBatchTestsInProcess(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	files := scopesProject()
	_, want := pytestRun(t, py, projectCopy(t, files))
	coord, err := agent.Listen(agent.CoordinatorConfig{Listen: "127.0.0.1:0", Token: agentToken, Slots: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	startAgent(t, coord.Addr(), projectCopy(t, files), "--host", "pi", "--kernels", "2", "--python", py)
	rep, err := batch.Run(stepCtx(t), batch.Options{Root: projectCopy(t, files), Python: py, Tests: true, Agents: coord, Kernels: 2,
		PytestArgs: []string{"-p", "no:cacheprovider"}})
	if err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	if err := batch.WriteJUnit(junit, rep); err != nil {
		t.Fatal(err)
	}
	if d := diffMaps(want, junitOutcomes(t, junit)); d != "" {
		t.Errorf("JUnit outcomes differ from pytest's (pytest / ripple):\n%s", d)
	}
	if rep.Kernels != 2 {
		t.Errorf("%d kernels, want the agent's 2", rep.Kernels)
	}
}
