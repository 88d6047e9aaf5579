package engine_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// The acceptance scenarios of issue 4, driven through the engine's Go API
// against a real kernel. Each starts from these files.
const scenarioMain = `from helper import foo


def main():
    x = 6
    y = foo(x, 5)
    z = y + 5
    return z
`

const scenarioHelper = enginetest.ScenarioHelper

// mainWith is main.py with main's body made of the given statements.
func mainWith(body ...string) string { return enginetest.MainWith(body...) }

var baseBody = enginetest.ScenarioBody

func scenario(t *testing.T, body ...string) (*harness, protocol.ContextID, *runResult) {
	t.Helper()
	if body == nil {
		body = baseBody
	}
	h := setup(t, map[string]string{"main.py": mainWith(body...), "helper.py": scenarioHelper}, engine.Config{})
	id, run := h.newContext("main:main")
	return h, id, run
}

func TestScenario01FirstRun(t *testing.T) {
	t.Parallel()
	_, _, run := scenario(t)
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	var pending []string
	for _, u := range run.updates {
		if u.Payload.Type == protocol.PayloadPending {
			pending = append(pending, string(u.ExpressionID))
		}
	}
	expect(t, "pending", pending, []string{"main:main/x", "main:main/y", "main:main/z"})
	v := run.updates.Values()
	expect(t, "x", v["main:main/x"], "6")
	expect(t, "y", v["main:main/y"], "30")
	expect(t, "z", v["main:main/z"], "35")
	for _, id := range []string{"main:main/x", "main:main/y", "main:main/z"} {
		u := run.updates.Latest(id)
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
	if mc := run.updates.Latest("main:main/y").MethodCall; mc == nil || mc.MethodPointer.String() != "helper:foo" {
		t.Errorf("y methodCall = %+v, want helper:foo", mc)
	}
	if mc := run.updates.Latest("main:main/x").MethodCall; mc != nil {
		t.Errorf("x has a methodCall %+v", mc)
	}
}

func TestScenario02Recompute(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)

	m := h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id}))
	run := h.client.waitRun(t, m, id)
	if run.failed != nil || len(run.updates) != 0 {
		t.Errorf("recompute with nothing invalidated: failed=%v updates=%d, want complete and none", run.failed, len(run.updates))
	}

	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run = h.client.waitRun(t, m, id)
	expect(t, "recompute all computed", run.updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	if run.updates[0].Payload.Type != protocol.PayloadPending {
		t.Errorf("recompute all: first update %+v, want Pending", run.updates[0])
	}

	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/z"}}}))
	run = h.client.waitRun(t, m, id)
	expect(t, "recompute [z] computed", run.updates.Computed(), []string{"main:main/z"})
}

func TestScenario03PrintOnce(t *testing.T) {
	t.Parallel()
	h, id, run := scenario(t, `x = 6; print("computing x")`, "y = foo(x, 5)", "z = y + 5")
	// `x = 6; print(...)` is two statements on one line: x and #1.
	if !strings.Contains(run.output, "computing x") {
		t.Fatalf("first run output %q, want the print", run.output)
	}
	m := h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/z"}}}))
	run = h.client.waitRun(t, m, id)
	if strings.Contains(run.output, "computing x") {
		t.Errorf("recompute of z printed again: %q", run.output)
	}
	expect(t, "computed", run.updates.Computed(), []string{"main:main/z"})
}

func TestScenario04Edits(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	m := h.client.mark()
	h.setText("main.py", mainWith("x = 7", "y = foo(x, 5)", "z = y + 5"))
	run := h.client.waitRun(t, m, id)
	expect(t, "computed after x edit", run.updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	v := run.updates.Values()
	expect(t, "values", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"7", "35", "40"})

	m = h.client.mark()
	h.setText("main.py", mainWith("x = 7", "y = foo(x, 5)", "z = y + 6"))
	run = h.client.waitRun(t, m, id)
	expect(t, "computed after z edit", run.updates.Computed(), []string{"main:main/z"})
	expect(t, "z", run.updates.Values()["main:main/z"], "41")
}

