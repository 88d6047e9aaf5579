package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Scripts as frames (PROTOCOL.md 7.1) through the engine's Go API, with a
// real kernel: main:__main__ runs main.py's top level statement by
// statement, caching as a function frame does.

const scriptMain = `import helper
from helper import foo

data = [1, 2, 3]
total = sum(data)
print("total is", total)
y = foo(total, 2)
def scale(v):
    w = v * factor
    return w
factor = 10
z = scale(y)
if __name__ == "__main__":
    print("as a script")
`

func TestScriptFrame(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": scriptMain, "helper.py": scenarioHelper}, engine.Config{})
	id, run := h.newContext("main:__main__")
	if run.failed != nil {
		t.Fatalf("script run failed: %+v", run.failed)
	}
	v := run.updates.Values()
	expect(t, "total", v["main:__main__/total"], "6")
	expect(t, "y", v["main:__main__/y"], "12")
	expect(t, "z", v["main:__main__/z"], "120")
	for _, label := range []string{"helper", "foo", "data", "scale", "#1", "#2"} {
		if _, ok := v["main:__main__/"+label]; !ok {
			t.Errorf("no update for main:__main__/%s; got %v", label, v)
		}
	}
	if strings.Count(run.output, "total is 6") != 1 || !strings.Contains(run.output, "as a script") {
		t.Errorf("output %q: want the script's prints once, the __main__ block run", run.output)
	}

	// An edit of one line re-runs it and what depends on it only.
	m := h.client.mark()
	h.setText("main.py", strings.Replace(scriptMain, "factor = 10", "factor = 100", 1))
	run = h.client.waitRun(t, m, id)
	expect(t, "computed after the factor edit", run.updates.Computed(), []string{"main:__main__/factor", "main:__main__/z"})
	expect(t, "z after the edit", run.updates.Values()["main:__main__/z"], "1200")
	if strings.Contains(run.output, "total is") {
		t.Errorf("an edit of factor printed the cached statement's output again: %q", run.output)
	}

	// An edit of the imported module re-runs its import and the readers.
	m = h.client.mark()
	h.setText("helper.py", "def foo(a, b):\n    c = a * b + 1\n    return c\n")
	run = h.client.waitRun(t, m, id)
	expect(t, "computed after the helper edit", run.updates.Computed(),
		[]string{"main:__main__/helper", "main:__main__/foo", "main:__main__/y", "main:__main__/z"})
	expect(t, "y after the helper edit", run.updates.Values()["main:__main__/y"], "13")

	// LocalCall from the script into a project function.
	m = h.client.mark()
	must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:__main__/y")}))
	run = h.client.waitRun(t, m, id)
	expect(t, "helper:foo/c", run.updates.Values()["helper:foo/c"], "13")
	m = h.client.mark()
	must(t, h.e.Pop(h.ctx, clientID, id))
	h.client.waitRun(t, m, id)

	// And into a function the script itself defines.
	m = h.client.mark()
	must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:__main__/z")}))
	run = h.client.waitRun(t, m, id)
	if run.failed != nil {
		t.Fatalf("LocalCall into scale failed: %+v", run.failed)
	}
	expect(t, "main:scale/w", run.updates.Values()["main:scale/w"], "1300")
}

func TestScriptFrameRefusesArguments(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "x = 1\n"}, engine.Config{})
	res, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	err = h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: res.ContextID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "__main__"}, "1")})
	if !errors.Is(err, engine.ErrInvalidStackItem) || !strings.Contains(err.Error(), "takes no arguments") {
		t.Fatalf("push of main:__main__ with an argument: %v, want ErrInvalidStackItem saying it takes none", err)
	}
}

func TestScriptSyntaxErrorIsACompileError(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "x = (\n"}, engine.Config{})
	_, run := h.newContext("main:__main__")
	if run.failed == nil || run.failed.Kind != "compileError" {
		t.Fatalf("run of a script with a syntax error: %+v, want compileError", run.failed)
	}
}
