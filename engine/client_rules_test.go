package engine_test

// What a client is told, by PROTOCOL.md 7.6's rules: error codes of
// unknown expression ids, diagnostics cleared by a clean run, another
// client's call subscribing it, a failing modify keeping the old
// visualization, an imported module's syntax error at its own file, and a
// pop to a frame whose function an edit changed.

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Unknown expression ids in recompute, attachVisualization,
// modifyVisualization and executeExpression get 2008 once the frame's
// expressions are known (PROTOCOL.md 7.6).
func TestUnknownExpressionIDsAre2008(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 1\n    y = x + 1\n"}, engine.Config{Kernels: 1})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	m := h.client.mark()
	must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v1", ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}}))
	h.client.waitRun(t, m, id)
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"recompute", func() error {
			return h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
				InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/nosuch"}}})
		}},
		{"attachVisualization", func() error {
			return h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v2", ExpressionID: "main:main/nosuch",
				VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}})
		}},
		{"executeExpression", func() error {
			return h.e.ExecuteExpression(h.ctx, clientID, protocol.ExecuteExpressionParams{VisualizationID: "v3", ExpressionID: "main:main/nosuch",
				ExecutionContextID: id, Expression: "lambda v: v"})
		}},
	} {
		pe := engine.ProtocolError(c.call())
		if pe == nil || pe.Code != protocol.CodeExpressionNotFound || !strings.Contains(pe.Message, "main:main/nosuch") {
			t.Errorf("%s of an unknown expression: %v, want 2008 naming it", c.name, pe)
		}
	}
	// A known id still works.
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/y"}}}))
	if run := h.client.waitRun(t, m, id); run.failed != nil {
		t.Fatalf("recompute of y: %+v", run.failed)
	}
}

// A run without diagnostics after one with some sends an empty
// executionStatus, which clears the client's problems (PROTOCOL.md 7.6).
func TestCleanRunClearsDiagnostics(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 1\n"}, engine.Config{Kernels: 1})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("main.py", "def main():\n    x = 1 / 0\n")
	run := h.client.waitRun(t, m, id)
	if got := statuses(run.notes); len(got) == 0 || got[len(got)-1] == 0 {
		t.Fatalf("failing run sent executionStatus %v, want diagnostics", got)
	}
	m = h.client.mark()
	h.setText("main.py", "def main():\n    x = 2\n")
	run = h.client.waitRun(t, m, id)
	if got := statuses(run.notes); len(got) != 1 || got[0] != 0 {
		t.Fatalf("clean run after a failing one sent executionStatus %v, want one empty", got)
	}
	m = h.client.mark()
	h.setText("main.py", "def main():\n    x = 3\n")
	run = h.client.waitRun(t, m, id)
	if got := statuses(run.notes); len(got) != 0 {
		t.Fatalf("clean run after a clean one sent executionStatus %v, want none", got)
	}
}

// The diagnostics the client shows stay to be cleared across a run that
// an edit superseded: a failing run (its exception ends it, PROTOCOL.md
// 8.1), then a run without diagnostics that an edit supersedes, then a
// clean run, which clears them (the LSP server's problems stayed up when
// the count started afresh at a superseded run).
func TestCleanRunClearsASupersededRunsDiagnostics(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 1\n"}, engine.Config{Kernels: 1})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("main.py", "import time\n\ndef main():\n    x = 1 / 0\n")
	if got := statuses(h.client.waitRun(t, m, id).notes); len(got) == 0 || got[len(got)-1] == 0 {
		t.Fatalf("failing run sent executionStatus %v, want diagnostics", got)
	}
	m = h.client.mark()
	h.setText("main.py", "import time\n\ndef main():\n    x = 1\n    time.sleep(60)\n")
	h.client.waitFrom(t, m, "x computed: the run sleeps", hasValue(id, "main:main/x"))
	m = h.client.mark()
	h.setText("main.py", "import time\n\ndef main():\n    x = 2\n")
	run := h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("the clean run failed: %+v", run.failed)
	}
	if got := statuses(run.notes); len(got) != 1 || got[0] != 0 {
		t.Fatalf("clean run after a superseded one, after a failing one, sent executionStatus %v, want one empty", got)
	}
}

// statuses lists the number of diagnostics of each executionStatus.
func statuses(notes []note) []int {
	var out []int
	for _, n := range notes {
		if p, ok := n.Params.(protocol.ExecutionStatusParams); ok {
			out = append(out, len(p.Diagnostics))
		}
	}
	return out
}

