package batch

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// statusOf maps how the engine ended a run to an entry status.
var statusOf = map[protocol.ResultKind]Status{
	protocol.ResultKernelDied:   StatusCrashed,
	protocol.ResultTimeout:      StatusTimeout,
	protocol.ResultCompileError: StatusError,
	protocol.ResultFailure:      StatusError,
	protocol.ResultInterrupted:  StatusInterrupted,
}

// result turns what the engine reported for a run into the entry's
// result. An entry fails when any statement raised: the statements whose
// Panic starts there (trace[0] is their own id) are its failures;
// statements that failed because they depend on one are not.
func (d *dispatcher) result(rec *runRecord) *Result {
	en := d.entries[rec.index]
	r := &Result{Entry: en, Duration: rec.duration(),
		Stdout: rec.stdout.String(), Stderr: rec.stderr.String(), Output: rec.output.String()}

	updates := make([]protocol.ExpressionUpdate, 0, len(rec.updates))
	for _, u := range rec.updates {
		updates = append(updates, u)
	}
	slices.SortFunc(updates, compareBySource)
	diagnostics := make(map[protocol.ExpressionID]*protocol.Diagnostic)
	for i := range rec.diagnostics {
		if id := rec.diagnostics[i].ExpressionID; id != "" {
			diagnostics[id] = &rec.diagnostics[i]
		}
	}
	for _, u := range updates {
		if d.opts.ShowValues {
			r.Values = append(r.Values, Value{ExpressionID: u.ExpressionID, Line: line(u.Range), Source: d.sources.text(en.Path, u.Range),
				Kind: u.Payload.Type, Type: u.Type, Text: payloadText(u.Payload)})
		}
		if u.Payload.Type != protocol.PayloadPanic || (len(u.Payload.Trace) > 0 && u.Payload.Trace[0] != u.ExpressionID) {
			continue
		}
		f := Failure{ExpressionID: u.ExpressionID, Path: en.Path, Line: line(u.Range), Source: d.sources.text(en.Path, u.Range), Message: u.Payload.Message}
		if diag := diagnostics[u.ExpressionID]; diag != nil {
			f.Traceback = frames(diag.Stack)
			if diag.Path != "" && diag.Location != nil && f.Line == 0 {
				f.Path, f.Line = diag.Path, diag.Location.Start.Line+1
			}
		}
		r.Failures = append(r.Failures, f)
	}

	said, reason := outcomeNone, ""
	if len(r.Failures) > 0 {
		said, reason = runtimeOutcome(r.Failures[0].Message)
	}
	if rec.failed != nil && en.Pointer.DefinedOnType != "" {
		// Building a method's self raised: unittest's SkipTest skips it;
		// anything else is an error at set-up.
		if raised, ok := setUpRaised(rec.failed.Message, en.setUpExpression()); ok {
			if said, reason := runtimeOutcome(raised); said == outcomeSkip {
				r.Status, r.Message = StatusSkipped, reason
				return r
			}
			failed := *rec.failed
			failed.Message = "error at set-up: " + raised
			rec.failed = &failed
		}
	}
	if f := rec.failed; f != nil && f.Kind == protocol.ResultCompileError && f.Diagnostic != nil {
		// The module skipped itself at import (a module-level
		// pytest.importorskip, pytest.skip(allow_module_level=True),
		// unittest.SkipTest): as pytest, its tests are skipped.
		if said, reason := runtimeOutcome(f.Diagnostic.Message); said == outcomeSkip {
			r.Status, r.Message = StatusSkipped, reason
			return r
		}
	}
	switch {
	case rec.failed != nil:
		r.Status = cmp.Or(statusOf[rec.failed.Kind], StatusError)
		r.Message = rec.failed.Message
		r.Kind = rec.failed.Kind
		r.Diagnostic = rec.failed.Diagnostic
	case said == outcomeSkip:
		// The test skipped itself (pytest.skip, importorskip, skipTest)
		// before anything failed: the run stopped there (stopAtSkip).
		r.Status, r.Message, r.Failures = StatusSkipped, reason, nil
		return r
	case said == outcomeXFail:
		r.Status, r.Message, r.Failures = StatusXFailed, reason, nil
		return r
	case len(r.Failures) > 0:
		r.Status = StatusFailed
		r.Message = r.Failures[0].Message
	default:
		r.Status = StatusPassed
	}
	return r
}

// duration is the entry's run time: from the first sign of its run (its
// Pending updates, sent as it starts on its kernel) to its end, so that
// waiting for a kernel to boot or restart is not counted; from the push
// when the run ended without a sign.
func (r *runRecord) duration() time.Duration {
	from := r.started
	if !r.running.IsZero() && r.running.Before(r.ended) {
		from = r.running
	}
	return r.ended.Sub(from)
}

