package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// The fixture's statuses, messages, failing statements and output, with
// two kernels and a 1 s timeout (the hanging test ignores the interrupt:
// its kernel is restarted).
func TestRunFixture(t *testing.T) {
	t.Parallel()
	obs := &recorder{}
	rep := run(t, batch.Options{Root: fixture, Tests: true, Kernels: 2, Timeout: time.Second, Observer: obs})
	want := `test_crash:test_exit crashed
test_crash:test_segfault crashed
test_hang:test_hang_ignoring_sigint timeout
test_math:test_add passed
test_math:test_add_wrong failed
test_math:test_raises_in_helper failed
test_math:test_needs_fixture skipped
test_math:test_marked_skip skipped
test_math:TestCalc.test_method passed
test_math:TestCalc.test_method_wrong failed
test_print:test_prints passed
test_print:test_prints_then_fails failed
test_syntax error
test_uses_broken:test_uses_broken error
`
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	s := rep.Summary()
	if s != (batch.Summary{Total: 14, Passed: 3, Failed: 4, Errors: 2, Crashed: 2, Timeouts: 1, Skipped: 2}) || s.Failing() != 9 {
		t.Errorf("summary %+v", s)
	}
	if obs.started != 14 || obs.kernels != 2 || len(obs.results) != 14 {
		t.Errorf("observer: started %d on %d kernels, %d results", obs.started, obs.kernels, len(obs.results))
	}
	for i, r := range obs.results {
		if r != rep.Results[i] {
			t.Errorf("observer result %d is %s, want %s (report order)", i, r.Entry.ID(), rep.Results[i].Entry.ID())
		}
	}

	res := byID(rep)
	wrong := res["test_math:test_add_wrong"]
	if len(wrong.Failures) != 1 {
		t.Fatalf("test_add_wrong failures %+v", wrong.Failures)
	}
	f := wrong.Failures[0]
	if f.ExpressionID != "test_math:test_add_wrong/#1" || f.Line != 14 || f.Path != "test_math.py" ||
		f.Source != `assert total == expected, "2 + 2 should be 5"` || f.Message != "AssertionError: 2 + 2 should be 5" ||
		wrong.Message != f.Message {
		t.Errorf("test_add_wrong failure %+v (message %q)", f, wrong.Message)
	}
	if len(f.Traceback) != 1 || f.Traceback[0] != (batch.Frame{Function: "test_add_wrong", Path: "test_math.py", Line: 14}) {
		t.Errorf("test_add_wrong traceback %+v", f.Traceback)
	}

	// The statement that raised is the failure; the one that depends on it
	// fails with it but is not listed. The traceback reaches into helper.
	raises := res["test_math:test_raises_in_helper"]
	if len(raises.Failures) != 1 || raises.Failures[0].ExpressionID != "test_math:test_raises_in_helper/ratio" ||
		raises.Failures[0].Message != "ZeroDivisionError: division by zero" {
		t.Fatalf("test_raises_in_helper failures %+v", raises.Failures)
	}
	tb := raises.Failures[0].Traceback
	if len(tb) != 2 || tb[1] != (batch.Frame{Function: "divide", Path: "helper.py", Line: 6}) {
		t.Errorf("traceback %+v, want it to end in helper.py:6 divide", tb)
	}
	if m := res["test_math:TestCalc.test_method_wrong"]; m.Failures[0].Source != "assert x == 3" || m.Failures[0].Line != 42 {
		t.Errorf("method failure %+v", m.Failures)
	}

	if r := res["test_crash:test_exit"]; r.Kind != protocol.ResultKernelDied || !strings.Contains(r.Message, "exit status 3") {
		t.Errorf("test_exit: kind %q message %q", r.Kind, r.Message)
	}
	if r := res["test_crash:test_segfault"]; !strings.Contains(r.Message, "SIGSEGV") {
		t.Errorf("test_segfault message %q", r.Message)
	}
	if r := res["test_hang:test_hang_ignoring_sigint"]; r.Kind != protocol.ResultTimeout || !strings.Contains(r.Message, "timed out after 1s") ||
		!strings.Contains(r.Message, "restarted") {
		t.Errorf("hang: kind %q message %q", r.Kind, r.Message)
	}

	prints := res["test_print:test_prints"]
	if prints.Stdout != "hello on stdout\n" || prints.Stderr != "hello on stderr\n" || !strings.Contains(prints.Output, "hello on stdout") {
		t.Errorf("test_prints output: stdout %q stderr %q", prints.Stdout, prints.Stderr)
	}
	if r := res["test_print:test_prints_then_fails"]; r.Stdout != "the context of the failure\n" || r.Status != batch.StatusFailed {
		t.Errorf("test_prints_then_fails: %s, stdout %q", r.Status, r.Stdout)
	}

	syntax := res["test_syntax"]
	if syntax.Kind != protocol.ResultCompileError || syntax.Diagnostic == nil || syntax.Diagnostic.Path != "test_syntax.py" {
		t.Errorf("test_syntax: %+v", syntax)
	}
	broken := res["test_uses_broken:test_uses_broken"]
	if broken.Kind != protocol.ResultCompileError || !strings.Contains(broken.Message, "broken_helper") || broken.Diagnostic == nil {
		t.Errorf("test_uses_broken: kind %q message %q diagnostic %+v", broken.Kind, broken.Message, broken.Diagnostic)
	}
	if r := res["test_math:test_needs_fixture"]; !strings.Contains(r.Message, "tmp_path") {
		t.Errorf("skip message %q", r.Message)
	}
	if rep.Kernels != 2 || rep.Python.Path == "" || rep.Duration <= 0 || rep.Interrupted {
		t.Errorf("report header %+v", rep)
	}
}