func TestScenario05LocalCall(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	m := h.client.mark()
	must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")}))
	run := h.client.waitRun(t, m, id)
	v := run.updates.Values()
	expect(t, "c", v["helper:foo/c"], "30")
	expect(t, "return", v["helper:foo/return"], "30")
	for _, u := range run.updates {
		if strings.HasPrefix(string(u.ExpressionID), "main:main/") {
			t.Errorf("caller update sent while inside foo: %+v", u)
		}
	}

	m = h.client.mark()
	h.setText("helper.py", "def foo(a, b):\n    c = a * b + 1\n    return c\n")
	run = h.client.waitRun(t, m, id)
	expect(t, "c after edit", run.updates.Values()["helper:foo/c"], "31")
	expect(t, "computed in foo", run.updates.Computed(), []string{"helper:foo/c", "helper:foo/return"})

	m = h.client.mark()
	must(t, h.e.Pop(h.ctx, clientID, id))
	run = h.client.waitRun(t, m, id)
	// The resend comes first, all fromCache; the caller is up to date.
	first := run.notes[0].Params.(protocol.ExpressionUpdatesParams)
	for _, u := range first.Updates {
		if !u.FromCache {
			t.Errorf("pop resend %s not fromCache", u.ExpressionID)
		}
	}
	v = run.updates.Values()
	expect(t, "y after pop", v["main:main/y"], "31")
	expect(t, "z after pop", v["main:main/z"], "36")
}

func TestScenario06Panic(t *testing.T) {
	t.Parallel()
	h, id, run := scenario(t, "x = 1/0", "y = foo(x, 5)", "z = y + 5", "w = 3")
	if run.failed != nil {
		t.Fatalf("a Panic must not fail the run: %+v", run.failed)
	}
	x := run.updates.Latest("main:main/x")
	if x.Payload.Type != protocol.PayloadPanic || x.Payload.Message != "ZeroDivisionError: division by zero" {
		t.Fatalf("x = %+v", x.Payload)
	}
	expect(t, "x trace", x.Payload.Trace, []string{"main:main/x"})
	for _, dep := range []string{"main:main/y", "main:main/z"} {
		u := run.updates.Latest(dep)
		if u.Payload.Type != protocol.PayloadPanic || u.Payload.Message != x.Payload.Message {
			t.Errorf("%s = %+v, want the same Panic", dep, u.Payload)
		}
		expect(t, dep+" trace", u.Payload.Trace, []string{"main:main/x"})
	}
	expect(t, "w", run.updates.Values()["main:main/w"], "3")
	sawDiag := false
	for _, n := range run.notes {
		if p, ok := n.Params.(protocol.ExecutionStatusParams); ok && len(p.Diagnostics) > 0 && strings.Contains(p.Diagnostics[0].Message, "ZeroDivisionError") {
			sawDiag = len(p.Diagnostics[0].Stack) > 0
		}
	}
	if !sawDiag {
		t.Error("no executionStatus diagnostic with a traceback for the Panic")
	}
	m := h.client.mark()
	h.setText("main.py", mainWith("x = 6", "y = foo(x, 5)", "z = y + 5", "w = 3"))
	run = h.client.waitRun(t, m, id)
	v := run.updates.Values()
	expect(t, "fixed", []string{v["main:main/x"], v["main:main/y"], v["main:main/z"]}, []string{"6", "30", "35"})
}

func TestScenario07UndefinedName(t *testing.T) {
	t.Parallel()
	_, _, run := scenario(t, "x = 6", "y = fooo(x, 5)", "z = y + 5")
	y := run.updates.Latest("main:main/y")
	if y.Payload.Type != protocol.PayloadPanic || !strings.Contains(y.Payload.Message, "NameError") {
		t.Fatalf("y = %+v", y.Payload)
	}
	if z := run.updates.Latest("main:main/z"); z.Payload.Type != protocol.PayloadPanic {
		t.Errorf("z = %+v, want Panic", z.Payload)
	}
	var diag *protocol.Diagnostic
	for _, n := range run.notes {
		if p, ok := n.Params.(protocol.ExecutionStatusParams); ok && len(p.Diagnostics) > 0 {
			diag = &p.Diagnostics[0]
		}
	}
	if diag == nil || diag.Location == nil {
		t.Fatalf("no diagnostic with a location: %+v", diag)
	}
	if diag.Location.Start.Line != 5 { // line 6 of main.py, 0-based
		t.Errorf("diagnostic at line %d, want 5 (y)", diag.Location.Start.Line)
	}
	if diag.Path != "main.py" {
		t.Errorf("diagnostic path %q", diag.Path)
	}
}

// visualizations returns the visualization data and failures in notes.
func visualizations(notes []note) (data []string, failed []string) {
	for _, n := range notes {
		switch p := n.Params.(type) {
		case protocol.VisualizationUpdateParams:
			data = append(data, string(p.Data))
		case protocol.VisualizationEvaluationFailedParams:
			failed = append(failed, p.Message)
		}
	}
	return
}

