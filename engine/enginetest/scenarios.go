package enginetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/protocol/protocoltest"
)

// The acceptance scenarios, written once and run against every way into
// the engine: its Go API (engine/scenario_test.go) and the WebSocket of a
// real server (tests/scenarios_test.go). Each starts from main.py (main:
// x = 6; y = foo(x, 5); z = y + 5, or the body the scenario gives) and
// helper.py (foo: c = a * b; return c), with one connected client.

// Driver is one way into a running engine with one connected client, as
// a scenario drives it. Its methods fail the test on an error. A wait
// (WaitRun, WaitValue) looks at what arrived after the call before it.
type Driver interface {
	// NewContext creates a context and pushes an ExplicitCall of pointer
	// (module:qualname); it returns the context and its first run.
	NewContext(pointer string) (protocol.ContextID, *Run)
	// StartContext is NewContext without waiting for the run.
	StartContext(pointer string) protocol.ContextID
	Recompute(p protocol.RecomputeParams)
	Push(p protocol.PushParams)
	Pop(id protocol.ContextID)
	Interrupt(id protocol.ContextID)
	AttachVisualization(p protocol.AttachVisualizationParams)
	DetachVisualization(p protocol.DetachVisualizationParams)
	ExecuteExpression(p protocol.ExecuteExpressionParams)
	// SetText replaces a file's whole buffer (text/applyEdit, execute
	// true), opening it first.
	SetText(path, text string)
	// WaitRun waits for the end (executionComplete or executionFailed) of
	// a run of id and returns what the context was sent up to it.
	WaitRun(id protocol.ContextID) *Run
	// WaitValue waits for an expression update giving expr of id a value.
	WaitValue(id protocol.ContextID, expr protocol.ExpressionID)
}

// Run is what a client was sent for one context up to the end of a run.
type Run struct {
	// Methods are the context's notifications, in arrival order.
	Methods []string
	// Updates are its expression updates, in arrival order; Batches the
	// same, one entry per expressionUpdates notification.
	Updates protocoltest.Updates
	Batches [][]protocol.ExpressionUpdate
	// Failed is the executionFailed result (nil when the run completed).
	Failed *protocol.ExecutionResult
	// Output is the text of its output notifications.
	Output string
	// VisData and VisFailed are its visualizations' data and failure
	// messages.
	VisData, VisFailed []string
	// Status are its executionStatus notifications.
	Status []protocol.ExecutionStatusParams
}

// Add folds a notification (params decoded to the protocol's type) into
// r if it is context id's; it reports whether the notification ends a run
// of id.
func (r *Run) Add(id protocol.ContextID, method string, params any) (end bool) {
	switch p := params.(type) {
	case protocol.ExpressionUpdatesParams:
		if p.ContextID != id {
			return false
		}
		r.Updates = append(r.Updates, p.Updates...)
		r.Batches = append(r.Batches, p.Updates)
	case protocol.OutputParams:
		if p.ContextID != id {
			return false
		}
		r.Output += p.Text
	case protocol.VisualizationUpdateParams:
		if p.VisualizationContext.ContextID != id {
			return false
		}
		r.VisData = append(r.VisData, string(p.Data))
	case protocol.VisualizationEvaluationFailedParams:
		if p.ContextID != id {
			return false
		}
		r.VisFailed = append(r.VisFailed, p.Message)
	case protocol.ExecutionStatusParams:
		if p.ContextID != id {
			return false
		}
		r.Status = append(r.Status, p)
	case protocol.ExecutionFailedParams:
		if p.ContextID != id {
			return false
		}
		res := p.Result
		r.Failed = &res
		end = true
	case protocol.ExecutionCompleteParams:
		if p.ContextID != id {
			return false
		}
		end = true
	default:
		return false
	}
	r.Methods = append(r.Methods, method)
	return end
}

// Diagnostics are the diagnostics of the run's executionStatus
// notifications, in order.
func (r *Run) Diagnostics() []protocol.Diagnostic {
	var out []protocol.Diagnostic
	for _, s := range r.Status {
		out = append(out, s.Diagnostics...)
	}
	return out
}

// Scenario is one acceptance scenario.
type Scenario struct {
	Name string
	// Body is main's body (ScenarioBody when nil).
	Body []string
	Test func(t testing.TB, d Driver)
}

