package tests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// The 13 acceptance scenarios of issue 4, driven over the wire: a real
// server, the real engine, a real kernel, a WebSocket client. Each starts
// from main.py (main: x = 6; y = foo(x, 5); z = y + 5) and helper.py
// (foo: c = a * b; return c).

const scenarioHelper = enginetest.ScenarioHelper

func mainWith(body ...string) string { return enginetest.MainWith(body...) }

var baseBody = enginetest.ScenarioBody

// scenario serves the scenario project, connects a client and runs
// main:main once.
func scenario(t *testing.T, body ...string) (*client, protocol.ContextID, *run) {
	t.Helper()
	if body == nil {
		body = baseBody
	}
	s := serveProject(t, map[string]string{"main.py": mainWith(body...), "helper.py": scenarioHelper}, engine.Config{})
	c, _ := connect(t, s.url, "ide")
	id, r := c.newContext("main:main")
	return c, id, r
}

func TestWireScenario01FirstRun(t *testing.T) {
	t.Parallel()
	_, _, r := scenario(t)
	if r.failed != nil {
		t.Fatalf("run failed: %+v", r.failed)
	}
	var pending []string
	for _, u := range r.updates {
		if u.Payload.Type == protocol.PayloadPending {
			pending = append(pending, string(u.ExpressionID))
		}
	}
	expect(t, "pending", pending, []string{"main:main/x", "main:main/y", "main:main/z"})
	v := r.updates.Values()
	expect(t, "values", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"6", "30", "35"})
	for _, id := range []string{"main:main/x", "main:main/y", "main:main/z"} {
		u := r.updates.Latest(id)
		if u.FromCache || u.Type != "builtins.int" || len(u.ProfilingInfo) != 1 || u.Range == nil {
			t.Errorf("%s: %+v", id, u)
		}
	}
	if mc := r.updates.Latest("main:main/y").MethodCall; mc == nil || mc.MethodPointer.String() != "helper:foo" {
		t.Errorf("y methodCall %+v, want helper:foo", mc)
	}
}

func TestWireScenario02Recompute(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t)
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id}, nil)
	r := c.waitRun(id)
	if r.failed != nil || len(r.updates) != 0 {
		t.Errorf("recompute of nothing: failed %v, %d updates", r.failed, len(r.updates))
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	r = c.waitRun(id)
	expect(t, "recompute all", r.updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	if len(r.updates) == 0 || r.updates[0].Payload.Type != protocol.PayloadPending {
		t.Errorf("recompute all: first update is not Pending")
	}
	// The wire form of a list of ids.
	if err := c.c.WriteRaw([]byte(`{"jsonrpc":"2.0","id":"rz","method":"executionContext/recompute","params":{"contextId":"` + string(id) + `","invalidatedExpressions":["main:main/z"]}}`)); err != nil {
		t.Fatal(err)
	}
	r = c.waitRun(id)
	expect(t, "recompute [z]", r.updates.Computed(), []string{"main:main/z"})
}

func TestWireScenario03PrintOnce(t *testing.T) {
	t.Parallel()
	c, id, r := scenario(t, `x = 6; print("computing x")`, "y = foo(x, 5)", "z = y + 5")
	if !strings.Contains(r.output, "computing x") {
		t.Fatalf("first run output %q", r.output)
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/z"}}}, nil)
	r = c.waitRun(id)
	if strings.Contains(r.output, "computing x") {
		t.Errorf("printed again: %q", r.output)
	}
}

func TestWireScenario04Edits(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t)
	c.setText("main.py", mainWith("x = 7", "y = foo(x, 5)", "z = y + 5"))
	r := c.waitRun(id)
	expect(t, "computed", r.updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	v := r.updates.Values()
	expect(t, "values", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"7", "35", "40"})
	c.setText("main.py", mainWith("x = 7", "y = foo(x, 5)", "z = y + 6"))
	r = c.waitRun(id)
	expect(t, "computed after the z edit", r.updates.Computed(), []string{"main:main/z"})
	expect(t, "z", r.updates.Values()["main:main/z"], "41")
}

func TestWireScenario05LocalCall(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t)
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")}, nil)
	r := c.waitRun(id)
	v := r.updates.Values()
	expect(t, "foo", []string{v["helper:foo/c"], v["helper:foo/return"]}, []string{"30", "30"})
	c.setText("helper.py", "def foo(a, b):\n    c = a * b + 1\n    return c\n")
	r = c.waitRun(id)
	expect(t, "c after the edit", r.updates.Values()["helper:foo/c"], "31")
	c.call(protocol.MethodPop, protocol.PopParams{ContextID: id}, nil)
	r = c.waitRun(id)
	var first protocol.ExpressionUpdatesParams
	for _, m := range r.messages {
		if m.Method == protocol.NotifyExpressionUpdates {
			mustDecode(t, m.Params, &first)
			break
		}
	}
	for _, u := range first.Updates {
		if !u.FromCache {
			t.Errorf("pop resend: %s not fromCache", u.ExpressionID)
		}
	}
	v = r.updates.Values()
	expect(t, "after pop", []string{v["main:main/y"], v["main:main/z"]}, []string{"31", "36"})
}

