package engine_test

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Output attribution (PROTOCOL.md 7.3) with a real kernel: each output
// notification names the statement that was running when the bytes were
// written, whoever wrote them (print, C code through os.write, a child
// process).
func TestOutputNamesItsStatement(t *testing.T) {
	t.Parallel()
	main := `import os
import subprocess
import sys


def main():
    for i in range(3):
        print("loop", i)
    os.write(1, b"raw write\n")
    n = subprocess.run([sys.executable, "-c", "print('from a child')"]).returncode
    quiet = 1
    print("last", file=sys.stderr)
`
	h := setup(t, map[string]string{"main.py": main}, engine.Config{})
	_, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	got := map[protocol.ExpressionID]string{}
	for _, n := range run.notes {
		if p, ok := n.Params.(protocol.OutputParams); ok {
			if !strings.HasPrefix(got[p.ExpressionID], string(p.Stream)+":") {
				got[p.ExpressionID] += string(p.Stream) + ":"
			}
			got[p.ExpressionID] += p.Text
		}
	}
	want := map[protocol.ExpressionID]string{
		"main:main/#1": "stdout:loop 0\nloop 1\nloop 2\n",
		"main:main/#2": "stdout:raw write\n",
		"main:main/n":  "stdout:from a child\n",
		"main:main/#3": "stderr:last\n",
	}
	for id, text := range want {
		if got[id] != text {
			t.Errorf("output of %s: %q, want %q", id, got[id], text)
		}
	}
	if len(got) != len(want) {
		t.Errorf("output attributed to %d statements, want %d: %q", len(got), len(want), got)
	}
	if strings.Contains(run.output, "quiet") {
		t.Errorf("unexpected output %q", run.output)
	}
}

// A thread a run started that prints after the run ended reaches the
// context that started it, never the context running at that moment on
// the same kernel. The two runs meet through files, not time.
func TestLateThreadOutputReachesItsOwnContext(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.py": `import os, threading, time


def wait_for(path):
    for _ in range(2000):
        if os.path.exists(path):
            return
        time.sleep(0.005)


def later():
    wait_for("go")
    print("late from a")
    open("done", "w").close()


def main():
    t = threading.Thread(target=later, daemon=True)
    t.start()
`,
		"b.py": `from a import wait_for


def main():
    open("go", "w").close()
    wait_for("done")
    print("b is done")
`,
	}
	h := setup(t, files, engine.Config{Kernels: 1})
	idA, runA := h.newContext("a:main")
	if runA.failed != nil {
		t.Fatalf("a failed: %+v", runA.failed)
	}
	m := h.client.mark()
	idB, runB := h.newContext("b:main")
	if runB.failed != nil {
		t.Fatalf("b failed: %+v", runB.failed)
	}
	if strings.Contains(runB.output, "late from a") || !strings.Contains(runB.output, "b is done") {
		t.Errorf("b's output %q: want its own print only", runB.output)
	}
	notes := h.client.waitFrom(t, m, "a's late output", func(n note) bool {
		p, ok := n.Params.(protocol.OutputParams)
		return ok && p.ContextID == idA && strings.Contains(p.Text, "late from a")
	})
	for _, n := range notes {
		if p, ok := n.Params.(protocol.OutputParams); ok && p.ContextID == idB && strings.Contains(p.Text, "late") {
			t.Errorf("a's thread output went to b: %+v", p)
		}
	}
}
