package batch_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
)

// feed plays a report through a console as Run would.
func feed(c *batch.Console, rep *batch.Report) {
	entries := make([]batch.Entry, len(rep.Results))
	for i, r := range rep.Results {
		entries[i] = r.Entry
	}
	c.Started(entries, rep.Kernels)
	for i, r := range rep.Results {
		c.Result(r)
		c.Progress(batch.Progress{Done: i + 1, Total: len(entries), Failing: i / 2, Elapsed: time.Duration(i) * time.Second})
	}
	c.Finish(rep)
}

func TestConsolePlain(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	feed(batch.NewConsole(&out, batch.ConsoleOptions{}), sampleReport())
	text := out.String()
	if strings.Contains(text, "\r") || strings.Contains(text, "\x1b[K") {
		t.Errorf("plain output has terminal controls:\n%q", text)
	}
	lines := strings.Split(text, "\n")
	wantPrefix := []string{
		"ripple run: 7 entries on 2 kernels",
		"[1/7] PASSED   test_a.py:3  test_a:test_pass (0.002s)",
		"[2/7] FAILED   test_a.py:10  test_a:TestX.test_fail (0.003s): AssertionError: total is wrong",
		"[3/7] CRASHED  test_a.py:20  test_a:test_crash (0.001s): the kernel died (signal SIGSEGV) while running this context",
		"[4/7] SKIPPED  test_a.py:30  test_a:test_skip: marked skip",
		"[5/7] ERROR    test_b.py:3  test_b:main (0.000s): SyntaxError: invalid syntax",
		"[6/7] TIMEOUT  test_b.py:8  test_b:test_slow (30.000s): timed out after 30s",
		"[7/7] STOPPED  test_b.py:12  test_b:test_stopped (0.000s): interrupted (Ctrl-C)",
	}
	for i, want := range wantPrefix {
		if lines[i] != want {
			t.Errorf("line %d:\n got %q\nwant %q", i, lines[i], want)
		}
	}
	for _, want := range []string{
		"--- FAILED test_a:TestX.test_fail (test_a.py:10)\n    test_a.py:12  assert total == 5  (test_a:TestX.test_fail/#1)\n    AssertionError: total is wrong\n    traceback (most recent call last):\n      test_a.py:12 in TestX.test_fail\n",
		"--- ERROR test_b:main (test_b.py:3)\n    SyntaxError: invalid syntax\n    at test_b.py:3:5: SyntaxError: invalid syntax\n",
		"ripple run: 7 entries in 1.5s on 2 kernels: 1 passed, 1 failed, 1 error, 1 crashed, 1 timed out, 1 skipped, 1 interrupted\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// Values only with ShowValues; passing entries are not in the
	// failures.
	if strings.Contains(text, "values:") || strings.Contains(text, "--- PASS") {
		t.Errorf("unexpected section:\n%s", text)
	}
}

func TestConsoleValuesAndOutput(t *testing.T) {
	t.Parallel()
	rep := sampleReport()
	rep.Results[1].Output = "line one\nline two\n"
	var out bytes.Buffer
	feed(batch.NewConsole(&out, batch.ConsoleOptions{ShowValues: true}), rep)
	text := out.String()
	for _, want := range []string{
		"      11  total = 4                                => 4\n",
		"    values:\n",
		"    output:\n    | line one\n    | line two\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestConsoleProgressBar(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	c := batch.NewConsole(&out, batch.ConsoleOptions{ProgressBar: true})
	rep := sampleReport()
	feed(c, rep)
	text := out.String()
	if !strings.Contains(text, "[####") || !strings.Contains(text, "/7") || !strings.Contains(text, "failing") {
		t.Errorf("no progress bar:\n%q", text)
	}
	// Each result line replaces the bar: erase, then the line.
	if !strings.Contains(text, "\r\x1b[K[2/7] FAIL") {
		t.Errorf("result line does not erase the bar:\n%q", text)
	}
	// The bar is gone before the summary.
	trimmed := strings.TrimSuffix(text, "\n")
	last := trimmed[strings.LastIndex(trimmed, "\n")+1:]
	if !strings.HasPrefix(last, "ripple run: 7 entries") {
		t.Errorf("last line %q", last)
	}
}

func TestSummaryLine(t *testing.T) {
	t.Parallel()
	rep := &batch.Report{Kernels: 1, Duration: 2 * time.Second, Shard: batch.Shard{Index: 2, Total: 3}}
	if got := batch.SummaryLine(rep); got != "ripple run: 0 entries in 2s on 1 kernel (shard 2/3): nothing ran" {
		t.Errorf("empty: %q", got)
	}
	rep = sampleReport()
	rep.Interrupted = true
	if got := batch.SummaryLine(rep); !strings.HasSuffix(got, "(interrupted)") {
		t.Errorf("interrupted: %q", got)
	}
}

// Tests run by pytest: one line per test by node id in pytest's words
// (colour only when asked), pytest's report of a failure, xfailed and
// xpassed not failing the run.
func TestConsolePytestWords(t *testing.T) {
	t.Parallel()
	entry := func(name string) batch.Entry {
		return batch.Entry{NodeID: "test_np.py::" + name, Path: "test_np.py", Line: 3, JUnitClass: "test_np", JUnitName: name, Scope: "test_np.py"}
	}
	rep := &batch.Report{Kernels: 1, Duration: time.Second, Results: []*batch.Result{
		{Entry: entry("test_a"), Status: batch.StatusXFailed, Message: "bug"},
		{Entry: entry("test_b"), Status: batch.StatusXPassed},
		{Entry: entry("test_c"), Status: batch.StatusPassed},
		{Entry: entry("test_d"), Status: batch.StatusFailed, Message: "assert 2 == 3",
			Longrepr: "def test_d():\n>       assert 2 == 3\nE       assert 2 == 3\n\ntest_np.py:4: AssertionError"},
	}}
	var out bytes.Buffer
	feed(batch.NewConsole(&out, batch.ConsoleOptions{}), rep)
	for _, want := range []string{
		"ripple run: 4 tests on 1 kernel\n",
		"[1/4] XFAIL    test_np.py::test_a (0.000s): bug\n",
		"[2/4] XPASS    test_np.py::test_b (0.000s)\n",
		"[3/4] PASSED   test_np.py::test_c (0.000s)\n",
		"[4/4] FAILED   test_np.py::test_d (0.000s): assert 2 == 3\n",
		"___ FAILED test_np.py::test_d ___\ndef test_d():\n>       assert 2 == 3\nE       assert 2 == 3\n\ntest_np.py:4: AssertionError\n",
		"ripple run: 4 tests in 1s on 1 kernel: 1 passed, 1 failed, 1 xfailed, 1 xpassed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if s := rep.Summary(); s.Failing() != 1 {
		t.Errorf("xfailed or xpassed fail the run: %+v", s)
	}
	if strings.Contains(out.String(), "\x1b[") {
		t.Errorf("colour without Color:\n%s", out.String())
	}
	out.Reset()
	feed(batch.NewConsole(&out, batch.ConsoleOptions{Color: true}), rep)
	if !strings.Contains(out.String(), "\x1b[32mPASSED  \x1b[0m test_np.py::test_c") || !strings.Contains(out.String(), "\x1b[31mFAILED  \x1b[0m test_np.py::test_d") {
		t.Errorf("colour:\n%q", out.String())
	}
}

// Not parallel: it sets environment variables.
func TestInteractive(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	defer pty.Close()
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()

	t.Setenv("CI", "")
	t.Setenv("TERM", "xterm")
	if !batch.Interactive(pty) {
		t.Error("a terminal outside CI is not interactive")
	}
	if batch.Interactive(pipeW) {
		t.Error("a pipe is interactive")
	}
	t.Setenv("CI", "false")
	if !batch.Interactive(pty) {
		t.Error("CI=false turned the bar off")
	}
	t.Setenv("CI", "true")
	if batch.Interactive(pty) {
		t.Error("CI=true leaves the bar on")
	}
	t.Setenv("CI", "")
	t.Setenv("TERM", "dumb")
	if batch.Interactive(pty) {
		t.Error("TERM=dumb leaves the bar on")
	}
}
