package batch

// The wire of the kernel method "pytest" (kernel/python/ripple_kernel/pytest_plugin.py,
// handle): the requests a test run sends, one type per op, and what the
// kernel answers: a result per request, and progress frames for what does
// not fit in a result (collected items, each test's start and end).
//
// The requests' field names and omissions are the kernel's contract: it
// reads each field with params.get, so a field that is always sent (a
// zero value, a null list) means what its zero value means there, and a
// field marked omitempty is sent only when set, as the kernel expects
// (pytest_wire_test.go pins the JSON of each).

import "time"

// pytestMethod is the kernel method of every request below.
const pytestMethod = "pytest"

// The ops of the kernel method "pytest".
const (
	opCollect  = "collect"  // open a session: configure pytest and collect
	opRun      = "run"      // run tests of the open session
	opFinish   = "finish"   // run the held-back test, tear the session down
	opHot      = "hot"      // patch saved functions in place (hot.go)
	opUnittest = "unittest" // without pytest: unittest's loader and runner
)

// collectRequest opens a pytest session in the kernel (op "collect"):
// pytest's Config from Args, then its collection. A session left open by
// an earlier run is torn down first.
type collectRequest struct {
	Op      string   `json:"op"` // opCollect
	Args    []string `json:"args"`
	Worker  int      `json:"worker"`  // the N of the kernel's xdist name gwN
	Workers int      `json:"workers"` // the kernels of the run
	// Purge: the kernel forgets the project's modules first (the code
	// changed since it imported them).
	Purge bool `json:"purge"`
	// Deps: the kernel reports each test module's project imports
	// (collectEvent "deps").
	Deps bool `json:"deps"`
	// Watch: the kernel records which project functions each test
	// reaches (kernel/python/ripple_kernel/watchfn.py).
	Watch bool `json:"watch"`
	// Dist is DistLoadScope or omitted: how the kernel names each item's
	// scope (testItem.Scope); the kernel's default is a module.
	Dist  string        `json:"dist,omitempty"`
	Split *splitRequest `json:"split,omitempty"` // split collection only (split.go)
	// Select: a late kernel's hand-over (handover.go): the test files and
	// node ids, relative to rootdir, its session collects instead of the
	// paths in Args.
	Select []string `json:"select,omitempty"`
	// Env: the worker variables of a kernel the run did not start (a
	// launcher's slot), which a child kernel gets at its start.
	Env map[string]string `json:"env,omitempty"`
	// TTY: ripple's stdout is a terminal, whose width is Columns (0: not
	// known): the kernel renders pytest's console output as pytest would
	// for it (pytest_console.py).
	TTY     bool `json:"tty,omitempty"`
	Columns int  `json:"columns,omitempty"`
}

// splitRequest is the share of the suite a session collects (split.go).
type splitRequest struct {
	Share  int `json:"share"`
	Shares int `json:"shares"`
	// Only: the one module a stolen group is in (its node id): the
	// session collects only that.
	Only []string `json:"only,omitempty"`
}

// runRequest runs tests of the open session (op "run", by kernel index)
// or finishes it (op "finish", no indices).
type runRequest struct {
	Op      string `json:"op"`
	Indices []int  `json:"indices"`
	// YieldWide: other sessions are open beside this one, so a failing
	// session- or package-scoped fixture is not reported but answered
	// as runAnswer.Clash (testWorker.clash).
	YieldWide bool `json:"yieldWide,omitempty"`
	// Keep (finish): the session's items stay for a watch's hot path
	// (hot.go).
	Keep bool `json:"keep,omitempty"`
}

// unittestCollectRequest collects with unittest's loader when pytest is
// missing (op "unittest", step "collect"), on Paths (none: the project).
type unittestCollectRequest struct {
	Op    string   `json:"op"`   // opUnittest
	Step  string   `json:"step"` // "collect"
	Paths []string `json:"paths"`
}

// unittestRunRequest runs tests that unittest's loader collected (op
// "unittest", step "run").
type unittestRunRequest struct {
	Op      string `json:"op"`   // opUnittest
	Step    string `json:"step"` // "run"
	Indices []int  `json:"indices"`
}

