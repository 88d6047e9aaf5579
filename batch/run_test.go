package batch_test

import (
	"context"
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
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// The fixture's statuses, messages and output as pytest gives them, with
// two kernels and a 1 s timeout (the hanging test ignores the interrupt:
// its kernel is restarted). test_syntax.py does not collect: pytest would
// stop there, so the run passes --continue-on-collection-errors.
func TestRunFixture(t *testing.T) {
	t.Parallel()
	obs := &recorder{}
	rep := run(t, batch.Options{Root: fixture, Tests: true, Python: pytestPython(t), Kernels: 2, Timeout: time.Second, Observer: obs,
		PytestArgs: []string{"--continue-on-collection-errors"}})
	want := `test_syntax.py error
test_uses_broken.py error
test_crash.py::test_exit crashed
test_crash.py::test_segfault crashed
test_hang.py::test_hang_ignoring_sigint timeout
test_math.py::test_add passed
test_math.py::test_add_wrong failed
test_math.py::test_raises_in_helper failed
test_math.py::test_needs_fixture passed
test_math.py::test_marked_skip skipped
test_math.py::TestCalc::test_method passed
test_math.py::TestCalc::test_method_wrong failed
test_print.py::test_prints passed
test_print.py::test_prints_then_fails failed
`
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	s := rep.Summary()
	if s != (batch.Summary{Total: 14, Passed: 4, Failed: 4, Errors: 2, Crashed: 2, Timeouts: 1, Skipped: 1}) || s.Failing() != 9 {
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
	// pytest's assertion rewriting: the message has the values.
	wrong := res["test_math.py::test_add_wrong"]
	if wrong.Message != "AssertionError: 2 + 2 should be 5\nassert 4 == 5" || !strings.Contains(wrong.Longrepr, ">       assert total == expected") ||
		wrong.Entry.Path != "test_math.py" || wrong.Entry.Line != 11 || wrong.Entry.JUnitClass != "test_math" || wrong.Entry.JUnitName != "test_add_wrong" {
		t.Errorf("test_add_wrong: message %q, entry %+v, longrepr:\n%s", wrong.Message, wrong.Entry, wrong.Longrepr)
	}
	if r := res["test_math.py::test_raises_in_helper"]; r.Message != "ZeroDivisionError: division by zero" || !strings.Contains(r.Longrepr, "helper.py:6: ZeroDivisionError") {
		t.Errorf("test_raises_in_helper: %q\n%s", r.Message, r.Longrepr)
	}
	if r := res["test_math.py::TestCalc::test_method_wrong"]; r.Message != "assert 2 == 3" || r.Entry.JUnitClass != "test_math.TestCalc" {
		t.Errorf("method: %q %+v", r.Message, r.Entry)
	}
	if r := res["test_math.py::test_marked_skip"]; r.Message != "not today" {
		t.Errorf("skip message %q", r.Message)
	}
	if r := res["test_crash.py::test_exit"]; !strings.Contains(r.Message, "exit status 3") {
		t.Errorf("test_exit: message %q", r.Message)
	}
	if r := res["test_crash.py::test_segfault"]; !strings.Contains(r.Message, "SIGSEGV") {
		t.Errorf("test_segfault message %q", r.Message)
	}
	if r := res["test_hang.py::test_hang_ignoring_sigint"]; r.Message != "timed out after 1s" {
		t.Errorf("hang: message %q", r.Message)
	}
	if r := res["test_print.py::test_prints_then_fails"]; r.Stdout != "the context of the failure\n" || !strings.Contains(r.Output, "Captured stdout call") {
		t.Errorf("test_prints_then_fails: stdout %q output %q", r.Stdout, r.Output)
	}
	if r := res["test_syntax.py"]; !strings.Contains(r.Longrepr, "SyntaxError") || r.Entry.JUnitName != "test_syntax" {
		t.Errorf("test_syntax: %q %+v\n%s", r.Message, r.Entry, r.Longrepr)
	}
	if r := res["test_uses_broken.py"]; !strings.Contains(r.Longrepr, "broken_helper") {
		t.Errorf("test_uses_broken: %q\n%s", r.Message, r.Longrepr)
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
	one := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 1})
	obs := &recorder{}
	four := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 4, Observer: obs})
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

