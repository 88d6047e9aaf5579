package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// compileErrorAt waits for the run of id after mark to fail with a
// compileError whose diagnostic is at path and mentions want.
func compileErrorAt(t *testing.T, h *harness, mark int, id protocol.ContextID, path, want string) {
	t.Helper()
	run := h.client.waitRun(t, mark, id)
	if run.failed == nil || run.failed.Kind != protocol.ResultCompileError {
		t.Fatalf("run of %s: %+v, want a compileError", id, run.failed)
	}
	d := run.failed.Diagnostic
	if d == nil || d.Path != path || !strings.Contains(d.Message, want) {
		t.Fatalf("compileError diagnostic %+v, want one at %s mentioning %q", d, path, want)
	}
}

// A module nobody runs is not imported, also after it changes: saving a
// top level that would hang or kill the kernel does nothing.
func TestUnusedModuleIsNotImported(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		"main.py":   "def main():\n    v = 1\n",
		"unused.py": "X = 1\n",
	}, engine.Config{Kernels: 1})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	h.setText("unused.py", "import os\nos._exit(7)\n")
	m := h.client.mark()
	h.setText("main.py", "def main():\n    v = 2\n")
	run = h.client.waitRun(t, m, id)
	if run.failed != nil || run.updates.Values()["main:main/v"] != "2" {
		t.Fatalf("run after the edits: %+v %v", run.failed, run.updates)
	}
	if n := h.client.count(0, protocol.NotifyKernelRestarted); n != 0 {
		t.Fatalf("%d kernel restarts, want none", n)
	}
}

// A module whose top level hangs is cut at the compile timeout and
// reported as that module's compile error, at its own file; the kernel
// survives (the other context's values stay); fixing it recovers.
func TestHangingTopLevelIsACompileError(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		"main.py":   "import helper\n\ndef main():\n    v = helper.V\n",
		"helper.py": "V = 1\n",
		"other.py":  "def main():\n    w = 5\n",
	}, engine.Config{Kernels: 1, CompileTimeout: 500 * time.Millisecond})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	other, run := h.newContext("other:main")
	if run.failed != nil {
		t.Fatalf("other's first run: %+v", run.failed)
	}
	m := h.client.mark()
	h.setText("helper.py", "import time\nwhile True:\n    time.sleep(0.05)\n")
	compileErrorAt(t, h, m, id, "helper.py", "compile timeout")
	m = h.client.mark()
	h.setText("helper.py", "V = 3\n")
	run = h.client.waitRun(t, m, id)
	if run.failed != nil || run.updates.Values()["main:main/v"] != "3" {
		t.Fatalf("run after the fix: %+v %v", run.failed, run.updates)
	}
	if n := h.client.count(0, protocol.NotifyKernelRestarted); n != 0 {
		t.Fatalf("%d kernel restarts, want none", n)
	}
	_ = other
}

// A module whose import kills the kernel is reported as its compile error
// and kept out of service until it changes: one restart, no loop.
func TestKillingTopLevelIsQuarantined(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		"main.py":   "import helper\n\ndef main():\n    v = helper.V\n",
		"helper.py": "V = 1\n",
	}, engine.Config{Kernels: 1})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	m := h.client.mark()
	h.setText("helper.py", "import os\nos._exit(7)\n")
	h.client.waitFrom(t, m, "a compileError naming the kill", func(n note) bool {
		p, ok := n.Params.(protocol.ExecutionFailedParams)
		return ok && p.ContextID == id && p.Result.Kind == protocol.ResultCompileError &&
			p.Result.Diagnostic != nil && p.Result.Diagnostic.Path == "helper.py" &&
			strings.Contains(p.Result.Diagnostic.Message, "killed the kernel")
	})
	// Recompute: the module stays out of service, nothing restarts again.
	m2 := h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id}))
	compileErrorAt(t, h, m2, id, "helper.py", "killed the kernel")
	m3 := h.client.mark()
	h.setText("helper.py", "V = 4\n")
	run = h.client.waitRun(t, m3, id)
	if run.failed != nil || run.updates.Values()["main:main/v"] != "4" {
		t.Fatalf("run after the fix: %+v %v", run.failed, run.updates)
	}
	if restarts := h.client.count(m, protocol.NotifyKernelRestarted); restarts != 1 {
		t.Fatalf("%d kernel restarts, want 1 (the kill itself)", restarts)
	}
}

// count counts the notifications of method from index from on.
func (r *recorder) count(from int, method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.notes[from:] {
		if x.Method == method {
			n++
		}
	}
	return n
}

// A module cut at the compile timeout stays out of service until it
// changes: an edit elsewhere that re-runs its importer does not run its
// top level again (each start appends a line to a file).
func TestTimedOutModuleIsNotImportedAgain(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	h := setup(t, map[string]string{
		"main.py":   "import helper\n\ndef main():\n    v = helper.V\n",
		"helper.py": "V = 1\n",
	}, engine.Config{Kernels: 1, CompileTimeout: 500 * time.Millisecond})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	m := h.client.mark()
	h.setText("helper.py", "import time\nopen("+quote(starts)+", 'a').write('start\\n')\nwhile True:\n    time.sleep(0.05)\n")
	compileErrorAt(t, h, m, id, "helper.py", "compile timeout")
	m = h.client.mark()
	h.setText("main.py", "import helper\n\ndef main():\n    v = helper.V\n    w = 2\n")
	compileErrorAt(t, h, m, id, "helper.py", "compile timeout")
	data, err := os.ReadFile(starts)
	must(t, err)
	if n := strings.Count(string(data), "start"); n != 1 {
		t.Fatalf("the hanging top level started %d times, want 1", n)
	}
}

// restartKernel is answered with 5001 when the kernel is not back within
// RestartTimeout (here its new kernel is still importing a top level that
// takes longer), and the slot still comes back afterwards.
func TestRestartKernelAnswers5001WhenTheKernelDoesNotComeBack(t *testing.T) {
	t.Parallel()
	release := filepath.Join(t.TempDir(), "release")
	h := setup(t, map[string]string{
		"main.py": "import helper\n\ndef main():\n    v = helper.V\n",
		"helper.py": "import os, time\nwhile os.path.exists(" + quote(release+".hold") + ") and not os.path.exists(" + quote(release) + "):\n" +
			"    time.sleep(0.02)\nV = 1\n",
	}, engine.Config{Kernels: 1, RestartTimeout: 300 * time.Millisecond})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %+v", run.failed)
	}
	write(t, filepath.Dir(release), filepath.Base(release)+".hold", "") // the next import of helper waits
	err := h.e.RestartKernel(h.ctx, clientID, id)
	pe := engine.ProtocolError(err)
	if pe == nil || pe.Code != protocol.CodeKernelUnavailable {
		t.Fatalf("restartKernel while the new kernel cannot get ready: %v, want 5001", err)
	}
	m := h.client.mark()
	write(t, filepath.Dir(release), filepath.Base(release), "")
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	for {
		run := h.client.waitRun(t, m, id)
		if run.failed == nil {
			break
		}
		m = h.client.mark()
		must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	}
}