// Files are the scenario's project files.
func (s Scenario) Files() map[string]string {
	return map[string]string{"main.py": MainWith(s.Body...), "helper.py": ScenarioHelper}
}

// RunScenarios runs every scenario as a parallel subtest of t, on a
// driver open makes for the scenario's files.
func RunScenarios(t *testing.T, open func(t *testing.T, files map[string]string) Driver) {
	for _, s := range Scenarios {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			s.Test(t, open(t, s.Files()))
		})
	}
}

// Scenarios are the 13 acceptance scenarios.
var Scenarios = []Scenario{
	{Name: "01FirstRun", Test: firstRun},
	{Name: "02Recompute", Test: recompute},
	{Name: "03PrintOnce", Body: []string{`x = 6; print("computing x")`, "y = foo(x, 5)", "z = y + 5"}, Test: printOnce},
	{Name: "04Edits", Test: edits},
	{Name: "05LocalCall", Test: localCall},
	{Name: "06Panic", Body: []string{"x = 1/0", "y = foo(x, 5)", "z = y + 5", "w = 3"}, Test: panicEndsTheFrame},
	{Name: "07UndefinedName", Body: []string{"x = 6", "y = fooo(x, 5)", "z = y + 5"}, Test: undefinedName},
	{Name: "08Visualization", Body: []string{`x = 6; print("x ran")`, "y = foo(x, 5)", "z = y + 5"}, Test: visualization},
	{Name: "09VisualizationRaises", Test: visualizationRaises},
	{Name: "10ExecuteExpression", Test: executeExpression},
	{Name: "11Interrupt", Body: []string{"x = 6", "import time; time.sleep(30); y = foo(x, 5)", "z = x + 1"}, Test: interrupt},
	{Name: "12SyntaxError", Test: syntaxError},
	{Name: "13MutationChain", Body: []string{"xs = []", "xs.append(1)", "n = len(xs)"}, Test: mutationChain},
}

func expect(t testing.TB, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// idList is an invalidatedExpressions naming ids.
func idList(ids ...protocol.ExpressionID) *protocol.InvalidatedExpressions {
	return &protocol.InvalidatedExpressions{IDs: ids}
}

func firstRun(t testing.TB, d Driver) {
	_, run := d.NewContext("main:main")
	if run.Failed != nil {
		t.Fatalf("run failed: %+v", run.Failed)
	}
	// The expressions that were Pending, in the order first said. The
	// Pending a run starts with and a statement's "running" mark (8.4)
	// coalesce into one update when one flush holds both; when a flush
	// falls between them (a slow machine) the statement is named twice.
	var pending []string
	for _, u := range run.Updates {
		if u.Payload.Type == protocol.PayloadPending && !slices.Contains(pending, string(u.ExpressionID)) {
			pending = append(pending, string(u.ExpressionID))
		}
	}
	expect(t, "pending", pending, []string{"main:main/x", "main:main/y", "main:main/z"})
	v := run.Updates.Values()
	expect(t, "values", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"6", "30", "35"})
	for _, id := range []string{"main:main/x", "main:main/y", "main:main/z"} {
		u := run.Updates.Latest(id)
		if u.FromCache {
			t.Errorf("%s fromCache on the first run", id)
		}
		if u.Type != "builtins.int" {
			t.Errorf("%s type %q", id, u.Type)
		}
		if len(u.ProfilingInfo) != 1 || u.ProfilingInfo[0].Type != "ExecutionTime" {
			t.Errorf("%s profilingInfo %+v", id, u.ProfilingInfo)
		}
		if u.Range == nil {
			t.Errorf("%s has no range", id)
		}
	}
	if mc := run.Updates.Latest("main:main/y").MethodCall; mc == nil || mc.MethodPointer.String() != "helper:foo" {
		t.Errorf("y methodCall = %+v, want helper:foo", mc)
	}
	if mc := run.Updates.Latest("main:main/x").MethodCall; mc != nil {
		t.Errorf("x has a methodCall %+v", mc)
	}
}

