package batch

// The hand-over: how the kernels of a run with the default kernels share
// one collection. The first kernel collects the suite; the others start
// beside it (their interpreters come up while it collects) and are late
// workers (testRun.late): each one waits until joining pays for itself,
// then collects only what it may run and joins.
//
// Invariants of the hand-over:
//  1. The suite is the first kernel's collection, made with the user's
//     arguments: pytest's deselection (-k, -m, --deselect, addopts) and
//     the plugins' pytest_collection_modifyitems run there, once, over the
//     whole collection. No other kernel collects the whole suite (but one
//     that replaces the first kernel, or opens a session for tests put
//     back that its hand-over lacks).
//  2. A late kernel is handed a suffix of the queue as it is when it
//     decides (taken under t.mu): the groups from the (k/N)th of the
//     queued tests on, for late kernel gwk of N, named by their test
//     files (a file whole when every test the first kernel collected from
//     it is handed, else the handed tests' node ids). Its session
//     collects the user's arguments as pytest does, skipping the files not
//     handed inside pytest's walk (the kernel's pytest_split.selected): it
//     loads every conftest.py pytest would, imports only the handed
//     modules, and -k, -m and the plugins' hooks apply again, to the same
//     items.
//  3. Its items are the first kernel's by node id (stolen, with handOver
//     set): it must have collected every handed test, else it does not
//     join (its kernel is stopped; the run goes on without it). Items it
//     collected beyond those are never run.
//  4. It runs only groups all of whose tests it collected (testRun.next's
//     can). Groups leave the queue in collection order, so each kernel
//     runs a subsequence of pytest's order, as without a hand-over.
//  5. It decides once: it collects its hand-over at most once (again only
//     when its kernel is replaced, with the same hand-over).
//
// A late kernel's interpreter starts lateStartDelay after the first
// kernel is up and begins to collect (testWorker.startLate), while it
// still collects, unless that collection was shorter (a small suite):
// then it starts only if its hand-over pays, or never.
//
// When joining pays (joinEstimate.pays): a late kernel's cost is its
// collection of the hand-over, what collecting the handed files took the
// first kernel (each file's time, pytest_session.FileTimes: one file can
// hold most of a suite's collection, as click's 31,000 deselected stress
// tests do), else the first kernel's collect call scaled by the share of
// the suite's test files handed, plus
// handOverOverhead (a session's set-up, the answer's way back), plus
// secondKernelStart when its kernel has not begun to start; during it
// the running kernels go on. Its gain is at most the time of the handed
// tests. It joins when that time, estimated, exceeds the cost; the time
// per test (perTest) is the last run's mean (kernelchoice.go) until ten
// tests have ended, else what the run has measured once it has run for a
// quarter of the cost (the mean of the durations the ended tests
// reported; before any ended, the running test's time so far). It asks again every handOverPoll until the queue
// is empty. On a suite whose tests take less than collecting them (a small
// suite, one whose addopts deselect most of it) a late kernel so never
// collects: the run costs one kernel's collection and the late kernels'
// start, which ran beside it.

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// handOverOverhead: what a late kernel's session costs beside collecting
// its files (pytest's Config and session start in a warm interpreter,
// the items' way back), measured ~0.1 s.
const handOverOverhead = 100 * time.Millisecond

// handOverPoll: how often a late kernel asks again whether joining pays.
const handOverPoll = 20 * time.Millisecond

// lateStartDelay: how long into the first kernel's collection a late
// kernel starts (testWorker.startLate) unless its hand-over pays before: a kernel's
// start (secondKernelStart), so that a collection longer than that
// overlaps the start, and a shorter one (a small suite's) pays nothing
// for kernels it does not use.
const lateStartDelay = secondKernelStart

// prepareHandOver sets what the late workers decide on and map their
// items with (first: the first kernel's collection), before the workers
// start.
func (t *testRun) prepareHandOver(first *collectAnswer) {
	if len(t.late) == 0 {
		return
	}
	t.collectTook, t.prior, t.fileCollect = first.took, t.flags.prior, first.FileTimes
	t.fileTests = map[string]int{}
	t.indexOf = []map[string]int{make(map[string]int, len(t.shareItems[0]))}
	for i, it := range t.shareItems[0] {
		t.fileTests[fileOfNode(it.NodeID)]++
		t.indexOf[0][it.NodeID] = i
	}
}