// hotRequest hands the kernel saved library modules to patch in place (op
// "hot", hot.go).
type hotRequest struct {
	Op    string    `json:"op"` // opHot
	Files []hotFile `json:"files"`
}

// hotFile is a saved module for the "hot" op: its path relative to the
// root and its new source.
type hotFile struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// testItem is one collected item or collection report, as the kernel's
// pytest_plugin.py answers it.
type testItem struct {
	NodeID   string    `json:"nodeid"`
	Path     string    `json:"path"`
	Line     int       `json:"line"` // 0-based as pytest's location; -1 unknown
	Scope    string    `json:"scope"`
	JUnit    [2]string `json:"junit"`
	Status   string    `json:"status"` // collection reports only
	Message  string    `json:"message"`
	Longrepr string    `json:"longrepr"`
	// JUnitText: a skipped collection report's text in pytest's junitxml.
	JUnitText string `json:"junitText"`
	// Console: a collection report as pytest's terminal reporter shows it
	// (console_pytest.go).
	Console *pytestDigest `json:"console"`
	// With split collection (split.go): the index of the item's (the
	// report's) file in the kernel's Files (-1: none), and for a report
	// how many files collection had reached when it came.
	File int `json:"file"`
	Pos  int `json:"pos"`
}

// entry is the run's entry of a collected item.
func (it testItem) entry() Entry {
	return Entry{NodeID: it.NodeID, Path: it.Path, Line: it.Line + 1, JUnitClass: it.JUnit[0], JUnitName: it.JUnit[1], Scope: it.Scope}
}

// collectAnswer is the kernel's answer to "collect" (and unittest's
// collect step), with what came as progress frames before it.
type collectAnswer struct {
	NoPytest    string      `json:"noPytest"`
	Python      string      `json:"python"`
	NeedsPytest [][2]string `json:"needsPytest"`
	Usage       string      `json:"usage"`
	Internal    string      `json:"internal"` // pytest's internal error (Console has its INTERNALERROR> lines)
	Interrupted string      `json:"interrupted"`
	Count       int         `json:"count"`
	// Items and CollectReports come as progress frames (a result is
	// capped at 64 KiB).
	Items          []testItem          `json:"-"`
	CollectReports []testItem          `json:"-"`
	Deps           map[string][]string `json:"-"` // test module -> the project files it imports
	// Split collection (split.go): the kernel's account, and the test
	// files collection reached, in order, with each one's share (-1:
	// every kernel collects it).
	Split  *splitAnswer `json:"split"`
	Files  []string     `json:"-"`
	Owners []int        `json:"-"`
	// FileTimes: the first kernel's collect time of each test file, in
	// seconds, by its node id (what a hand-over of it costs: handover.go).
	FileTimes   map[string]float64 `json:"-"`
	Continue    bool               `json:"continueOnCollectionErrors"`
	CollectOnly bool               `json:"collectOnly"`
	Stopped     string             `json:"stopped"`
	// StopFailed: collection errors reached -x/--maxfail before the last
	// module (pytest's Session.Failed: its session ends with status 1);
	// ShouldFail: pytest's session.shouldfail once collected ("stopping
	// after 1 failures"), which its console shows above its Interrupted.
	StopFailed bool   `json:"stopFailed"`
	ShouldFail string `json:"shouldfail"`
	// Console: with --collect-only, what pytest's terminal reporter wrote
	// (its listing and summary line); the session ended in the kernel.
	Console string `json:"console"`
	// Header: what pytest's terminal reporter wrote in the first kernel up
	// to the end of collection (its header and "collected" line, as -q and
	// -v shape them); Deselected: the items pytest deselected; Verbosity:
	// pytest's -v/-q level.
	Header     string `json:"header"`
	Deselected int    `json:"deselected"`
	Verbosity  int    `json:"verbosity"`
	// MaxFail: pytest's -x/--maxfail (0: none), which the run counts
	// across its kernels (completer.maxfail).
	MaxFail int `json:"maxfail"`
	// ConsoleSettings: how pytest's terminal reporter lays out the run
	// (nil: the kernel cannot render it); Warnings: those pytest recorded
	// while it configured and collected.
	ConsoleSettings *pytestConsoleSettings `json:"consoleSettings"`
	Warnings        []pytestWarning        `json:"warnings"`
	// Cache: pytest's cache plugin is on (pytest_cache.go); nil when off.
	Cache *pytestCache `json:"cache"`
	// JUnitXML: pytest's --junitxml was given (argument or addopts).
	JUnitXML *PytestJUnitXML `json:"junitxml"`
	// took: how long the collect call took (the kernel's session set up
	// and collected), measured by the worker.
	took time.Duration
}

