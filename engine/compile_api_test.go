package engine_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// waitForFile is a statement body that blocks until a file exists (no
// timing involved: the test creates the file when it is ready).
func waitForFile(path string) string {
	return "import os, time\n    while not os.path.exists(" + quote(path) + "): time.sleep(0.01)\n"
}

func quote(s string) string { return "'" + s + "'" }

// A push of a module compiled ahead with Compile starts beside a running
// entry; without Compile its EnsureCompiled would wait for that run to end.
func TestCompileAheadLetsPushesRunBesideRunningEntries(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	h := setup(t, map[string]string{
		"a.py": "def main():\n    " + waitForFile(release) + "    x = 1\n",
		"b.py": "def main():\n    y = 2\n",
	}, engine.Config{Kernels: 2})
	must(t, h.e.Compile(h.ctx, []string{"a", "b"}))

	idA, markA := h.startContext("a:main")
	// a is running once its first statement (the import) has a value.
	h.client.waitFrom(t, markA, "a running", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == idA && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.Payload.Type == protocol.PayloadValue
		})
	})
	_, runB := h.newContext("b:main")
	if runB.failed != nil {
		t.Fatalf("b failed: %+v", runB.failed)
	}
	expect(t, "b's y", runB.updates.Values()["b:main/y"], "2")
	// a is still running: b did not wait for it.
	m := h.client.mark()
	write(t, filepath.Dir(release), "release", "")
	runA := h.client.waitRun(t, m, idA)
	if runA.failed != nil || runA.updates.Values()["a:main/x"] != "1" {
		t.Fatalf("a ended %+v with %v", runA.failed, runA.updates.Values())
	}
}

func TestCompileRefusesUnknownModule(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"a.py": "def main():\n    x = 1\n"}, engine.Config{})
	err := h.e.Compile(h.ctx, []string{"a", "nosuch"})
	if !errors.Is(err, engine.ErrModuleNotFound) {
		t.Fatalf("Compile(nosuch) = %v, want ErrModuleNotFound", err)
	}
}
