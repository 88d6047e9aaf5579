package engine_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// An edit of a module the context imports, but not of the code of its
// frames, does not interrupt the running statement: the run stops after
// it (its value cached, its print not repeated) and the run the edit
// queued goes on from there with the new code.
func TestEditStopsARunAtTheNextStatementBoundary(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	h := setup(t, map[string]string{
		"main.py": "import os, time, util\n\ndef work():\n    print('WORK', flush=True)\n" +
			"    while not os.path.exists(" + quote(release) + "):\n        time.sleep(0.02)\n    return 1\n\n" +
			"def main():\n    x = work()\n    y = util.f()\n",
		"util.py": "def f():\n    return 1\n",
	}, engine.Config{Kernels: 1})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "work running", func(n note) bool {
		p, ok := n.Params.(protocol.OutputParams)
		return ok && strings.Contains(p.Text, "WORK")
	})
	m = h.client.mark()
	h.setText("util.py", "def f():\n    return 2\n")
	write(t, filepath.Dir(release), "release", "")
	out := h.client.outputUntilValue(t, m, id, "main:main/y", "2")
	if strings.Contains(out, "WORK") {
		t.Fatalf("the edit repeated the running statement: output %q", out)
	}
}

// A statement stuck in the old code of an edited module (a loop being
// fixed there) is interrupted after all when it does not reach its
// boundary within the compile timeout, and the fix runs.
func TestEditInterruptsAStatementThatDoesNotReachItsBoundary(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		"main.py": "import util\n\ndef main():\n    x = util.spin()\n",
		"util.py": "import time\n\ndef spin():\n    while True:\n        time.sleep(0.02)\n",
	}, engine.Config{Kernels: 1, CompileTimeout: time.Second})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "spin running", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id && len(p.Updates) > 0
	})
	m = h.client.mark()
	h.setText("util.py", "def spin():\n    return 5\n")
	for {
		run := h.client.waitRun(t, m, id)
		if run.failed != nil {
			t.Fatalf("run: %+v", run.failed)
		}
		if run.updates.Values()["main:main/x"] == "5" {
			break
		}
		m = h.client.mark()
	}
}
