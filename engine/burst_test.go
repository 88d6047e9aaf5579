package engine_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
)

// pipelinedMain counts its loads (compiles) and the runs that reach x,
// beside the project (typing may not write into it). Its load is quick
// (10 ms): a burst of edits outlasts several loads, so it is the
// scheduling rules, not a slow load, that keep the compiles down.
const pipelinedMain = `import time

with open("../compiles.log", "a") as log:
    log.write("load@%.3f\n" % time.time())
time.sleep(0.01)


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
	editBursts(t, 0)
}

// The same with the edits 1 ms apart, as fast typing sends them: the
// burst lasts several compiles and runs, and still costs at most 2 of
// each.
func TestSpacedEditBursts(t *testing.T) {
	t.Parallel()
	editBursts(t, time.Millisecond)
}

// editBursts sends 5 bursts of 50 edits, gap apart, and counts the
// compiles and runs each costs.
func editBursts(t *testing.T, gap time.Duration) {
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
		t0 := time.Now()
		last, maxGap := t0, time.Duration(0)
		for i := 0; i < edits; i++ {
			n++
			if i > 0 && gap > 0 {
				time.Sleep(gap) // pacing, not an assertion
			}
			h.setText("main.py", strings.Replace(pipelinedMain, "record(0)", "record("+strconv.Itoa(n)+")", 1))
			maxGap = max(maxGap, time.Since(last))
			last = time.Now()
		}
		sent := time.Since(t0)
		want := strconv.Itoa(n)
		h.client.outputUntilValue(t, m, id, "main:main/x", want)
		waitIdle(t, h.e)
		newCompiles := lines("compiles.log")[compiles:]
		newRuns := lines("runs.log")[runs:]
		ends := h.client.countNotes(m, isEnd(id))
		t.Logf("burst %d: %d edits in %v (longest gap %v), %d compiles %v, %d runs reported, runs of x %v", b+1, edits, sent, maxGap, len(newCompiles), newCompiles, ends, newRuns)
		if len(newCompiles) > 2 {
			t.Errorf("burst %d: %d edits cost %d compiles, want at most 2", b+1, edits, len(newCompiles))
		}
		if len(newRuns) > 2 || newRuns[len(newRuns)-1] != want {
			t.Errorf("burst %d: runs of x %v, want at most 2 ending with %s", b+1, newRuns, want)
		}
	}
}