// compareBySource orders updates by their place in the source; those
// without a range go last, by id.
func compareBySource(a, b protocol.ExpressionUpdate) int {
	switch {
	case a.Range != nil && b.Range != nil:
		return cmp.Or(cmp.Compare(a.Range.Start.Line, b.Range.Start.Line), cmp.Compare(a.Range.Start.Character, b.Range.Start.Character))
	case a.Range != nil:
		return -1
	case b.Range != nil:
		return 1
	}
	return cmp.Compare(a.ExpressionID, b.ExpressionID)
}

// line is the 1-based first line of a range (0 without one).
func line(r *protocol.Range) int {
	if r == nil {
		return 0
	}
	return r.Start.Line + 1
}

func payloadText(p protocol.Payload) string {
	switch p.Type {
	case protocol.PayloadValue:
		return p.Preview
	case protocol.PayloadPanic:
		return p.Message
	case protocol.PayloadPending:
		return cmp.Or(p.Message, "pending")
	}
	return ""
}

func frames(stack []protocol.StackTraceElement) []Frame {
	out := make([]Frame, 0, len(stack))
	for _, el := range stack {
		out = append(out, Frame{Function: el.FunctionName, Path: el.Path, Line: line(el.Location)})
	}
	return out
}

// maxSourceLines bounds the statement source quoted in a report.
const maxSourceLines = 5

// sourceCache reads project files to quote statements. It is used by the
// dispatcher's goroutine only.
type sourceCache struct {
	root  string
	files map[string][]string // path -> lines; nil when unreadable
}

func newSourceCache(root string) *sourceCache {
	return &sourceCache{root: root, files: make(map[string][]string)}
}

// text returns the source a range covers (characters are code points),
// cut to maxSourceLines lines; "" when the file or range is unknown.
func (c *sourceCache) text(path string, r *protocol.Range) string {
	if r == nil || path == "" {
		return ""
	}
	lines, ok := c.files[path]
	if !ok {
		data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(path)))
		if err == nil {
			lines = strings.Split(string(data), "\n")
		}
		c.files[path] = lines
	}
	if r.Start.Line < 0 || r.Start.Line >= len(lines) {
		return ""
	}
	end := min(r.End.Line, len(lines)-1, r.Start.Line+maxSourceLines-1)
	var out []string
	for i := r.Start.Line; i <= end; i++ {
		runes := []rune(strings.TrimRight(lines[i], "\r"))
		from, to := 0, len(runes)
		if i == r.Start.Line {
			from = min(max(r.Start.Character, 0), len(runes))
		}
		if i == r.End.Line {
			to = min(max(r.End.Character, from), len(runes))
		}
		out = append(out, string(runes[from:to]))
	}
	return strings.Join(out, "\n")
}

// outcome is what a test framework's exception says of a test at run
// time.
type outcome int

const (
	// outcomeNone: an ordinary exception, a failure.
	outcomeNone outcome = iota
	// outcomeSkip: unittest.SkipTest (TestCase.skipTest), pytest.skip,
	// pytest.importorskip.
	outcomeSkip
	// outcomeXFail: pytest.xfail.
	outcomeXFail
)

// runtimeOutcomes are the Panic messages ("Type: reason", the exception's
// type as the kernel names it, kernel/python's exception_message) of the
// exceptions the kernel's stopAtSkip stops a test at. pytest gives
// Skipped the module "builtins", so its messages read "Skipped: ...".
var runtimeOutcomes = []struct {
	typ  string
	kind outcome
}{
	{"unittest.case.SkipTest", outcomeSkip},
	{"Skipped", outcomeSkip},
	{"_pytest.outcomes.Skipped", outcomeSkip},
	{"_pytest.outcomes.XFailed", outcomeXFail},
}

// runtimeOutcome tells a skip or xfail outcome from a failure by the
// Panic message of the statement that raised, and returns its reason.
func runtimeOutcome(message string) (outcome, string) {
	for _, o := range runtimeOutcomes {
		if rest, ok := strings.CutPrefix(message, o.typ); ok && (rest == "" || strings.HasPrefix(rest, ": ")) {
			reason := strings.TrimPrefix(rest, ": ")
			if o.kind == outcomeSkip {
				return o.kind, cmp.Or(reason, "skipped")
			}
			return o.kind, cmp.Or(reason, "xfail")
		}
	}
	return outcomeNone, ""
}

// setUpRaised returns what the set-up expression of a method's self raised
// ("ValueError: boom") from the engine's message for a failed
// thisArgumentExpression ("the thisArgumentExpression of m:C.test_x
// ('<expression>') raised ValueError: boom").
func setUpRaised(message, expression string) (string, bool) {
	_, after, ok := strings.Cut(message, expression)
	if !ok {
		return "", false
	}
	_, raised, ok := strings.Cut(after, " raised ")
	return raised, ok
}