// joinEstimate is what a late kernel decides on.
type joinEstimate struct {
	start       bool          // its kernel has yet to start
	collect     time.Duration // the first kernel's collect call
	files       int           // test files of the suite
	handedFiles int           // test files of the hand-over
	handedTests int
	// handedCollect: what collecting the handed files took the first
	// kernel (FileTimes); 0: not known, then the share of collect.
	handedCollect time.Duration
	perTest       time.Duration // estimated wall time of a test; 0: unknown yet
	busy          bool          // the machine has no CPU to spare (cpuload.go)
}

// cost is the estimated time from the decision until the late kernel can
// run a test.
func (e joinEstimate) cost() time.Duration {
	c := handOverOverhead + e.collect
	switch {
	case e.handedCollect > 0:
		c = handOverOverhead + e.handedCollect
	case e.files > 0:
		c = handOverOverhead + time.Duration(int64(e.collect)*int64(e.handedFiles)/int64(e.files))
	}
	if e.start {
		c += secondKernelStart
	}
	return c
}

// pays reports whether the handed tests are estimated to take longer than
// the late kernel needs to join, on a CPU the machine leaves idle.
func (e joinEstimate) pays() bool {
	return !e.busy && e.handedTests > 0 && e.perTest > 0 && time.Duration(e.handedTests)*e.perTest > e.cost()
}

// perTest estimates a test's time, or 0 when it cannot yet: the last
// run's mean (prior, 0: none) until ten tests have ended, else, once the
// run has measured for at least observe (elapsed since the tests began),
// the mean of the durations the ended tests reported (reported, their
// sum: pytest's setup, call and teardown, as prior counts them) plus
// testOverhead; before any ended, the running test's time so far. Not
// the wall time per test ended: on a first run it includes the late
// kernel's own start, which slows the running kernel while measured (390
// tests of ~0.6 ms looked like 2.25 ms ones and a late kernel joined to
// no use), and the first tests' session set-up.
func perTest(elapsed time.Duration, ended int64, reported, prior, observe time.Duration) time.Duration {
	switch {
	case prior > 0 && ended < 10:
		return prior
	case elapsed < observe:
		return 0
	case ended > 0:
		return reported/time.Duration(ended) + testOverhead
	}
	return elapsed
}

// testOverhead: a test's time in its kernel beside the durations pytest
// reports (its hooks, the report and the progress frame), measured ~0.2
// ms on trivial tests.
const testOverhead = 200 * time.Microsecond

// observeFor: how long a run measures its tests before a late kernel
// trusts the measure: a quarter of the cost of joining, so that a wrong
// decision is unlikely and a right one loses little.
func observeFor(cost time.Duration) time.Duration { return cost / 4 }

// handOver is a late kernel's hand-over: the share-0 indices of the
// handed tests, and what its session collects (select).
type handOver struct {
	want    []int         // the handed tests, in collection order
	sel     []string      // the collect request's Select
	files   int           // test files of the handed tests
	collect time.Duration // what collecting those files took the first kernel; 0: unknown
}

// fileOfNode is the test file (its node id) of a node id.
func fileOfNode(nodeID string) string {
	f, _, _ := strings.Cut(nodeID, "::")
	return f
}