func recompute(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	d.Recompute(protocol.RecomputeParams{ContextID: id})
	run := d.WaitRun(id)
	if run.Failed != nil || len(run.Updates) != 0 {
		t.Errorf("recompute with nothing invalidated: failed=%v updates=%d, want complete and none", run.Failed, len(run.Updates))
	}

	d.Recompute(protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()})
	run = d.WaitRun(id)
	expect(t, "recompute all computed", run.Updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	if len(run.Updates) == 0 || run.Updates[0].Payload.Type != protocol.PayloadPending {
		t.Errorf("recompute all: first update %+v, want Pending", run.Updates)
	}

	d.Recompute(protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: idList("main:main/z")})
	run = d.WaitRun(id)
	expect(t, "recompute [z] computed", run.Updates.Computed(), []string{"main:main/z"})
}

func printOnce(t testing.TB, d Driver) {
	id, run := d.NewContext("main:main")
	// `x = 6; print(...)` is two statements on one line: x and #1.
	if !strings.Contains(run.Output, "computing x") {
		t.Fatalf("first run output %q, want the print", run.Output)
	}
	d.Recompute(protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: idList("main:main/z")})
	run = d.WaitRun(id)
	if strings.Contains(run.Output, "computing x") {
		t.Errorf("recompute of z printed again: %q", run.Output)
	}
	expect(t, "computed", run.Updates.Computed(), []string{"main:main/z"})
}

func edits(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	d.SetText("main.py", MainWith("x = 7", "y = foo(x, 5)", "z = y + 5"))
	run := d.WaitRun(id)
	expect(t, "computed after x edit", run.Updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	v := run.Updates.Values()
	expect(t, "values", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"7", "35", "40"})

	d.SetText("main.py", MainWith("x = 7", "y = foo(x, 5)", "z = y + 6"))
	run = d.WaitRun(id)
	expect(t, "computed after z edit", run.Updates.Computed(), []string{"main:main/z"})
	expect(t, "z", run.Updates.Values()["main:main/z"], "41")
}

func localCall(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	d.Push(protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")})
	run := d.WaitRun(id)
	v := run.Updates.Values()
	expect(t, "c", v["helper:foo/c"], "30")
	expect(t, "return", v["helper:foo/return"], "30")
	for _, u := range run.Updates {
		if strings.HasPrefix(string(u.ExpressionID), "main:main/") {
			t.Errorf("caller update sent while inside foo: %+v", u)
		}
	}

	d.SetText("helper.py", "def foo(a, b):\n    c = a * b + 1\n    return c\n")
	run = d.WaitRun(id)
	expect(t, "c after edit", run.Updates.Values()["helper:foo/c"], "31")
	expect(t, "computed in foo", run.Updates.Computed(), []string{"helper:foo/c", "helper:foo/return"})

	d.Pop(id)
	run = d.WaitRun(id)
	// The resend comes first, all fromCache; the caller is up to date.
	if len(run.Methods) == 0 || run.Methods[0] != protocol.NotifyExpressionUpdates {
		t.Fatalf("pop: first notification %v, want the resend (%s)", run.Methods, protocol.NotifyExpressionUpdates)
	}
	for _, u := range run.Batches[0] {
		if !u.FromCache {
			t.Errorf("pop resend %s not fromCache", u.ExpressionID)
		}
	}
	v = run.Updates.Values()
	expect(t, "y after pop", v["main:main/y"], "31")
	expect(t, "z after pop", v["main:main/z"], "36")
}

// panicEndsTheFrame: a statement that raises ends the frame's run, as in
// Python (PROTOCOL.md 8.1): the statements after it, independent ones
// included, are not reached, naming it; the run completes.
func panicEndsTheFrame(t testing.TB, d Driver) {
	id, run := d.NewContext("main:main")
	if run.Failed != nil {
		t.Fatalf("a Panic must not fail the run: %+v", run.Failed)
	}
	x := run.Updates.Latest("main:main/x")
	if x.Payload.Type != protocol.PayloadPanic || x.Payload.Message != "ZeroDivisionError: division by zero" {
		t.Fatalf("x = %+v", x.Payload)
	}
	expect(t, "x trace", x.Payload.Trace, []string{"main:main/x"})
	for _, after := range []string{"main:main/y", "main:main/z", "main:main/w"} {
		expectNotReached(t, run.Updates.Latest(after), protocol.ReasonException, "main:main/x")
	}
	diags := run.Diagnostics()
	if len(diags) == 0 || len(diags[0].Stack) == 0 {
		t.Errorf("no executionStatus diagnostic with a traceback: %+v", diags)
	}
	sawDiag := false
	for _, s := range run.Status {
		if len(s.Diagnostics) > 0 && strings.Contains(s.Diagnostics[0].Message, "ZeroDivisionError") {
			sawDiag = len(s.Diagnostics[0].Stack) > 0
		}
	}
	if !sawDiag {
		t.Error("no executionStatus diagnostic with a traceback for the Panic")
	}
	d.SetText("main.py", MainWith("x = 6", "y = foo(x, 5)", "z = y + 5", "w = 3"))
	run = d.WaitRun(id)
	v := run.Updates.Values()
	expect(t, "fixed", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"6", "30", "35"})
}