func TestScenario08Visualization(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t, `x = 6; print("x ran")`, "y = foo(x, 5)", "z = y + 5")
	vid := protocol.VisualizationID(protocol.NewContextID())
	m := h.client.mark()
	must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{
		VisualizationID: vid, ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v * 2"}}))
	notes := h.client.waitFrom(t, m, "visualization data", func(n note) bool {
		_, ok := n.Params.(protocol.VisualizationUpdateParams)
		return ok
	})
	data, _ := visualizations(notes)
	expect(t, "data", data, []string{"12"})
	run := h.client.waitRun(t, m, id)
	if strings.Contains(run.output, "x ran") || slices.Contains(run.updates.Computed(), "main:main/x") {
		t.Errorf("attach re-ran x: output %q computed %v", run.output, run.updates.Computed())
	}

	m = h.client.mark()
	h.setText("main.py", mainWith(`x = 7; print("x ran")`, "y = foo(x, 5)", "z = y + 5"))
	run = h.client.waitRun(t, m, id)
	data, _ = visualizations(run.notes)
	expect(t, "data after x edit", data, []string{"14"})

	m = h.client.mark()
	h.setText("main.py", mainWith(`x = 7; print("x ran")`, "y = foo(x, 5)", "z = y + 6"))
	run = h.client.waitRun(t, m, id)
	data, _ = visualizations(run.notes)
	if len(data) != 0 {
		t.Errorf("an edit of z sent visualization data %v", data)
	}

	must(t, h.e.DetachVisualization(h.ctx, clientID, protocol.DetachVisualizationParams{ExecutionContextID: id, VisualizationID: vid, ExpressionID: "main:main/x"}))
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run = h.client.waitRun(t, m, id)
	if data, _ = visualizations(run.notes); len(data) != 0 {
		t.Errorf("detached visualization sent %v", data)
	}
}

func TestScenario09VisualizationRaises(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	m := h.client.mark()
	must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{
		VisualizationID: protocol.VisualizationID(protocol.NewContextID()), ExpressionID: "main:main/y",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v / 0"}}))
	run := h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("context failed: %+v", run.failed)
	}
	_, failed := visualizations(run.notes)
	if len(failed) != 1 || !strings.Contains(failed[0], "ZeroDivisionError") {
		t.Errorf("visualizationEvaluationFailed = %v", failed)
	}
}

func TestScenario10ExecuteExpression(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	m := h.client.mark()
	must(t, h.e.ExecuteExpression(h.ctx, clientID, protocol.ExecuteExpressionParams{ExecutionContextID: id,
		VisualizationID: protocol.VisualizationID(protocol.NewContextID()), ExpressionID: "main:main/z", Expression: "x + y"}))
	run := h.client.waitRun(t, m, id)
	data, _ := visualizations(run.notes)
	expect(t, "data", data, []string{"36"})
	// Gone: a recompute of everything sends no more data.
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run = h.client.waitRun(t, m, id)
	if data, _ = visualizations(run.notes); len(data) != 0 {
		t.Errorf("executeExpression sent data again: %v", data)
	}
}

func TestScenario11Interrupt(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": mainWith("x = 6", "import time; time.sleep(30); y = foo(x, 5)", "z = x + 1"),
		"helper.py": scenarioHelper}, engine.Config{})
	id, m := h.startContext("main:main")
	// Wait until x has its value: the run is in the sleep.
	h.client.waitFrom(t, m, "x computed", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == "main:main/x" && u.Payload.Type == protocol.PayloadValue
		})
	})
	must(t, h.e.Interrupt(h.ctx, clientID, id))
	run := h.client.waitRun(t, m, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("run ended %+v, want interrupted", run.failed)
	}
	// Next run: x stays cached, the sleeping statement runs again (its
	// value was never cached). Replace the sleep so the run ends.
	m = h.client.mark()
	h.setText("main.py", mainWith("x = 6", "import time; time.sleep(0); y = foo(x, 5)", "z = x + 1"))
	run = h.client.waitRun(t, m, id)
	computed := run.updates.Computed()
	if slices.Contains(computed, "main:main/x") {
		t.Errorf("x recomputed after the interrupt: %v", computed)
	}
	if !slices.Contains(computed, "main:main/#1") {
		t.Errorf("the interrupted statement was not run again: %v", computed)
	}
	expect(t, "y", run.updates.Values()["main:main/y"], "30")
}

