package engine_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
)

// pipelinedMain counts its loads (compiles) and the runs that reach x,
// beside the project (typing may not write into it).
const pipelinedMain = `import time

with open("../compiles.log", "a") as log:
    log.write("load\n")
time.sleep(0.2)  # a load that outlasts the burst: the edits arriving meanwhile collapse into one more compile


def record(n):
    with open("../runs.log", "a") as log:
        log.write("%d\n" % n)
    time.sleep(0.01)
    return n


def main():
    x = record(0)
    y = x + 1
`

// Acceptance 4 of issue 27: 5 bursts of 50 pipelined edits of one
// statement (each sent without waiting for anything) cost at most 2
// compiles and 2 runs of the statement per burst, and the last run shows
// the last edit. Nothing blocks the kernel: the edits race the compiles
// and runs they cause, as typing does.
func TestPipelinedEditBursts(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": pipelinedMain}, engine.Config{})
	id, _ := h.newContext("main:main")
	waitIdle(t, h.e)
	outside := filepath.Dir(h.dir)
	lines := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(outside, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
	const bursts, edits = 5, 50
	n := 0
	for b := 0; b < bursts; b++ {
		compiles, runs := len(lines("compiles.log")), len(lines("runs.log"))
		m := h.client.mark()
		for i := 0; i < edits; i++ {
			n++
			h.setText("main.py", strings.Replace(pipelinedMain, "record(0)", "record("+strconv.Itoa(n)+")", 1))
		}
		want := strconv.Itoa(n)
		h.client.outputUntilValue(t, m, id, "main:main/x", want)
		waitIdle(t, h.e)
		newCompiles := len(lines("compiles.log")) - compiles
		newRuns := lines("runs.log")[runs:]
		ends := h.client.countNotes(m, isEnd(id))
		t.Logf("burst %d: %d edits, %d compiles, %d runs reported, runs of x %v", b+1, edits, newCompiles, ends, newRuns)
		if newCompiles > 2 {
			t.Errorf("burst %d: %d edits cost %d compiles, want at most 2", b+1, edits, newCompiles)
		}
		if len(newRuns) > 2 || newRuns[len(newRuns)-1] != want {
			t.Errorf("burst %d: runs of x %v, want at most 2 ending with %s", b+1, newRuns, want)
		}
	}
}