// handOverFor is late kernel k's (of n) hand-over from the queue (t.mu
// held): the groups from the (k/n)th of the queued tests on (a group
// whose middle is past that point included). ok false when nothing is
// queued.
func (t *testRun) handOverFor(k, n int) (h handOver, ok bool) {
	total := 0
	for _, g := range t.queue {
		total += len(g.indices)
	}
	if total == 0 {
		return handOver{}, false
	}
	from := total * k / max(n, 1)
	items := t.shareItems[0]
	seen, count := 0, map[string]int{}
	var files []string // in collection order
	for _, g := range t.queue {
		// A group goes with the side of the cut its middle is on (the
		// last one is always handed).
		if 2*seen+len(g.indices) < 2*from && seen+len(g.indices) < total {
			seen += len(g.indices)
			continue
		}
		seen += len(g.indices)
		for _, i := range g.indices {
			f := fileOfNode(items[i].NodeID)
			if count[f] == 0 {
				files = append(files, f)
			}
			count[f]++
			h.want = append(h.want, i)
		}
	}
	whole := map[string]bool{}
	for _, f := range files {
		if count[f] == t.fileTests[f] {
			whole[f] = true
			h.sel = append(h.sel, f)
		}
	}
	for _, i := range h.want {
		if id := items[i].NodeID; !whole[fileOfNode(id)] {
			h.sel = append(h.sel, id)
		}
	}
	h.files = len(files)
	if t.fileCollect != nil {
		known := true
		for _, f := range files {
			secs, ok := t.fileCollect[f]
			known = known && ok
			h.collect += time.Duration(secs * float64(time.Second))
		}
		if !known {
			h.collect = 0
		}
	}
	return h, true
}

// awaitHandOver waits until joining pays for late worker w, and returns
// its hand-over; false when the queue empties, the run stops, one kernel
// must run every test (testRun.only), or ctx ends first.
//
// Each poll walks the queue under t.mu (handOverFor): the next one waits
// handOverPoll, or ten times what this one took when that is longer, so
// that on a long queue the polls take at most a tenth of a CPU and of
// the lock the running kernels' next calls wait on.
func (t *testRun) awaitHandOver(ctx context.Context, w *testWorker) (handOver, bool) {
	timer := time.NewTimer(handOverPoll)
	defer timer.Stop()
	for {
		began := time.Now()
		h, est, ok := t.joinNow(w)
		if !ok {
			return handOver{}, false
		}
		if est.pays() {
			t.opts.Logger.Debug("late kernel joins", "kernel", w.name(), "tests", est.handedTests, "files", est.handedFiles,
				"perTest", est.perTest, "cost", est.cost())
			return h, true
		}
		timer.Reset(max(handOverPoll, 10*time.Since(began)))
		select {
		case <-ctx.Done():
			return handOver{}, false
		case <-timer.C:
		}
	}
}

// joinNow is late worker w's hand-over as of now and its estimate. On a
// busy machine (cpuload.go) it is only that: the hand-over, which walks
// the queue under t.mu, is not worked out every poll while it could not
// be taken (pygments' 5,345 queued tests: ~0.5 s of CPU over a run, on
// a machine with none to spare).
func (t *testRun) joinNow(w *testWorker) (handOver, joinEstimate, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.only != nil || t.open == 0 || len(t.queue) == 0 {
		return handOver{}, joinEstimate{}, false
	}
	if !t.cpu.roomForLate() {
		return handOver{}, joinEstimate{busy: true}, true
	}
	h, ok := t.handOverFor(w.id, t.workers)
	if !ok {
		return handOver{}, joinEstimate{}, false
	}
	if t.unit {
		h.files = len(t.fileTests) // unittest's loader collects everything
	}
	est := joinEstimate{start: !w.started.Load(), collect: t.collectTook, files: len(t.fileTests), handedFiles: h.files, handedTests: len(h.want),
		handedCollect: h.collect}
	est.perTest = perTest(time.Since(t.began), t.ended.Load(), time.Duration(t.reported.Load()), t.prior, observeFor(est.cost()))
	return h, est, true
}

// stolen is the session mapping of a hand-over (split.go's stolen).
func (h handOver) stolen() *stolen {
	return &stolen{file: fmt.Sprintf("the hand-over of %d tests in %d files", len(h.want), h.files), want: h.want,
		handOver: true, sel: h.sel}
}

// has reports whether the session collected every test of g (a
// hand-over's session runs only those groups).
func (s *stolen) has(g testGroup) bool {
	for _, i := range g.indices {
		if _, ok := s.own[i]; !ok {
			return false
		}
	}
	return true
}