// Results come in report order whatever the parallelism: the same with
// one kernel and with four, although with four the entries end in another
// order (earlier tests sleep longer).
func TestRunDeterministicOrder(t *testing.T) {
	t.Parallel()
	root := project(t, sleepyTests(16))
	one := run(t, batch.Options{Root: root, Tests: true, Kernels: 1})
	obs := &recorder{}
	four := run(t, batch.Options{Root: root, Tests: true, Kernels: 4, Observer: obs})
	if outline(one) != outline(four) {
		t.Errorf("1 kernel:\n%s\n4 kernels:\n%s", outline(one), outline(four))
	}
	if s := four.Summary(); s.Total != 16 || s.Failed != 4 || s.Passed != 12 {
		t.Errorf("summary %+v", s)
	}
	ids := make([]string, len(obs.results))
	for i, r := range obs.results {
		ids[i] = r.Entry.ID()
	}
	if !slices.IsSorted(ids) || len(ids) != 16 { // test_a.py before test_b.py, by line
		t.Errorf("observer order %v", ids)
	}
	last := obs.progress[len(obs.progress)-1]
	if last.Done != 16 || last.Total != 16 || last.Failing != 4 {
		t.Errorf("last progress %+v", last)
	}
}

// A crash is reported and the kernel replaced: the entries after it on
// the same (only) kernel run, and one that times out by an ordinary
// interrupt leaves its kernel alive.
func TestRunCrashAndTimeoutDoNotStopTheRest(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_k.py": `import os
import time

state = []


def test_1_crash():
    os._exit(9)


def test_2_after_crash():
    state.append(2)
    n = len(state)
    assert n == 1


def test_3_slow():
    state.append(3)
    time.sleep(60)


def test_4_same_kernel():
    n = len(state)
    assert n == 2
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 1, Timeout: 2 * time.Second})
	want := "test_k:test_1_crash crashed\ntest_k:test_2_after_crash passed\ntest_k:test_3_slow timeout\ntest_k:test_4_same_kernel passed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	if m := byID(rep)["test_k:test_3_slow"].Message; strings.Contains(m, "restarted") {
		t.Errorf("an interruptible timeout restarted the kernel: %q", m)
	}
}