func TestWireScenario06Panic(t *testing.T) {
	t.Parallel()
	c, id, r := scenario(t, "x = 1/0", "y = foo(x, 5)", "z = y + 5", "w = 3")
	if r.failed != nil {
		t.Fatalf("run failed: %+v", r.failed)
	}
	x := r.updates.Latest("main:main/x")
	if x.Payload.Type != protocol.PayloadPanic || x.Payload.Message != "ZeroDivisionError: division by zero" {
		t.Fatalf("x = %+v", x.Payload)
	}
	for _, dep := range []string{"main:main/y", "main:main/z"} {
		u := r.updates.Latest(dep)
		if u.Payload.Type != protocol.PayloadPanic || !slices.Equal(u.Payload.Trace, []protocol.ExpressionID{"main:main/x"}) {
			t.Errorf("%s = %+v", dep, u.Payload)
		}
	}
	expect(t, "w", r.updates.Values()["main:main/w"], "3")
	if len(r.status) == 0 || len(r.status[0].Stack) == 0 {
		t.Errorf("no executionStatus diagnostic with a traceback: %+v", r.status)
	}
	c.setText("main.py", mainWith("x = 6", "y = foo(x, 5)", "z = y + 5", "w = 3"))
	r = c.waitRun(id)
	v := r.updates.Values()
	expect(t, "fixed", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"6", "30", "35"})
}

func TestWireScenario07UndefinedName(t *testing.T) {
	t.Parallel()
	_, _, r := scenario(t, "x = 6", "y = fooo(x, 5)", "z = y + 5")
	if y := r.updates.Latest("main:main/y"); y.Payload.Type != protocol.PayloadPanic || !strings.Contains(y.Payload.Message, "NameError") {
		t.Fatalf("y = %+v", y.Payload)
	}
	if z := r.updates.Latest("main:main/z"); z.Payload.Type != protocol.PayloadPanic {
		t.Errorf("z = %+v", z.Payload)
	}
	if len(r.status) == 0 || r.status[0].Location == nil || r.status[0].Location.Start.Line != 5 || r.status[0].Path != "main.py" {
		t.Fatalf("diagnostic %+v, want main.py line 5", r.status)
	}
}

func TestWireScenario08Visualization(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t, `x = 6; print("x ran")`, "y = foo(x, 5)", "z = y + 5")
	vid := protocol.NewVisualizationID()
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: vid, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v * 2"}}, nil)
	r := c.waitRun(id)
	expect(t, "data", r.visData, []string{"12"})
	if strings.Contains(r.output, "x ran") || slices.Contains(r.updates.Computed(), "main:main/x") {
		t.Errorf("attach re-ran x: %q %v", r.output, r.updates.Computed())
	}
	c.setText("main.py", mainWith(`x = 7; print("x ran")`, "y = foo(x, 5)", "z = y + 5"))
	r = c.waitRun(id)
	expect(t, "data after the x edit", r.visData, []string{"14"})
	c.setText("main.py", mainWith(`x = 7; print("x ran")`, "y = foo(x, 5)", "z = y + 6"))
	r = c.waitRun(id)
	if len(r.visData) != 0 {
		t.Errorf("an edit of z sent data %v", r.visData)
	}
	c.call(protocol.MethodDetachVisualization, protocol.DetachVisualizationParams{ExecutionContextID: id, VisualizationID: vid, ExpressionID: "main:main/x"}, nil)
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	r = c.waitRun(id)
	if len(r.visData) != 0 {
		t.Errorf("detached visualization sent %v", r.visData)
	}
}

