package batch

// How many kernels a test run uses when the user did not say (--kernels
// unset), and how they share the work: one where a second cannot pay for
// itself.
//
// The first kernel collects the suite, once (pytest's deselection by -k,
// -m and addopts happens there); the others start beside its collection
// (when it lasts longer than a kernel's start) and are late workers (testRun.late): each joins by a hand-over of the
// queued tests once the time of the tests it would take exceeds what
// collecting them costs it (handover.go has the rule and the hand-over's
// invariants). So on a first run (no record, below) the decision is made
// as the run goes, from the first kernel's collect time, the suite's
// files and the test times measured so far: a small suite, or one whose
// addopts deselect most of what it collects, runs on the first kernel
// alone, and pays only the late kernels' start beside its collection (no
// second collection); a suite whose tests take long gains all but the
// late kernels' collection of their hand-over.
//
// A later run (the same project, interpreter and pytest arguments) also
// has the last run's times, kept in the user's cache directory
// ($XDG_CACHE_HOME/ripple/test-times/): its collection time C and the
// sum T of its tests' times. It uses one kernel, and starts no other,
// when T < C + secondKernelStart: the most a second kernel could save is
// T/2, and it costs its start and about half the collection (measured on
// a suite whose addopts deselect 95% of 20,000 tests, C 3.4 s, T 0.6 s:
// two kernels that both collected everything took 8.7 s, one 5.9 s,
// pytest 4.2 s). Otherwise the late kernels start at once and decide as
// on a first run, with the last run's mean test time before any test of
// this one has ended. Either way a late kernel starts and joins only
// while the machine leaves a CPU idle beside the first kernel
// (cpuload.go): on a machine something else keeps busy, one kernel.

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// secondKernelStart: what starting a second kernel costs before it
// collects (an interpreter that imports pytest), measured ~0.3 s.
const secondKernelStart = 300 * time.Millisecond

// testTimes is what a run measured: its collection's wall time (every
// kernel collecting) and the sum of its tests' times.
type testTimes struct {
	Collect float64 `json:"collect"` // seconds
	Tests   float64 `json:"tests"`   // seconds
	Count   int     `json:"count"`   // results (0 in a record written before it was kept)
	Kernels int     `json:"kernels"`
}

// testTimesPath is where the times of runs of root with python and args
// are kept; "" when there is no cache directory.
func testTimesPath(root, python string, args []string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s", root, python, strings.Join(args, "\x00"))
	return filepath.Join(dir, "ripple", "test-times", fmt.Sprintf("%016x.json", h.Sum64()))
}

// chooseKernels is how many of the default workers the run uses, the
// last run's mean test time (0: unknown), and why when fewer.
func chooseKernels(path string, workers int) (int, time.Duration, string) {
	if path == "" || workers < 2 {
		return workers, 0, ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return workers, 0, ""
	}
	var tt testTimes
	if json.Unmarshal(data, &tt) != nil || tt.Collect <= 0 {
		return workers, 0, ""
	}
	if tt.Tests < tt.Collect+secondKernelStart.Seconds() {
		return 1, 0, fmt.Sprintf("last run: tests took %.2fs, collection %.2fs: a second kernel cannot pay for itself", tt.Tests, tt.Collect)
	}
	var prior time.Duration
	if tt.Count > 0 {
		prior = time.Duration(tt.Tests / float64(tt.Count) * float64(time.Second))
	}
	return workers, prior, ""
}

// saveTestTimes records a finished run's times (best effort).
func saveTestTimes(path string, rep *Report, collect time.Duration) {
	if path == "" || rep == nil || collect <= 0 || rep.Interrupted || rep.StoppedEarly {
		return
	}
	tt := testTimes{Collect: collect.Seconds(), Kernels: rep.Kernels, Count: len(rep.Results)}
	for _, r := range rep.Results {
		tt.Tests += r.Duration.Seconds()
	}
	data, err := json.Marshal(tt)
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(path), 0o777) == nil {
		_ = writeFileAtomic(path, data)
	}
}
