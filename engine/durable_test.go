package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// TestStateLogRestoresStacks: with a state log, a context's stack as
// pushes and pops left it (a LocalCall into helper:foo on top of main) comes
// back in a second engine on the same project, as do its owner and
// visualization; a destroyed context and one popped to an empty stack
// after being destroyed do not.
func TestStateLogRestoresStacks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper})
	l, _, err := durable.Open(filepath.Join(dir, ".ripple"), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()

	e1 := enginetest.Start(t, dir, engine.Config{StateLog: l})
	rec := newRecorder()
	must(t, firstErr(e1.Connect(ctx, clientID, rec)))
	h := &harness{t: t, e: e1, dir: dir, client: rec, ctx: ctx}
	id, _ := h.newContext("main:main")
	// push, pop, push: the log keeps the last.
	m := rec.mark()
	must(t, e1.Push(ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")}))
	rec.waitRun(t, m, id)
	must(t, e1.Pop(ctx, clientID, id))
	m = rec.mark()
	must(t, e1.Push(ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")}))
	rec.waitRun(t, m, id)
	vid := protocol.NewVisualizationID()
	must(t, e1.AttachVisualization(ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: vid, ExpressionID: "helper:foo/c",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v + 1000"}}))
	gone, _ := h.newContext("main:main")
	must(t, e1.DestroyContext(ctx, clientID, gone))
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, e1.Stop(sctx))

	st, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st[engine.KindContext]) != 1 {
		t.Fatalf("log holds %d contexts, want 1: %v", len(st[engine.KindContext]), st[engine.KindContext])
	}
	e2 := enginetest.Start(t, dir, engine.Config{StateLog: l})
	restored, err := e2.RestoreContexts(st)
	if err != nil || len(restored) != 1 || restored[0] != id {
		t.Fatalf("restored %v, %v; want [%s]", restored, err, id)
	}
	if _, err := e2.ContextStatus(gone); err == nil {
		t.Errorf("destroyed context %s came back", gone)
	}
	rec2 := newRecorder()
	must(t, firstErr(e2.Connect(ctx, clientID, rec2)))
	// The top frame is foo's again: an edit of foo sends foo's new values
	// and the visualization of c (the restored run may end first, so read
	// up to three runs).
	h2 := &harness{t: t, e: e2, dir: dir, client: rec2, ctx: ctx}
	m = rec2.mark()
	h2.setText("helper.py", "def foo(a, b):\n    c = a * b + 1\n    return c\n")
	var vis []string
	var c string
	for i := 0; i < 3 && c != "31"; i++ {
		run := rec2.waitRun(t, m, id)
		m += len(run.notes)
		c = run.updates.Values()["helper:foo/c"]
		if _, ok := run.updates.Values()["main:main/y"]; ok {
			t.Fatalf("main's values sent: the stack was not restored: %v", run.updates.Values())
		}
		for _, n := range run.notes {
			if p, ok := n.Params.(protocol.VisualizationUpdateParams); ok && p.VisualizationContext.VisualizationID == vid {
				vis = append(vis, string(p.Data))
			}
		}
	}
	expect(t, "c", c, "31")
	// The restored run's own update (1030) may be among them.
	if len(vis) == 0 || vis[len(vis)-1] != "1031" || (len(vis) == 2 && vis[0] != "1030") || len(vis) > 2 {
		t.Errorf("visualization updates %v, want [1031] or [1030 1031]", vis)
	}
}

func firstErr[T any](_ T, err error) error { return err }