func TestWireScenario09VisualizationRaises(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t)
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:main/y",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v / 0"}}, nil)
	r := c.waitRun(id)
	if r.failed != nil {
		t.Fatalf("context failed: %+v", r.failed)
	}
	if len(r.visFail) != 1 || !strings.Contains(r.visFail[0], "ZeroDivisionError") {
		t.Errorf("visualizationEvaluationFailed %v", r.visFail)
	}
}

func TestWireScenario10ExecuteExpression(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t)
	c.call(protocol.MethodExecuteExpression, protocol.ExecuteExpressionParams{ExecutionContextID: id,
		VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:main/z", Expression: "x + y"}, nil)
	r := c.waitRun(id)
	expect(t, "data", r.visData, []string{"36"})
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	if r = c.waitRun(id); len(r.visData) != 0 {
		t.Errorf("executeExpression sent data again: %v", r.visData)
	}
}

func TestWireScenario11Interrupt(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"main.py": mainWith("x = 6", "import time; time.sleep(30); y = foo(x, 5)", "z = x + 1"),
		"helper.py": scenarioHelper}, engine.Config{})
	c, _ := connect(t, s.url, "ide")
	var res protocol.CreateContextResult
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
	id := res.ContextID
	c.call(protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil)
	// x has its value: the run is in the sleep.
	c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var p protocol.ExpressionUpdatesParams
		_ = json.Unmarshal(raw, &p)
		return slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == "main:main/x" && u.Payload.Type == protocol.PayloadValue
		})
	})
	c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: id}, nil)
	r := c.waitRun(id)
	if r.failed == nil || r.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("run ended %+v, want interrupted", r.failed)
	}
	c.setText("main.py", mainWith("x = 6", "import time; time.sleep(0); y = foo(x, 5)", "z = x + 1"))
	r = c.waitRun(id)
	if slices.Contains(r.updates.Computed(), "main:main/x") {
		t.Errorf("x recomputed after the interrupt: %v", r.updates.Computed())
	}
	expect(t, "y", r.updates.Values()["main:main/y"], "30")
}

func TestWireScenario12SyntaxError(t *testing.T) {
	t.Parallel()
	c, id, _ := scenario(t)
	c.setText("main.py", mainWith("x = 6", "y = foo(x, 5", "z = y + 5"))
	r := c.waitRun(id)
	if r.failed == nil || r.failed.Kind != protocol.ResultCompileError {
		t.Fatalf("run ended %+v, want compileError", r.failed)
	}
	if d := r.failed.Diagnostic; d == nil || d.Location == nil || d.Path != "main.py" {
		t.Fatalf("diagnostic %+v", d)
	}
	c.setText("main.py", mainWith("x = 6", "y = foo(x, 5)", "z = y + 5"))
	if r = c.waitRun(id); r.failed != nil {
		t.Fatalf("after the fix: %+v", r.failed)
	}
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	expect(t, "z", c.waitRun(id).updates.Values()["main:main/z"], "35")
}

func TestWireScenario13MutationChain(t *testing.T) {
	t.Parallel()
	c, id, r := scenario(t, "xs = []", "xs.append(1)", "n = len(xs)")
	expect(t, "n", r.updates.Values()["main:main/n"], "1")
	c.setText("main.py", mainWith("xs = []", "xs.append(2)", "n = len(xs)"))
	expect(t, "n after the edit", c.waitRun(id).updates.Values()["main:main/n"], "1")
	c.call(protocol.MethodExecuteExpression, protocol.ExecuteExpressionParams{ExecutionContextID: id,
		VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:main/n", Expression: "xs"}, nil)
	r = c.waitRun(id)
	expect(t, "xs", r.visData, []string{"[2]"})
}
