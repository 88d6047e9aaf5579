package batch

// How many kernels a test run uses when the user did not say (--kernels
// unset): one where a second cannot pay for itself, decided from the
// times the same run (project, interpreter, pytest arguments) measured
// last time, kept in the user's cache directory
// ($XDG_CACHE_HOME/ripple/test-times/).
//
// A second kernel collects the suite again (every kernel collects:
// pytest's collection is the run's common ground), which costs about the
// first kernel's collection time C in CPU beside it, and it can save at
// most half the tests' time T (they split over two kernels). On a 2-core
// machine that also runs the Go side, the parallel collection is not free:
// measured on a suite whose addopts deselect 95% of 20,000 tests (C 3.4 s,
// T 0.6 s), two kernels took 8.7 s and one 5.9 s, pytest 4.2 s. So the run
// uses one kernel when the last run's T < C + secondKernelStart, else the
// default (the machine's CPUs), every kernel collecting at once. Without
// a record (a first run), the default kernels, staggered: the first
// kernel collects while the others start; they collect once it has, while
// it runs tests, and join the run if tests are left then (testRun.late).
// A suite whose tests take less than its collection is then never slower
// than on one kernel (but for the CPU the late collection takes), and one
// whose tests take long gains all but the late kernels' collection.

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

// chooseKernels is how many of the default workers the run uses, and
// why when fewer.
func chooseKernels(path string, workers int) (int, string) {
	if path == "" || workers < 2 {
		return workers, ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return workers, ""
	}
	var tt testTimes
	if json.Unmarshal(data, &tt) != nil || tt.Collect <= 0 {
		return workers, ""
	}
	if tt.Tests < tt.Collect+secondKernelStart.Seconds() {
		return 1, fmt.Sprintf("last run: tests took %.2fs, collection %.2fs: a second kernel cannot pay for itself", tt.Tests, tt.Collect)
	}
	return workers, ""
}

// staggerKernels: without a record of the run (see above), the kernels
// after the first collect after it.
func staggerKernels(path string) bool {
	if path == "" {
		return true
	}
	_, err := os.Stat(path)
	return err != nil
}

// saveTestTimes records a finished run's times (best effort).
func saveTestTimes(path string, rep *Report, collect time.Duration) {
	if path == "" || rep == nil || collect <= 0 || rep.Interrupted || rep.StoppedEarly {
		return
	}
	tt := testTimes{Collect: collect.Seconds(), Kernels: rep.Kernels}
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
