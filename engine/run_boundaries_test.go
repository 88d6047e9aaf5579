package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// An explicit recompute whose run an edit stops at a statement boundary
// does not run the recomputed statement again: the kernel dropped its
// cache entry before running it, so only what the stopped run did not
// reach is still to do, and the kernel knows that by itself.
func TestBoundaryStopDoesNotRepeatARecompute(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	write(t, filepath.Dir(gate), "gate", "")
	h := setup(t, map[string]string{
		"main.py": "import os, time, util\n\ndef work():\n    print('WORK', flush=True)\n" +
			"    while not os.path.exists(" + quote(gate) + "):\n        time.sleep(0.02)\n    return 1\n\n" +
			"def main():\n    x = work()\n    y = util.f()\n",
		"util.py": "def f():\n    return 1\n",
	}, engine.Config{Kernels: 1})
	id, run := h.newContext("main:main")
	if run.failed != nil || strings.Count(run.output, "WORK") != 1 {
		t.Fatalf("first run: %+v, output %q", run.failed, run.output)
	}
	must(t, os.Remove(gate))
	m := h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/x"}}}))
	h.client.waitFrom(t, m, "work running again", func(n note) bool {
		p, ok := n.Params.(protocol.OutputParams)
		return ok && strings.Contains(p.Text, "WORK")
	})
	h.setText("util.py", "def f():\n    return 2\n")
	write(t, filepath.Dir(gate), "gate", "")
	out := h.client.outputUntilValue(t, m, id, "main:main/y", "2")
	if n := strings.Count(out, "WORK"); n != 1 {
		t.Fatalf("the recomputed statement ran %d times after the recompute, want 1: output %q", n, out)
	}
}

// A run that ends before the call that queued it has returned leaves its
// context idle, not "queued": apply writes queued before the queue has the
// Execute (engine.go, the status invariant). The hook lets the run end
// right after the queue took it, the window where the order mattered.
func TestFastRunIsNotLeftQueued(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 1\n"}, engine.Config{Kernels: 1})
	res, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	id := res.ContextID
	mp, err := protocol.ParseMethodPointer("main:main")
	must(t, err)
	m := h.client.mark()
	ended := make(chan bool, 1)
	engine.SetAfterEnqueue(h.e, func() { ended <- h.client.ended(m, id) })
	must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(mp)}))
	if !<-ended {
		t.Fatal("the run did not end while the push's apply waited")
	}
	if run := h.client.waitRun(t, m, id); run.failed != nil {
		t.Fatalf("run: %+v", run.failed)
	}
	st, err := h.e.ContextStatus(id)
	must(t, err)
	if st != contexts.StatusIdle {
		t.Fatalf("status after the run ended: %q, want %q", st, contexts.StatusIdle)
	}
}

// ended waits (up to a minute: a bound against a hang, not a timing
// assertion) for the end of a run of id after mark; false if none came.
func (r *recorder) ended(from int, id protocol.ContextID) bool {
	end := isEnd(id)
	return testenv.Poll(time.Now().Add(time.Minute), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.ContainsFunc(r.notes[from:], end)
	})
}

// An unknown expression id is 2008 also while the context's first run is
// running (its frame's ids are read from the source, not from what the
// run reported), and a known one is accepted then.
func TestUnknownExpressionIDIs2008WhileTheFirstRunRuns(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	h := setup(t, map[string]string{
		"main.py": "import os, time\n\ndef work():\n    print('WORK', flush=True)\n" +
			"    while not os.path.exists(" + quote(gate) + "):\n        time.sleep(0.02)\n    return 1\n\n" +
			"def main():\n    x = work()\n    y = x + 1\n",
	}, engine.Config{Kernels: 1})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "work running", func(n note) bool {
		p, ok := n.Params.(protocol.OutputParams)
		return ok && strings.Contains(p.Text, "WORK")
	})
	recompute := func(x protocol.ExpressionID) error {
		return h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
			InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{x}}})
	}
	for name, call := range map[string]func() error{
		"recompute": func() error { return recompute("main:main/nosuch") },
		"attachVisualization": func() error {
			return h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v1", ExpressionID: "main:main/nosuch",
				VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}})
		},
	} {
		pe := engine.ProtocolError(call())
		if pe == nil || pe.Code != protocol.CodeExpressionNotFound || !strings.Contains(pe.Message, "main:main/nosuch") {
			t.Errorf("%s of an unknown id while the first run runs: %v, want 2008 naming it", name, pe)
		}
	}
	m = h.client.mark()
	must(t, recompute("main:main/y"))
	write(t, filepath.Dir(gate), "gate", "")
	for {
		run := h.client.waitRun(t, m, id)
		if run.failed != nil {
			t.Fatalf("run: %+v", run.failed)
		}
		if run.updates.Values()["main:main/y"] == "2" {
			break
		}
		m = h.client.mark()
	}
}

// An edit of the module holding the running frame's code interrupts the
// running statement only when it changes what the statement runs
// (DESIGN.md "Edit a file"). An edit of another function of the module
// lets it finish (its print not repeated) and the run goes on with the new
// code; an edit of the function it calls interrupts it (the compile
// timeout is far away: only the check can do it).
func TestEditOfTheFramesModuleInterruptsOnlyWhatItChanges(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	src := func(other, work string) string {
		return "import os, time\n\ndef work():\n    print('WORK', flush=True)\n" + work +
			"    return 1\n\ndef other():\n    return " + other + "\n\ndef main():\n    x = work()\n    y = other()\n"
	}
	wait := "    while not os.path.exists(" + quote(gate) + "):\n        time.sleep(0.02)\n"
	h := setup(t, map[string]string{"main.py": src("1", wait)}, engine.Config{Kernels: 1, CompileTimeout: 10 * time.Minute})
	id, m := h.startContext("main:main")
	working := func(from int) {
		h.client.waitFrom(t, from, "work running", func(n note) bool {
			p, ok := n.Params.(protocol.OutputParams)
			return ok && strings.Contains(p.Text, "WORK")
		})
	}
	working(m)
	m = h.client.mark()
	h.setText("main.py", src("2", wait))
	write(t, filepath.Dir(gate), "gate", "")
	out := h.client.outputUntilValue(t, m, id, "main:main/y", "2")
	if strings.Contains(out, "WORK") {
		t.Fatalf("an edit of another function repeated the running statement: output %q", out)
	}

	// Now the running statement's callee changes: interrupted, re-run.
	must(t, os.Remove(gate))
	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/x"}}}))
	working(m)
	m = h.client.mark()
	h.setText("main.py", strings.Replace(src("2", ""), "return 1", "return 7", 1))
	for {
		run := h.client.waitRun(t, m, id)
		if run.failed != nil && run.failed.Kind != protocol.ResultInterrupted {
			t.Fatalf("run: %+v", run.failed)
		}
		if run.updates.Values()["main:main/x"] == "7" {
			break
		}
		m = h.client.mark()
	}
}