// expectNotReached checks that u is not reached, for the reason kind
// with origin (PROTOCOL.md 8.1).
func expectNotReached(t testing.TB, u *protocol.ExpressionUpdate, kind string, origin protocol.ExpressionID) {
	t.Helper()
	if u == nil || !u.Payload.IsNotReached() || u.Payload.Reason == nil ||
		u.Payload.Reason.Kind != kind || u.Payload.Reason.ExpressionID != origin {
		t.Errorf("%+v, want not reached, %s at %s", u, kind, origin)
	}
}

func undefinedName(t testing.TB, d Driver) {
	_, run := d.NewContext("main:main")
	y := run.Updates.Latest("main:main/y")
	if y.Payload.Type != protocol.PayloadPanic || !strings.Contains(y.Payload.Message, "NameError") {
		t.Fatalf("y = %+v", y.Payload)
	}
	expectNotReached(t, run.Updates.Latest("main:main/z"), protocol.ReasonException, "main:main/y")
	// The first diagnostic sent and the last notification's both point
	// at y.
	var last *protocol.Diagnostic
	for _, s := range run.Status {
		if len(s.Diagnostics) > 0 {
			last = &s.Diagnostics[0]
		}
	}
	diags := run.Diagnostics()
	if len(diags) == 0 {
		t.Fatal("no diagnostic")
	}
	for _, diag := range []*protocol.Diagnostic{&diags[0], last} {
		if diag.Location == nil {
			t.Fatalf("no diagnostic with a location: %+v", diag)
		}
		if diag.Location.Start.Line != 5 { // line 6 of main.py, 0-based
			t.Errorf("diagnostic at line %d, want 5 (y)", diag.Location.Start.Line)
		}
		if diag.Path != "main.py" {
			t.Errorf("diagnostic path %q", diag.Path)
		}
	}
}

func visualization(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	vid := protocol.NewVisualizationID()
	d.AttachVisualization(protocol.AttachVisualizationParams{
		VisualizationID: vid, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v * 2"}})
	run := d.WaitRun(id)
	expect(t, "data", run.VisData, []string{"12"})
	if strings.Contains(run.Output, "x ran") || slices.Contains(run.Updates.Computed(), "main:main/x") {
		t.Errorf("attach re-ran x: output %q computed %v", run.Output, run.Updates.Computed())
	}

	d.SetText("main.py", MainWith(`x = 7; print("x ran")`, "y = foo(x, 5)", "z = y + 5"))
	run = d.WaitRun(id)
	expect(t, "data after x edit", run.VisData, []string{"14"})

	d.SetText("main.py", MainWith(`x = 7; print("x ran")`, "y = foo(x, 5)", "z = y + 6"))
	run = d.WaitRun(id)
	if len(run.VisData) != 0 {
		t.Errorf("an edit of z sent visualization data %v", run.VisData)
	}

	d.DetachVisualization(protocol.DetachVisualizationParams{ExecutionContextID: id, VisualizationID: vid, ExpressionID: "main:main/x"})
	d.Recompute(protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()})
	run = d.WaitRun(id)
	if len(run.VisData) != 0 {
		t.Errorf("detached visualization sent %v", run.VisData)
	}
}

func visualizationRaises(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	d.AttachVisualization(protocol.AttachVisualizationParams{
		VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:main/y",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v / 0"}})
	run := d.WaitRun(id)
	if run.Failed != nil {
		t.Fatalf("context failed: %+v", run.Failed)
	}
	if len(run.VisFailed) != 1 || !strings.Contains(run.VisFailed[0], "ZeroDivisionError") {
		t.Errorf("visualizationEvaluationFailed = %v", run.VisFailed)
	}
}