// A crash is reported and the kernel replaced: the tests after it on
// the same (only) kernel run on a new one; so do those after a test that
// timed out (pytest's session in the old one was interrupted mid-test).
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


def test_4_new_kernel():
    n = len(state)
    assert n == 0
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 1, Timeout: 2 * time.Second})
	want := "test_k.py::test_1_crash crashed\ntest_k.py::test_2_after_crash passed\ntest_k.py::test_3_slow timeout\ntest_k.py::test_4_new_kernel passed\n"
	if got := outline(rep); got != want {
		t.Fatalf("results:\n%s\nwant:\n%s", got, want)
	}
	if m := byID(rep)["test_k.py::test_3_slow"].Message; m != "timed out after 2s" {
		t.Errorf("timeout message %q", m)
	}
	if m := byID(rep)["test_k.py::test_1_crash"].Message; !strings.Contains(m, "exit status 9") {
		t.Errorf("crash message %q", m)
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
	rep := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 1, FailFast: true})
	want := "test_ff.py::test_a passed\ntest_ff.py::test_b failed\ntest_ff.py::test_c skipped\ntest_ff.py::test_d skipped\n"
	if got := outline(rep); got != want || !rep.StoppedEarly {
		t.Fatalf("results (stopped early %v):\n%s\nwant:\n%s", rep.StoppedEarly, got, want)
	}
	if m := byID(rep)["test_ff.py::test_c"].Message; !strings.Contains(m, "--fail-fast") {
		t.Errorf("skip message %q", m)
	}
}

// With several kernels, --fail-fast interrupts the entries running beside
// the failure.
func TestRunFailFastInterruptsRunningEntries(t *testing.T) {
	t.Parallel()
	// test_a fails once test_b is running (test_b leaves a marker); they
	// are in two modules, so on two kernels (a module's functions are one
	// group).
	marker := filepath.Join(t.TempDir(), "b-running")
	root := project(t, map[string]string{"test_ff_a.py": `import os
import time


def test_a_fails():
    while not os.path.exists('` + marker + `'): time.sleep(0.01)
    assert False
`, "test_ff_b.py": `import time


def test_b_long():
    open('` + marker + `', 'w').close()
    time.sleep(60)


def test_c():
    x = 3
`})
	rep := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 2, FailFast: true})
	want := "test_ff_a.py::test_a_fails failed\ntest_ff_b.py::test_b_long interrupted\ntest_ff_b.py::test_c skipped\n"
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
	all := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 2})
	seen := map[string]int{}
	for k := 1; k <= 3; k++ {
		rep := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 2, Shard: batch.Shard{Index: k, Total: 3}})
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
		rep := run(t, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 1, Shard: batch.Shard{Index: k, Total: 2}})
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
		{batch.Options{Root: fixture, Tests: true, Entries: []string{"main:main"}}, batch.ErrUsage, "--tests and --entry"},
		{batch.Options{Root: fixture, Tests: true, ShowValues: true}, batch.ErrUsage, "--show-values"},
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
		// Ctrl-C once test_2 runs (the wait ends with the test too).
		if testenv.Poll(testenv.Deadline(t), func() bool {
			_, err := os.Stat(marker)
			return err == nil || ctx.Err() != nil
		}) {
			cancel()
		}
	}()
	rep, err := batch.Run(ctx, batch.Options{Root: root, Tests: true, Python: pytestPython(t), Kernels: 1})
	if !errors.Is(err, batch.ErrInterrupted) || rep == nil {
		t.Fatalf("Run = %v, %v; want a report and ErrInterrupted", rep, err)
	}
	want := "test_c.py::test_1 passed\ntest_c.py::test_2_waits interrupted\ntest_c.py::test_3 skipped\n"
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
	var entries []string
	for i := range 6 {
		entries = append(entries, fmt.Sprintf("test_%d:test_ok", i))
	}
	rep := run(t, batch.Options{Root: project(t, files), Python: wrapper, Entries: entries, Kernels: 2})
	if got := outline(rep); got != want.String() {
		for _, r := range rep.Results {
			t.Logf("%s: %s %q", r.Entry.ID(), r.Status, r.Message)
		}
		t.Fatalf("results:\n%s\nwant:\n%s", got, want.String())
	}
}