func TestScenario12SyntaxError(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	m := h.client.mark()
	h.setText("main.py", mainWith("x = 6", "y = foo(x, 5", "z = y + 5"))
	run := h.client.waitRun(t, m, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultCompileError {
		t.Fatalf("run ended %+v, want compileError", run.failed)
	}
	d := run.failed.Diagnostic
	if d == nil || d.Location == nil || d.Path != "main.py" {
		t.Fatalf("compileError diagnostic %+v, want main.py with a location", d)
	}
	if d.Location.Start.Line < 5 || d.Location.Start.Line > 6 {
		t.Errorf("syntax error reported at line %d", d.Location.Start.Line)
	}
	m = h.client.mark()
	h.setText("main.py", mainWith("x = 6", "y = foo(x, 5)", "z = y + 5"))
	run = h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("after the fix: %+v", run.failed)
	}
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run = h.client.waitRun(t, m, id)
	expect(t, "z", run.updates.Values()["main:main/z"], "35")
}

func TestScenario13MutationChain(t *testing.T) {
	t.Parallel()
	h, id, run := scenario(t, "xs = []", "xs.append(1)", "n = len(xs)")
	expect(t, "n", run.updates.Values()["main:main/n"], "1")
	m := h.client.mark()
	h.setText("main.py", mainWith("xs = []", "xs.append(2)", "n = len(xs)"))
	run = h.client.waitRun(t, m, id)
	expect(t, "n", run.updates.Values()["main:main/n"], "1")
	// xs is shown by a visualization of its current value.
	m = h.client.mark()
	must(t, h.e.ExecuteExpression(h.ctx, clientID, protocol.ExecuteExpressionParams{ExecutionContextID: id,
		VisualizationID: protocol.VisualizationID(protocol.NewContextID()), ExpressionID: "main:main/n", Expression: "xs"}))
	run = h.client.waitRun(t, m, id)
	data, _ := visualizations(run.notes)
	if len(data) != 1 {
		t.Fatalf("data %v", data)
	}
	var xs []int
	must(t, json.Unmarshal([]byte(data[0]), &xs))
	expect(t, "xs", xs, []int{2})
}

// An edit made with execute:false is compiled by the next recompute,
// although the recompute itself names only the bottom frame's module.
func TestDeferredEditRunsOnRecompute(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	_, v := h.openFile("helper.py")
	text := "def foo(a, b):\n    c = a * b * 10\n    return c\n"
	m := h.client.mark()
	must(t, h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Execute: false, Edit: protocol.FileEdit{
		Path: "helper.py", Edits: []protocol.TextEdit{{Range: protocol.Range{End: endOf(scenarioHelper)}, Text: text}},
		OldVersion: v, NewVersion: versionOf(text)}}))
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id}))
	run := h.client.waitRun(t, m, id)
	expect(t, "y", run.updates.Values()["main:main/y"], "300")
}

// A visualization of a label the function does not have is refused with
// 2008 naming it (PROTOCOL.md 7.6) once the frame's expressions are known.
func TestVisualizationOfUnknownExpression(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	err := h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{
		VisualizationID: protocol.VisualizationID(protocol.NewContextID()), ExpressionID: "main:main/nope",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}})
	if pe := engine.ProtocolError(err); pe == nil || pe.Code != protocol.CodeExpressionNotFound || !strings.Contains(pe.Message, "main:main/nope") {
		t.Errorf("attach of main:main/nope: %v, want 2008 naming it", err)
	}
}

// file/event reports the engine's own writes too (PROTOCOL.md 4: "from any
// source"): file/write of a new and an existing file, text/save, delete.
func TestFileEventsForOwnWrites(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper, "data/a.txt": "a"}, engine.Config{})
	events := func(from int) []string {
		var out []string
		h.client.mu.Lock()
		defer h.client.mu.Unlock()
		for _, n := range h.client.notes[from:] {
			if p, ok := n.Params.(protocol.FileEventParams); ok {
				out = append(out, string(p.Kind)+" "+string(p.Path))
			}
		}
		return out
	}
	m := h.client.mark()
	must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "notes.txt", Contents: "hi"}))
	must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "notes.txt", Contents: "hi again"}))
	h.setText("helper.py", "def foo(a, b):\n    return a\n")
	_, v := h.openFile("helper.py")
	must(t, h.e.SaveFile(h.ctx, clientID, protocol.SaveParams{Path: "helper.py", CurrentVersion: v}))
	must(t, h.e.DeleteFile(h.ctx, clientID, "data"))
	expect(t, "file events", events(m), []string{"Added notes.txt", "Modified notes.txt", "Modified helper.py", "Removed data/a.txt"})
}