func TestRunFailFast(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_ff.py": `def test_a():
    x = 1


def test_b():
    assert 1 == 2


def test_c():
    x = 3


def test_d():
    x = 4
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 1, FailFast: true})
	want := "test_ff:test_a passed\ntest_ff:test_b failed\ntest_ff:test_c skipped\ntest_ff:test_d skipped\n"
	if got := outline(rep); got != want || !rep.StoppedEarly {
		t.Fatalf("results (stopped early %v):\n%s\nwant:\n%s", rep.StoppedEarly, got, want)
	}
	if m := byID(rep)["test_ff:test_c"].Message; !strings.Contains(m, "--fail-fast") {
		t.Errorf("skip message %q", m)
	}
}

// With several kernels, --fail-fast interrupts the entries running beside
// the failure.
func TestRunFailFastInterruptsRunningEntries(t *testing.T) {
	t.Parallel()
	// test_a fails once test_b is running (test_b leaves a marker).
	marker := filepath.Join(t.TempDir(), "b-running")
	root := project(t, map[string]string{"test_ff.py": `import os
import time


def test_a_fails():
    while not os.path.exists('` + marker + `'): time.sleep(0.01)
    assert False


def test_b_long():
    open('` + marker + `', 'w').close()
    time.sleep(60)


def test_c():
    x = 3
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 2, FailFast: true})
	want := "test_ff:test_a_fails failed\ntest_ff:test_b_long interrupted\ntest_ff:test_c skipped\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
}

func TestRunShowValues(t *testing.T) {
	t.Parallel()
	rep := run(t, batch.Options{Root: fixture, Entries: []string{"test_math:test_add_wrong", "main:main"}, ShowValues: true})
	if got := outline(rep); got != "main:main passed\ntest_math:test_add_wrong failed\n" {
		t.Fatalf("results:\n%s", got)
	}
	vs := byID(rep)["test_math:test_add_wrong"].Values
	var lines []string
	for _, v := range vs {
		lines = append(lines, string(v.Kind)+" "+v.Source+" "+v.Text)
	}
	want := []string{"Value total = add(2, 2) 4", "Value expected = 5 5", `Panic assert total == expected, "2 + 2 should be 5" AssertionError: 2 + 2 should be 5`}
	if !slices.Equal(lines, want) {
		t.Errorf("values:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if vs[0].Type != "builtins.int" || vs[0].Line != 12 {
		t.Errorf("value %+v", vs[0])
	}
	if m := byID(rep)["main:main"]; m.Stdout != "total is 5\n" || len(m.Values) != 2 {
		t.Errorf("main: stdout %q values %+v", m.Stdout, m.Values)
	}
	// Without the option, no values are kept.
	rep = run(t, batch.Options{Root: fixture, Entries: []string{"test_math:test_add_wrong"}})
	if vs := rep.Results[0].Values; vs != nil {
		t.Errorf("values without ShowValues: %+v", vs)
	}
}

// An entry whose function does not exist or whose class cannot be built
// is an error, not a crash of the run.
func TestRunEntryErrors(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"main.py": "def main():\n    x = 1\n\n\nmain_alias = None\n\n\nclass Needs:\n    def __init__(self, x):\n        self.x = x\n\n    def run(self):\n        y = 1\n",
	})
	rep := run(t, batch.Options{Root: root, Entries: []string{"main:main_alias", "main:Needs.run"}})
	if got := outline(rep); got != "main:main_alias error\nmain:Needs.run error\n" {
		t.Fatalf("results:\n%s", got)
	}
	for _, r := range rep.Results {
		if r.Kind != protocol.ResultFailure || r.Message == "" {
			t.Errorf("%s: kind %q message %q", r.Entry.ID(), r.Kind, r.Message)
		}
	}
}

func TestRunShards(t *testing.T) {
	t.Parallel()
	root := project(t, sleepyTests(12))
	all := run(t, batch.Options{Root: root, Tests: true, Kernels: 2})
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 2, Shard: batch.Shard{Index: k, Total: 3}})
		for _, r := range rep.Results {
			seen[r.Entry.ID()]++
			if want := byID(all)[r.Entry.ID()]; want == nil || want.Status != r.Status {
				t.Errorf("shard %d: %s %s, unsharded %v", k, r.Entry.ID(), r.Status, want)
			}
		}
	}
	if len(seen) != 12 {
		t.Errorf("shards ran %d distinct entries, want 12", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s ran in %d shards", id, n)
		}
	}
}

// A shard can be empty (more machines than entries): that is an empty,
// passing report, not an error.
func TestRunEmptyShard(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_one.py": "def test_one():\n    pass\n"})
	var empty *batch.Report
	for k := 1; k <= 2 && empty == nil; k++ {
		rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 1, Shard: batch.Shard{Index: k, Total: 2}})
		if len(rep.Results) == 0 {
			empty = rep
		}
	}
	if empty == nil {
		t.Fatal("neither shard of 2 is empty with one entry")
	}
	if empty.Summary().Failing() != 0 {
		t.Errorf("empty shard summary %+v", empty.Summary())
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		opts batch.Options
		err  error
		want string
	}{
		{batch.Options{Root: filepath.Join(t.TempDir(), "missing")}, batch.ErrProject, "missing"},
		{batch.Options{Root: fixture, Kernels: -1}, batch.ErrUsage, "--kernels -1"},
		{batch.Options{Root: fixture, Python: "/nonexistent/python3"}, batch.ErrProject, "/nonexistent/python3"},
		{batch.Options{Root: fixture, Entries: []string{"nosuch:main"}}, batch.ErrUsage, "nosuch"},
		{batch.Options{Root: project(t, map[string]string{"lib.py": ""}), Tests: true}, batch.ErrNoEntries, "no test module"},
	}
	for _, c := range cases {
		rep, err := batch.Run(context.Background(), c.opts)
		if rep != nil || !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Run(%+v) = %v, %v; want %v naming %q", c.opts, rep, err, c.err, c.want)
		}
	}
}

// Ctrl-C: the running entry is interrupted, the others skipped, the
// engine stopped (no kernel left: leakcheck and the process check below),
// and Run says ErrInterrupted with the report of what ran.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "running")
	root := project(t, map[string]string{"test_c.py": `import time


def test_1():
    x = 1


def test_2_waits():
    open(` + "'" + marker + "'" + `, 'w').close()
    time.sleep(120)


def test_3():
    x = 3
`})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(marker); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond) // polling a condition
		}
	}()
	rep, err := batch.Run(ctx, batch.Options{Root: root, Tests: true, Kernels: 1})
	if !errors.Is(err, batch.ErrInterrupted) || rep == nil {
		t.Fatalf("Run = %v, %v; want a report and ErrInterrupted", rep, err)
	}
	want := "test_c:test_1 passed\ntest_c:test_2_waits interrupted\ntest_c:test_3 skipped\n"
	if got := outline(rep); got != want || !rep.Interrupted {
		t.Errorf("results (interrupted %v):\n%s\nwant:\n%s", rep.Interrupted, got, want)
	}
	if pids := kernelsIn(t, root); len(pids) > 0 {
		t.Errorf("kernel processes left in %s: %v", root, pids)
	}
}

// kernelsIn lists the processes whose working directory is root (a
// kernel's is its project root).
func kernelsIn(t *testing.T, root string) []string {
	t.Helper()
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	for _, p := range procs {
		if cwd, err := os.Readlink(filepath.Join(p, "cwd")); err == nil && cwd == real {
			pids = append(pids, filepath.Base(p))
		}
	}
	return pids
}

// A kernel slot that can never start a kernel (here: every start after the
// first fails) does not hang the run: after a few tries the slot is given
// up and the entries it was to run move to the kernel that works.
func TestRunSlotThatCannotStartHandsItsEntriesOver(t *testing.T) {
	t.Parallel()
	wrapper := filepath.Join(t.TempDir(), "python")
	enginetest.WrapPython(t, wrapper, "echo 'no room for another kernel' >&2; exit 3")
	files := map[string]string{}
	var want strings.Builder
	for i := range 6 {
		files[fmt.Sprintf("test_%d.py", i)] = "def test_ok():\n    x = 1\n"
		fmt.Fprintf(&want, "test_%d:test_ok passed\n", i)
	}
	rep := run(t, batch.Options{Root: project(t, files), Python: wrapper, Tests: true, Kernels: 2})
	if got := outline(rep); got != want.String() {
		for _, r := range rep.Results {
			t.Logf("%s: %s %q", r.Entry.ID(), r.Status, r.Message)
		}
		t.Fatalf("results:\n%s\nwant:\n%s", got, want.String())
	}
}

// Each kernel imports a test module before the first entry it runs from
// it: what the import prints belongs to no entry (pytest shows it only
// when collection fails), and its time is not an entry's (--timeout).
func TestRunModuleImportIsNotAnEntrysOutputOrTime(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		"test_slow_import.py": "import time\n\nprint('importing', flush=True)\ntime.sleep(2.5)\n\n\n" +
			"def test_a():\n    print('in a')\n\n\ndef test_b():\n    print('in b')\n",
	})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 2, Timeout: 2 * time.Second})
	if got := outline(rep); got != "test_slow_import:test_a passed\ntest_slow_import:test_b passed\n" {
		t.Fatalf("results:\n%s", got)
	}
	for _, r := range rep.Results {
		want := "in " + r.Entry.Pointer.Name[len("test_"):] + "\n"
		if r.Stdout != want {
			t.Errorf("%s: stdout %q, want %q", r.Entry.ID(), r.Stdout, want)
		}
	}
}

// An xfail entry that fails is xfailed, one that passes xpassed (failed
// when strict), one with run=False is not run; none of them but the
// strict pass fails the run.
func TestRunXFail(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		// The tests' interpreter may not have pytest: marks only need to
		// import and decorate.
		"pytest.py": "class _Marks:\n    def __getattr__(self, name):\n        return lambda *a, **k: (lambda f: f)\n\n\nmark = _Marks()\n",
		"test_x.py": `import pytest


@pytest.mark.xfail(reason="bug 12")
def test_fails():
    x = 1
    assert x == 2


@pytest.mark.xfail(reason="fixed?")
def test_passes():
    x = 1


@pytest.mark.xfail(strict=True)
def test_passes_strict():
    x = 1


@pytest.mark.xfail(run=False, reason="hangs")
def test_not_run():
    import time
    time.sleep(600)


def test_plain():
    assert False
`,
	})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 2})
	want := "test_x:test_fails xfailed\ntest_x:test_passes xpassed\ntest_x:test_passes_strict failed\ntest_x:test_not_run xfailed\ntest_x:test_plain failed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	res := byID(rep)
	if m := res["test_x:test_fails"].Message; m != "bug 12 (AssertionError)" {
		t.Errorf("xfailed message %q", m)
	}
	if m := res["test_x:test_passes_strict"].Message; m != "[XPASS(strict)] " {
		t.Errorf("strict xpass message %q", m)
	}
	if m := res["test_x:test_not_run"].Message; m != "[NOTRUN] hangs" {
		t.Errorf("not run message %q", m)
	}
	s := rep.Summary()
	if s.XFailed != 2 || s.XPassed != 1 || s.Failed != 2 || s.Failing() != 2 {
		t.Errorf("summary %+v", s)
	}

	// JUnit: the xfailed entries are skipped testcases of type
	// pytest.xfail, the xpassed one passes.
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := batch.WriteJUnit(path, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `type="pytest.xfail"`); n != 2 {
		t.Errorf("%d pytest.xfail skips in:\n%s", n, data)
	}
}

// A unittest.TestCase without fixtures runs, its assert methods included,
// whatever its class's name.
func TestRunUnitTestCase(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{"test_cases.py": `import unittest


class ParserTests(unittest.TestCase):
    def test_passes(self):
        value = 2 + 2
        self.assertEqual(value, 4)

    def test_fails(self):
        value = 2 + 2
        self.assertEqual(value, 5)

    @unittest.expectedFailure
    def test_expected(self):
        self.assertTrue(False)
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 1})
	want := "test_cases:ParserTests.test_passes passed\ntest_cases:ParserTests.test_fails failed\ntest_cases:ParserTests.test_expected xfailed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	if m := byID(rep)["test_cases:ParserTests.test_fails"].Message; !strings.Contains(m, "AssertionError: 4 != 5") {
		t.Errorf("failure message %q", m)
	}
}