// PytestJUnitXML is pytest's --junitxml as the kernel read it: the file
// (absolute) and the ini options it is written with.
type PytestJUnitXML struct {
	Path      string `json:"path"`
	SuiteName string `json:"suiteName"`
	Family    string `json:"family"`
	Durations string `json:"durations"`
}

// splitAnswer is the kernel's account of its split collection.
type splitAnswer struct {
	Off     string `json:"off"` // why this session collected everything
	Share   int    `json:"share"`
	Shares  int    `json:"shares"`
	Planned int    `json:"planned"` // test files the pre-pass dealt out
	Unsafe  string `json:"unsafe"`  // why the collection cannot be merged
}

// collectEvent is a progress frame of "collect": a chunk of items, a
// collection report, a test module's project imports, a chunk of the
// split's files, a chunk of a --collect-only listing too long for the
// answer (its Console is then cut: the chunks, in order, are the listing).
type collectEvent struct {
	Event  string             `json:"event"` // items, collectReport, deps, files, fileTimes or console
	Items  []testItem         `json:"items"`
	Report testItem           `json:"report"`
	Path   string             `json:"path"`
	Deps   []string           `json:"deps"`
	Files  []string           `json:"files"`
	Owners []int              `json:"owners"`
	Text   string             `json:"text"`
	Times  map[string]float64 `json:"times"`
}

// testEvent is a progress frame of "run" and "finish": a test started or
// ended.
type testEvent struct {
	Event    string      `json:"event"` // start, end, passMark or keyboardInterrupt
	I        int         `json:"i"`
	Status   string      `json:"status"`
	Message  string      `json:"message"`
	Longrepr string      `json:"longrepr"`
	Stdout   string      `json:"stdout"`
	Stderr   string      `json:"stderr"`
	Sections [][2]string `json:"sections"`
	Duration float64     `json:"duration"`
	// TeardownError: the teardown failed too, after the test failed.
	TeardownError string `json:"teardownError"`
	// JUnit: the testcases pytest's junitxml would write (Result.JUnit).
	JUnit [][]JUnitChild `json:"junit"`
	// Console: the test's reports as pytest's terminal reporter shows
	// them (console_pytest.go).
	Console *pytestDigest `json:"console"`
	// When (passMark): the report (setup, call, teardown) the kernel
	// logged at this point of what the test wrote past pytest's capture.
	When string `json:"when"`
	// Text (keyboardInterrupt): what pytest's terminal shows of a
	// KeyboardInterrupt that ended a test: where it landed and the
	// --full-trace hint, or the whole traceback with --full-trace.
	Text string `json:"text"`
}

// runAnswer is the kernel's answer to "run" and "finish".
type runAnswer struct {
	Stopped string `json:"stopped"`
	// Interrupted: pytest stopped as interrupted (session.shouldstop,
	// --sw), exit status 2; else as failed (shouldfail: -x, --maxfail).
	Interrupted bool `json:"interrupted"`
	// Clash: a session- or package-scoped fixture failed in this session
	// while other sessions ran (yieldWide): the kernel reported neither
	// the test whose setup failed nor the rest of the call (clash).
	Clash string `json:"clash"`
}

// hotAnswer is a kernel's answer to "hot".
type hotAnswer struct {
	Fallback    string   `json:"fallback"`
	SyntaxError string   `json:"syntaxError"`
	Changed     []string `json:"changed"`
	Moved       []string `json:"moved"`
	Tests       []string `json:"tests"`
}
