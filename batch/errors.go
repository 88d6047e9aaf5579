package batch

import "errors"

// Errors of a batch run. ripple run maps ErrUsage, ErrNoEntries,
// ErrDiscovery and ErrProject to exit status 2 and ErrInterrupted to 130.
var (
	// ErrUsage: a flag value that cannot be used (--entry, --shard,
	// --kernels, a report path), with the value at fault.
	ErrUsage = errors.New("usage")
	// ErrNoEntries: nothing to run (no test found, no main:main).
	ErrNoEntries = errors.New("no entries")
	// ErrDiscovery: the discovery script could not run or answered
	// something unreadable (a broken interpreter).
	ErrDiscovery = errors.New("discovery failed")
	// ErrProject: the project cannot be opened or run (missing directory,
	// no usable Python).
	ErrProject = errors.New("project error")
	// ErrInterrupted: the run was stopped (Ctrl-C) before every entry
	// ended; the report holds what ran.
	ErrInterrupted = errors.New("interrupted")
	// ErrReport: a report file could not be read, merged or written.
	ErrReport = errors.New("report error")
)

// Errors of a test run (ripple run --tests) beyond those of Run.
var (
	// ErrCollection: pytest reported errors while collecting, and, as
	// pytest does without --continue-on-collection-errors, no test ran.
	ErrCollection = errors.New("errors during collection")
	// ErrNoPytest: the interpreter cannot import pytest and the project
	// has tests written for pytest.
	ErrNoPytest = errors.New("pytest is not installed")
	// ErrNoTests: nothing was collected (pytest's exit status 5).
	ErrNoTests = errors.New("no tests collected")
	// ErrStopped: pytest stopped the session (-x, --maxfail).
	ErrStopped = errors.New("stopped")
	// ErrStoppedInterrupted comes with ErrStopped when pytest stopped as
	// interrupted (--sw: "Test failed, continuing from this test next
	// run."): pytest's exit status is then 2, not 1.
	ErrStoppedInterrupted = errors.New("interrupted")
)

// PytestUsageError is a usage error pytest reported in a test run (an
// unknown option, a bad -k or -m expression, a path that does not exist):
// ripple run exits with pytest's status for it, 4, and pytest's words
// ("ERROR: " and the message on stderr, what its terminal reporter wrote
// before on stdout). It wraps ErrUsage.
type PytestUsageError struct {
	// Runner is "pytest", or "unittest (pytest is not installed)" on the
	// path without pytest.
	Runner string
	// Message is pytest's (UsageError's text).
	Message string
	// Console is what pytest's terminal reporter wrote in the first kernel
	// (its header and last line when collection had started), "" when
	// pytest stopped while parsing its command line.
	Console string
}

func (e *PytestUsageError) Error() string { return "usage: " + e.Runner + ": " + e.Message }

// Unwrap makes a PytestUsageError an ErrUsage.
func (e *PytestUsageError) Unwrap() error { return ErrUsage }

// PytestInternalError is pytest's internal error in a test run: a hook of
// a plugin or conftest.py raised while pytest configured or collected
// (dateutil's suite without pytest-cov: an unknown mark, which its
// filterwarnings turns into an error). ripple run ends as pytest does:
// what its terminal reporter wrote (the INTERNALERROR> lines, the last
// line) on stdout, exit status 3.
type PytestInternalError struct {
	// Message is the exception, "Type: message".
	Message string
	// Console is what pytest's terminal reporter wrote in the first kernel.
	Console string
}

func (e *PytestInternalError) Error() string { return "pytest: internal error: " + e.Message }

// Causes of a test run's cancelled calls (context.Cause), which say what
// the running test's result is.
var (
	// errTestTimeout: the running test passed Options.Timeout.
	errTestTimeout = errors.New("test timed out")
	// errFailFast: a test failed under --fail-fast.
	errFailFast = errors.New("--fail-fast")
)