// Parametrized tests run once per case with the case's arguments,
// evaluated in the module's namespace; each case has its own result, in
// the order pytest lists them, and the reports name the case as pytest
// does.
func TestRunParametrize(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		// The tests' interpreter may not have pytest: marks only need to
		// import and decorate.
		"pytest.py": "class _Marks:\n    def __getattr__(self, name):\n        return lambda *a, **k: (lambda f: f)\n\n\n" +
			"mark = _Marks()\n\n\ndef param(*values, **kw):\n    return values\n",
		"test_p.py": `import pytest

BASE = 10


@pytest.mark.parametrize("a,expected", [(1, 11), (2, 13), (BASE, 20)])
def test_add(a, expected):
    total = a + BASE
    assert total == expected


@pytest.mark.parametrize("word", [pytest.param("ok", id="short"), pytest.param("x" * 3, marks=pytest.mark.xfail(reason="too long"))])
def test_len(word):
    assert len(word) == 2


class TestShapes:
    SIDE = 2

    @pytest.mark.parametrize("side", [SIDE])
    def test_square(self, side):
        area = self.area(side)
        assert area == 4

    def area(self, side):
        return side * side
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 2, ShowValues: true})
	want := "test_p:test_add[1-11] passed\ntest_p:test_add[2-13] failed\ntest_p:test_add[10-20] passed\n" +
		"test_p:test_len[short] passed\ntest_p:test_len[xxx] xfailed\ntest_p:TestShapes.test_square[2] passed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	failed := byID(rep)["test_p:test_add[2-13]"]
	if len(failed.Failures) != 1 || failed.Failures[0].Source != "assert total == expected" {
		t.Errorf("failure %+v", failed.Failures)
	}
	var total string
	for _, v := range failed.Values {
		if v.Source == "total = a + BASE" {
			total = v.Text
		}
	}
	if total != "12" {
		t.Errorf("total in test_add[2-13] = %q, want 12 (values %+v)", total, failed.Values)
	}

	// The reports: JUnit names the testcase as pytest does, the JSON
	// report gives the case and its arguments.
	dir := t.TempDir()
	junit, jsonPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
	if err := batch.WriteJUnit(junit, rep); err != nil {
		t.Fatal(err)
	}
	if err := batch.WriteJSON(jsonPath, rep); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `<testcase name="test_add[2-13]" classname="test_p"`) {
		t.Errorf("JUnit lacks the case's testcase:\n%s", data)
	}
	var doc struct {
		Entries []struct {
			ID, Function, Case string
			Arguments          []string
		}
	}
	if data, err = os.ReadFile(jsonPath); err == nil {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		t.Fatal(err)
	}
	if e := doc.Entries[2]; e.ID != "test_p:test_add[10-20]" || e.Function != "test_add" || e.Case != "10-20" ||
		!slices.Equal(e.Arguments, []string{"(BASE)", "(20)"}) {
		t.Errorf("JSON entry %+v", e)
	}
}

// A test that skips itself at run time (TestCase.skipTest, pytest.skip,
// pytest.importorskip) is skipped with its reason, and nothing after the
// skip runs; pytest.xfail makes it xfailed; pytest.fail and any other
// exception fail it, and the statements after it still run.
func TestRunRuntimeSkip(t *testing.T) {
	t.Parallel()
	root := project(t, map[string]string{
		// pytest's outcome classes as pytest defines them (the tests'
		// interpreter may not have pytest).
		"pytest.py": `class Skipped(BaseException):
    pass


Skipped.__module__ = "builtins"


class Failed(BaseException):
    pass


Failed.__module__ = "builtins"


class XFailed(Failed):
    pass


XFailed.__module__ = "_pytest.outcomes"


def skip(reason=""):
    raise Skipped(reason)


def fail(reason=""):
    raise Failed(reason)


def xfail(reason=""):
    raise XFailed(reason)


def importorskip(name):
    try:
        return __import__(name)
    except ImportError as e:
        raise Skipped("could not import %r: %s" % (name, e))
`,
		// A module that skips itself at import skips its tests.
		"test_mod.py": "import pytest\n\nnp = pytest.importorskip('no_such_module_here')\n\n\ndef test_uses():\n    assert np\n",
		"test_rt.py": `import unittest

import pytest


class Cases(unittest.TestCase):
    def test_skip_test(self):
        x = 1
        self.skipTest("no network")
        print("after the skip")


def test_pytest_skip():
    pytest.skip("not today")
    print("after the skip")


def test_importorskip():
    np = pytest.importorskip("no_such_module_here")
    print("after the skip")


def test_xfail():
    pytest.xfail("known bug")
    print("after the xfail")


def test_fail():
    pytest.fail("boom")
    print("after the failure")


def test_assert_then_skip():
    assert False
    pytest.skip("too late")
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 2})
	want := "test_mod:test_uses skipped\ntest_rt:Cases.test_skip_test skipped\ntest_rt:test_pytest_skip skipped\ntest_rt:test_importorskip skipped\n" +
		"test_rt:test_xfail xfailed\ntest_rt:test_fail failed\ntest_rt:test_assert_then_skip failed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	res := byID(rep)
	wantMessages(t, res, map[string]string{
		"test_mod:test_uses":            "could not import 'no_such_module_here': No module named 'no_such_module_here'",
		"test_rt:Cases.test_skip_test":  "no network",
		"test_rt:test_pytest_skip":      "not today",
		"test_rt:test_importorskip":     "could not import 'no_such_module_here': No module named 'no_such_module_here'",
		"test_rt:test_xfail":            "known bug",
		"test_rt:test_fail":             "Failed: boom",
		"test_rt:test_assert_then_skip": "AssertionError",
	})
	for _, r := range rep.Results {
		after := strings.Contains(r.Stdout, "after the")
		if want := r.Entry.ID() == "test_rt:test_fail"; after != want {
			t.Errorf("%s: ran the statement after the exception: %v, want %v (stdout %q)", r.Entry.ID(), after, want, r.Stdout)
		}
	}
	if s := rep.Summary(); s.Skipped != 4 || s.XFailed != 1 || s.Failing() != 2 {
		t.Errorf("summary %+v", s)
	}
}