func executeExpression(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	d.ExecuteExpression(protocol.ExecuteExpressionParams{ExecutionContextID: id,
		VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:main/z", Expression: "x + y"})
	run := d.WaitRun(id)
	expect(t, "data", run.VisData, []string{"36"})
	// Gone: a recompute of everything sends no more data.
	d.Recompute(protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()})
	run = d.WaitRun(id)
	if len(run.VisData) != 0 {
		t.Errorf("executeExpression sent data again: %v", run.VisData)
	}
}

func interrupt(t testing.TB, d Driver) {
	id := d.StartContext("main:main")
	// x has its value: the run is in the sleep.
	d.WaitValue(id, "main:main/x")
	d.Interrupt(id)
	run := d.WaitRun(id)
	if run.Failed == nil || run.Failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("run ended %+v, want interrupted", run.Failed)
	}
	// Next run: x stays cached, the sleeping statement runs again (its
	// value was never cached). Replace the sleep so the run ends.
	d.SetText("main.py", MainWith("x = 6", "import time; time.sleep(0); y = foo(x, 5)", "z = x + 1"))
	run = d.WaitRun(id)
	computed := run.Updates.Computed()
	if slices.Contains(computed, "main:main/x") {
		t.Errorf("x recomputed after the interrupt: %v", computed)
	}
	// #1 is `import time`, #2 the sleep: a call through a module does not
	// re-run its import (issue 27), the interrupted sleep runs again.
	if !slices.Contains(computed, "main:main/#2") {
		t.Errorf("the interrupted statement was not run again: %v", computed)
	}
	expect(t, "y", run.Updates.Values()["main:main/y"], "30")
}

func syntaxError(t testing.TB, d Driver) {
	id, _ := d.NewContext("main:main")
	d.SetText("main.py", MainWith("x = 6", "y = foo(x, 5", "z = y + 5"))
	run := d.WaitRun(id)
	if run.Failed == nil || run.Failed.Kind != protocol.ResultCompileError {
		t.Fatalf("run ended %+v, want compileError", run.Failed)
	}
	diag := run.Failed.Diagnostic
	if diag == nil || diag.Location == nil || diag.Path != "main.py" {
		t.Fatalf("compileError diagnostic %+v, want main.py with a location", diag)
	}
	if diag.Location.Start.Line < 5 || diag.Location.Start.Line > 6 {
		t.Errorf("syntax error reported at line %d", diag.Location.Start.Line)
	}
	d.SetText("main.py", MainWith("x = 6", "y = foo(x, 5)", "z = y + 5"))
	run = d.WaitRun(id)
	if run.Failed != nil {
		t.Fatalf("after the fix: %+v", run.Failed)
	}
	d.Recompute(protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()})
	run = d.WaitRun(id)
	expect(t, "z", run.Updates.Values()["main:main/z"], "35")
}

func mutationChain(t testing.TB, d Driver) {
	id, run := d.NewContext("main:main")
	expect(t, "n", run.Updates.Values()["main:main/n"], "1")
	d.SetText("main.py", MainWith("xs = []", "xs.append(2)", "n = len(xs)"))
	run = d.WaitRun(id)
	expect(t, "n after the edit", run.Updates.Values()["main:main/n"], "1")
	// xs is shown by a visualization of its current value.
	d.ExecuteExpression(protocol.ExecuteExpressionParams{ExecutionContextID: id,
		VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:main/n", Expression: "xs"})
	run = d.WaitRun(id)
	expect(t, "data", run.VisData, []string{"[2]"})
	if len(run.VisData) != 1 {
		t.Fatalf("data %v", run.VisData)
	}
	var xs []int
	if err := json.Unmarshal([]byte(run.VisData[0]), &xs); err != nil {
		t.Fatal(err)
	}
	expect(t, "xs", xs, []int{2})
}