// Another client's call on a context makes it a subscriber: it receives
// the context's notifications from then on (PROTOCOL.md 7.6).
func TestCallOnAnotherClientsContextSubscribes(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 1\n"}, engine.Config{Kernels: 1})
	id, _ := h.newContext("main:main")
	web := newRecorder()
	if _, err := h.e.Connect(h.ctx, "web", web); err != nil {
		t.Fatal(err)
	}
	must(t, h.e.Recompute(h.ctx, "web", protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run := web.waitRun(t, 0, id)
	if run.failed != nil || run.updates.Values()["main:main/x"] != "1" {
		t.Fatalf("the subscriber's view of the run: %+v %v", run.failed, run.updates.Values())
	}
	// The creator still gets them too.
	m := h.client.mark()
	h.setText("main.py", "def main():\n    x = 5\n")
	if run := h.client.waitRun(t, m, id); run.updates.Values()["main:main/x"] != "5" {
		t.Fatalf("the creator's view after the edit: %v", run.updates.Values())
	}
}

// A modifyVisualization whose new expression fails leaves the old one in
// force: the next run sends the old expression's data.
func TestFailingModifyKeepsTheOldVisualization(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 6\n"}, engine.Config{Kernels: 1})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v1", ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v * 2"}}))
	run := h.client.waitRun(t, m, id)
	if data, _ := visualizations(run.notes); len(data) != 1 || data[0] != "12" {
		t.Fatalf("attach sent %v, want [12]", data)
	}
	m = h.client.mark()
	must(t, h.e.ModifyVisualization(h.ctx, clientID, protocol.ModifyVisualizationParams{VisualizationID: "v1",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v / 0"}}))
	run = h.client.waitRun(t, m, id)
	if _, failed := visualizations(run.notes); len(failed) != 1 {
		t.Fatalf("the failing modify reported %v, want one failure", failed)
	}
	m = h.client.mark()
	h.setText("main.py", "def main():\n    x = 7\n")
	run = h.client.waitRun(t, m, id)
	if data, failed := visualizations(run.notes); len(data) != 1 || data[0] != "14" || len(failed) != 0 {
		t.Fatalf("after the edit: data %v failures %v, want the old expression's [14]", data, failed)
	}
}

// An imported module's syntax error is reported at its own file and line,
// with the import chain as the stack (PROTOCOL.md 5.1).
func TestImportedSyntaxErrorAtItsOwnFile(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		"main.py": "import util\n\ndef main():\n    v = util.V\n",
		"util.py": "V = 1\n",
	}, engine.Config{Kernels: 1})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("util.py", "V = 1\nW = (\n")
	run := h.client.waitRun(t, m, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultCompileError || run.failed.Diagnostic == nil {
		t.Fatalf("run: %+v, want a compileError with a diagnostic", run.failed)
	}
	d := run.failed.Diagnostic
	if d.Path != "util.py" || d.Location == nil || d.Location.Start.Line != 1 {
		t.Fatalf("diagnostic at %s %+v, want util.py line 2 (0-based 1)", d.Path, d.Location)
	}
	found := false
	for _, f := range d.Stack {
		if f.Path == "main.py" && f.Location != nil && f.Location.Start.Line == 0 {
			found = true
		}
	}
	if !found {
		t.Fatalf("stack %+v does not hold main.py's import line", d.Stack)
	}
}

// An edit can make the statement a LocalCall frame entered call another
// function (an inserted a = h0(...) takes the label main:main/a from
// a = h3(...)); the frame then runs that function, in a fresh engine as
// here. Popping back to it sends only that function's updates: the old
// function's, still stored for the frame, would follow them and leave
// the client showing h3 for a frame that runs h0 (the invariant test's
// seed 6032).
func TestPopToRetargetedFrameSendsItsFunctionOnly(t *testing.T) {
	t.Parallel()
	helpers := "def h0(a, b):\n    t = a * 4\n    return t + b\n\n\ndef h3(a):\n    v = h0(a, 3)\n    return v + 1\n"
	main := "from helpers import h0, h3\n\n\ndef main():\n    c = 2\n    a = h3(c)\n"
	h := setup(t, map[string]string{"helpers.py": helpers, "main.py": main}, engine.Config{Kernels: 1})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	for _, expr := range []protocol.ExpressionID{"main:main/a", "helpers:h3/v"} {
		m := h.client.mark()
		must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall(expr)}))
		if run := h.client.waitRun(t, m, id); run.failed != nil {
			t.Fatalf("push %s: %+v", expr, run.failed)
		}
	}
	m := h.client.mark()
	h.setText("main.py", "from helpers import h0, h3\n\n\ndef main():\n    c = 2\n    a = h0(c, 1)\n    a = h3(c)\n")
	// helpers:h3/v is no statement of h0, the function main:main/a calls now.
	if run := h.client.waitRun(t, m, id); run.failed == nil || run.failed.Kind != protocol.ResultFailure {
		t.Fatalf("run after the edit: %+v, want a failure", run.failed)
	}
	waitIdle(t, h.e)
	m = h.client.mark()
	must(t, h.e.Pop(h.ctx, clientID, id))
	run = h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("run after the pop: %+v", run.failed)
	}
	got := map[protocol.ExpressionID]string{}
	for _, u := range run.updates {
		if !strings.HasPrefix(string(u.ExpressionID), "helpers:h0/") {
			t.Errorf("after the pop: an update of %s, want only helpers:h0's", u.ExpressionID)
		}
		got[u.ExpressionID] = u.Payload.Preview
	}
	expect(t, "values after the pop", got, map[protocol.ExpressionID]string{"helpers:h0/t": "8", "helpers:h0/return": "9"})
}
