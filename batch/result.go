package batch

import (
	"time"

	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// Status is how an entry ended.
type Status string

const (
	// StatusPassed: the run completed and no statement raised.
	StatusPassed Status = "passed"
	// StatusFailed: a statement raised (a failing assert included); the
	// run itself completed.
	StatusFailed Status = "failed"
	// StatusError: the entry could not run: its module does not compile
	// or load, the function does not exist, its class cannot be built
	// without arguments.
	StatusError Status = "error"
	// StatusCrashed: the kernel died while running the entry (os._exit, a
	// segfault); the kernel was replaced for the other entries.
	StatusCrashed Status = "crashed"
	// StatusTimeout: the entry ran past --timeout and was interrupted (its
	// kernel restarted if it ignored the interrupt).
	StatusTimeout Status = "timeout"
	// StatusSkipped: not run: marked skip, takes arguments, or not started
	// because the run stopped early (--fail-fast, Ctrl-C).
	StatusSkipped Status = "skipped"
	// StatusInterrupted: stopped while running because the run stopped
	// early (--fail-fast, Ctrl-C).
	StatusInterrupted Status = "interrupted"
	// StatusXFailed: marked xfail and failed as expected (a statement
	// raised), or marked xfail(run=False) and not run.
	StatusXFailed Status = "xfailed"
	// StatusXPassed: marked xfail (not strict) and passed.
	StatusXPassed Status = "xpassed"
)

// Failing reports whether the status makes ripple run exit with 1.
func (s Status) Failing() bool {
	switch s {
	case StatusFailed, StatusError, StatusCrashed, StatusTimeout:
		return true
	}
	return false
}

// Result is one entry's outcome.
type Result struct {
	Entry  Entry
	Status Status
	// Duration runs from the push of the entry to the end of its run.
	Duration time.Duration
	// Message says in one line why the entry did not pass ("" if it did).
	Message string
	// Failures are the statements that raised, in source order (dependents
	// of a raising statement, which fail with it, are not listed).
	Failures []Failure
	// Kind is how the engine ended a run that failed as a whole
	// (compileError, failure, kernelDied, timeout, interrupted); "" when
	// the run completed or never started.
	Kind protocol.ResultKind
	// Diagnostic explains a run that failed as a whole (compile error).
	Diagnostic *protocol.Diagnostic
	// Stdout, Stderr and Output (both, interleaved) are what the entry
	// printed, including output of C code and child processes.
	Stdout, Stderr, Output string
	// Values are every statement's final state, in source order; recorded
	// only with Options.ShowValues.
	Values []Value
	// Longrepr is pytest's report of a test that did not pass (the
	// traceback, the assertion message with its values: what pytest
	// prints under FAILURES and ERRORS); empty for entries not run by
	// pytest.
	Longrepr string
	// TeardownError is the one-line message of a teardown that failed after
	// the test failed: pytest counts such a test as 1 failed and 1 error
	// (Summary, the JUnit reports).
	TeardownError string
	// JUnit is what pytest's junitxml writes for a test: its testcases'
	// children (two testcases for a failure and a teardown error); nil
	// for a test that passed (without junit_logging, and recording no
	// property or attribute) and for entries.
	JUnit [][]JUnitChild
	// pytest: the test's reports as pytest's terminal reporter shows them
	// (console_pytest.go); nil for entries, unittest's tests and results
	// ripple made (crashed, timed out, not run).
	pytest *pytestDigest
	// passOut and passErr: what the test wrote to stdout and stderr past
	// pytest's capture (-s, a write to a descriptor pytest does not
	// capture), which reached pytest's terminal while it ran: after its
	// location, each part before the letter of the report that followed
	// it (passMarks: where in passOut the kernel logged each report;
	// none: all before the letters).
	passOut, passErr string
	passMarks        []passMark
}

// callPassed reports whether the test's call passed (its JUnit says so).
func (r *Result) callPassed() bool {
	for _, c := range r.JUnit {
		for _, ch := range c {
			if ch.Tag == "passed" {
				return true
			}
		}
	}
	return false
}

// JUnitChild is a child element of a testcase as pytest's junitxml writes
// it: failure, error, skipped, system-out or system-err; or what the test
// recorded (Message the name, Text the value): "property" (record_property,
// the testcase's <properties>), "attribute" (record_xml_attribute) and
// "suite-property" (record_testsuite_property, hypothesis's statistics:
// the testsuite's <properties>); or "passed" (its call passed).
type JUnitChild struct {
	Tag     string `json:"tag"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Text    string `json:"text"`
}

// Failure is a statement that raised.
type Failure struct {
	ExpressionID protocol.ExpressionID
	Path         string
	Line         int    // 1-based
	Source       string // the statement's source text
	Message      string // "AssertionError: total is wrong"
	Traceback    []Frame
}

// Frame is one frame of a traceback, outermost call first.
type Frame struct {
	Function string
	Path     string
	Line     int // 1-based; 0 when unknown
}

// Value is a statement's final state.
type Value struct {
	ExpressionID protocol.ExpressionID
	Line         int // 1-based; 0 when unknown
	Source       string
	// Kind is the payload type: Value, Panic or Pending (not reached).
	Kind protocol.PayloadType
	// Type is the value's qualified type name (Value only).
	Type string
	// Text is the preview of a Value, the message of a Panic, the reason of
	// a Pending.
	Text string
}

// Report is the outcome of a batch run, results in report order (the
// entries' path, line, id), whatever the parallelism.
type Report struct {
	Project string
	Python  kernel.Interpreter
	Kernels int
	Timeout time.Duration
	Shard   Shard
	Started time.Time
	// Duration runs from the start of the engine to the last result.
	Duration time.Duration
	// Interrupted: the run was stopped by Ctrl-C (ErrInterrupted).
	Interrupted bool
	// StoppedEarly: --fail-fast stopped the run at the first failure.
	StoppedEarly bool
	Results      []*Result
	// PytestJUnitXML is pytest's --junitxml of a test run (its arguments
	// or the ini file's addopts), which Run has written
	// (WritePytestJUnit); nil without it.
	PytestJUnitXML *PytestJUnitXML
	// PytestConsole is what pytest itself printed for a run that ran
	// nothing (--collect-only: its listing): the console shows it as is.
	PytestConsole string
	// Deselected: the items pytest deselected (-k, -m, addopts), and
	// Verbosity its -v/-q level (a test run).
	Deselected, Verbosity int
	// collectTime: how long the kernels took to collect (a test run).
	collectTime time.Duration
	// pytestStopped: why pytest stopped the session (-x, --maxfail,
	// --sw), in its words: "stopping after 2 failures"; two lines when
	// collection errors reached -x and ended the session as Interrupted.
	pytestStopped string
	// interruptedBy: which test's own KeyboardInterrupt ended the run
	// ("test_a.py::test_x raised KeyboardInterrupt"), "" for none.
	interruptedBy string
	// interruptText: pytest's lines under its "KeyboardInterrupt" one
	// (where the interrupt landed, the --full-trace hint), from the
	// kernel; "" when none said (interruptedBy stands in).
	interruptText string
}

// Summary counts results by status.
type Summary struct {
	Total       int `json:"total"`
	Passed      int `json:"passed"`
	Failed      int `json:"failed"`
	Errors      int `json:"errors"`
	Crashed     int `json:"crashed"`
	Timeouts    int `json:"timeout"`
	Skipped     int `json:"skipped"`
	Interrupted int `json:"interrupted"`
	XFailed     int `json:"xfailed"`
	XPassed     int `json:"xpassed"`
}

// add counts one result.
func (s *Summary) add(st Status) {
	s.Total++
	switch st {
	case StatusPassed:
		s.Passed++
	case StatusFailed:
		s.Failed++
	case StatusError:
		s.Errors++
	case StatusCrashed:
		s.Crashed++
	case StatusTimeout:
		s.Timeouts++
	case StatusSkipped:
		s.Skipped++
	case StatusInterrupted:
		s.Interrupted++
	case StatusXFailed:
		s.XFailed++
	case StatusXPassed:
		s.XPassed++
	}
}

// Failing is the number of results that make the run fail.
func (s Summary) Failing() int { return s.Failed + s.Errors + s.Crashed + s.Timeouts }

// Summary counts the report's results.
func (r *Report) Summary() Summary {
	var s Summary
	for _, res := range r.Results {
		s.add(res.Status)
		if res.TeardownError != "" {
			s.Errors++ // as pytest counts it: the test failed, and errored
		}
		if res.Status == StatusError && res.callPassed() {
			s.Passed++ // likewise: it passed, then its teardown failed
		}
	}
	return s
}

// passMark is where a test's report was logged in what it wrote past
// pytest's capture: its phase (setup, call, teardown) and the length of
// its stdout so far.
type passMark struct {
	when string
	at   int
}