// Test fixtures run as unittest and pytest run them: setUpModule and
// setUpClass once per group of tests, setUp before each test and tearDown
// and the cleanups after it (also after a failure), tearDownClass and
// tearDownModule when the tests move on; pytest's setup_method and
// teardown_method. A cleanup undoes what its test changed before the next
// test on the same kernel runs. A SkipTest from setUp or setUpClass skips;
// another exception in setUp is an error at set-up, one in tearDown an
// error naming it, with the test's own failure kept when there is one.
func TestRunUnitTestFixtures(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "fixtures.log")
	root := project(t, map[string]string{
		"state.py": fmt.Sprintf("LOG = %q\nflag = ['original']\n", logPath),
		// Run after test_fix.py on the same kernel: test_fix's module
		// tear-down comes first.
		"test_other.py": "import unittest\n\nimport state\n\n\nclass Other(unittest.TestCase):\n    def test_note(self):\n" +
			"        with open(state.LOG, 'a') as f:\n            f.write(\"other module's test\\n\")\n",
		"test_fix.py": `import os
import unittest

import state

def note(what):
    with open(state.LOG, "a") as f:
        f.write(what + "\n")


def setUpModule():
    note("setUpModule")


def tearDownModule():
    note("tearDownModule")


class Ordered(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        note("setUpClass")
        cls.shared = "from setUpClass"

    @classmethod
    def tearDownClass(cls):
        note("tearDownClass")

    def setUp(self):
        note("setUp " + self._testMethodName)
        self.value = 41

    def tearDown(self):
        note("tearDown " + self._testMethodName)

    def test_a_changes_state(self):
        state.flag[0] = "changed"
        self.addCleanup(state.flag.__setitem__, 0, "original")
        self.addCleanup(note, "cleanup " + self._testMethodName)
        total = self.value + 1
        self.assertEqual(total, 42)
        self.assertEqual(self.shared, "from setUpClass")

    def test_b_sees_state_restored(self):
        flag = state.flag[0]
        self.assertEqual(flag, "original")

    def test_c_fails(self):
        self.assertEqual(self.value, 0)


class SkipsInSetUp(unittest.TestCase):
    def setUp(self):
        self.skipTest("no database")

    def test_never_runs(self):
        note("ran test_never_runs")


class SkipsInSetUpClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("whole class off")

    def test_one(self):
        pass


class BrokenSetUp(unittest.TestCase):
    def setUp(self):
        self.addCleanup(note, "cleanup after a failed setUp")
        raise ValueError("no fixture")

    def test_x(self):
        pass


class BrokenTearDown(unittest.TestCase):
    def tearDown(self):
        raise RuntimeError("teardown broke")

    def test_passes(self):
        x = 1

    def test_fails(self):
        self.assertTrue(False)


class TestXunit:
    def setup_method(self, method):
        note("setup_method " + method.__name__)
        self.ready = True

    def teardown_method(self, method):
        note("teardown_method " + method.__name__)

    def test_ready(self):
        assert self.ready
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Kernels: 1})
	want := "test_fix:Ordered.test_a_changes_state passed\ntest_fix:Ordered.test_b_sees_state_restored passed\n" +
		"test_fix:Ordered.test_c_fails failed\ntest_fix:SkipsInSetUp.test_never_runs skipped\n" +
		"test_fix:SkipsInSetUpClass.test_one skipped\ntest_fix:BrokenSetUp.test_x error\n" +
		"test_fix:BrokenTearDown.test_passes error\ntest_fix:BrokenTearDown.test_fails error\n" +
		"test_fix:TestXunit.test_ready passed\ntest_other:Other.test_note passed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	res := byID(rep)
	wantMessages(t, res, map[string]string{
		"test_fix:SkipsInSetUp.test_never_runs": "no database",
		"test_fix:SkipsInSetUpClass.test_one":   "whole class off",
		"test_fix:BrokenSetUp.test_x":           "error at set-up: ValueError: no fixture",
		"test_fix:BrokenTearDown.test_passes":   "tearDown raised RuntimeError: teardown broke",
		"test_fix:BrokenTearDown.test_fails":    "tearDown raised RuntimeError: teardown broke",
		"test_fix:Ordered.test_c_fails":         "AssertionError: 41 != 0",
	})
	if f := res["test_fix:BrokenTearDown.test_fails"].Failures; len(f) != 1 || !strings.Contains(f[0].Message, "AssertionError") {
		t.Errorf("the test's own failure is lost: %+v", f)
	}
	if d := res["test_fix:BrokenSetUp.test_x"].Diagnostic; d == nil || len(d.Stack) == 0 {
		t.Errorf("set-up error without a traceback: %+v", d)
	}

	// The order of the fixture calls: tearDownClass when the next test is
	// of another class, tearDownModule when it is of another module, as
	// unittest's suite runs them.
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	wantLog := `setUpModule
setUpClass
setUp test_a_changes_state
tearDown test_a_changes_state
cleanup test_a_changes_state
setUp test_b_sees_state_restored
tearDown test_b_sees_state_restored
setUp test_c_fails
tearDown test_c_fails
tearDownClass
cleanup after a failed setUp
setup_method test_ready
teardown_method test_ready
tearDownModule
other module's test
`
	if string(data) != wantLog {
		t.Errorf("fixture calls:\n%s\nwant:\n%s", data, wantLog)
	}
}

// wantMessages checks the message of each result named in want.
func wantMessages(t *testing.T, res map[string]*batch.Result, want map[string]string) {
	t.Helper()
	for id, msg := range want {
		if r := res[id]; r == nil || r.Message != msg {
			t.Errorf("%s: result %+v, want message %q", id, r, msg)
		}
	}
}
