package batch

// testRun: one test run's shared state, and the scheduler that hands its
// groups (testgroup.go) to the workers (testworker.go) as they free up.

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripple-run/ripple/kernel"
)

// testRun is one ripple run --tests (or a watch's hot re-run): pytest in
// every kernel, the tests handed out by group.
//
// Ownership: the pool's goroutine (Run's or Watch's) builds the run:
// every field above mu is written by it while no worker goroutine runs
// (before the collection's goroutines start, between collection rounds,
// before drive starts the workers) and only read once the workers run.
// The workers (one goroutine per kernel) own their kernel and share the
// scheduling state under mu. Results go from the workers (and their
// kernels' reader goroutines) to the pool's goroutine over results; that
// goroutine owns the report and the observer (completer).
//
// Scheduling invariant: a worker whose pytest session is open (counted in
// open) may still put tests back in the queue: those its kernel held when
// it died, or when its agent was lost. So a worker that finds the queue
// empty finishes its own session and then waits (more) until a group is
// put back or no session is open any more; only then does it end. Every
// change of queue, open, holders or stopped broadcasts more.
//
// With split collection (split.go) a session has one share of the suite
// and runs only that share's groups; a worker without a session takes a
// group of a share no open session holds (holders: the share's kernel is
// gone), collecting that share itself, else steals a group of a share
// that has more than one left, collecting only its module.
//
// What a stopped run (Ctrl-C, --fail-fast, pytest's -x, a test's own
// KeyboardInterrupt) leaves behind: stop cancels every call in flight
// with its cause; the test each kernel was running gets an interrupted
// result, the tests its kernel held are not put back and that kernel is
// stopped (a watch's next run starts a new one); no group starts any
// more; drive gives every entry without a result "not run" (skipped); and
// the run is not clean, so a watch's next change takes the module path.
type testRun struct {
	opts    *Options
	python  kernel.Interpreter
	root    string
	args    []string // pytest's arguments (with --maxfail=1 under --fail-fast)
	workers int      // the kernels of the run: lowered when kernels are lost while they collect
	unit    bool     // pytest is missing: unittest's loader runs the tests
	flags   runFlags
	// split: each session collects one share of the shares (split.go);
	// without split there is one share, the whole suite, in every session.
	split  bool
	shares int
	// shareItems: per share, its collection: a kernel that collects the
	// share again must agree. entryOf: per share, kernel index -> entry
	// index.
	shareItems [][]testItem
	entryOf    []map[int]int
	// indexOf: per share (with split), node id -> kernel index; files:
	// the File collectors' node ids in collection order (testItem.File).
	indexOf []map[string]int
	files   []string
	// entries: what the run reports, in report order. results: the
	// workers send each result here (entry index), the pool's goroutine
	// receives them in drive.
	entries []Entry
	results chan indexedResult
	// running: the workers run the tests (set before they start): a
	// collection from then on (a kernel replaced, a stolen module) is
	// not the run's first, so it does not purge or report dependencies.
	running bool
	// cancel ends every kernel's call (Ctrl-C, --fail-fast, -x): the
	// cancel of the run's context, called once, by stop.
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	more    *sync.Cond  // on mu
	queue   []testGroup // guarded by mu: groups not started, in hand-out order
	open    int         // guarded by mu: workers whose session is open
	holders []int       // guarded by mu: per share, the open sessions that collected it
	stopped bool        // guarded by mu
	// horizon: guarded by mu: the first entry at which a kernel's pytest
	// stopped its session (-x, --maxfail, --sw), -1 before: no group
	// that starts after it is handed out, as pytest runs nothing after
	// it; groups before it still run (they may stop earlier).
	horizon int
	// only: when set (before the workers start), the one worker that runs
	// tests: --sw and --sw-skip stop at the first failure in pytest's
	// order, which only one session can know (each kernel's stepwise
	// plugin would skip its own first failure).
	only *testWorker
	// late: workers whose kernels start beside the first kernel's
	// collection, and which collect a hand-over of its selection and
	// join once that pays (handover.go; the default kernels:
	// kernelchoice.go). Set before the workers start, with what they
	// decide on: fileTests (per test file of the suite, its tests),
	// collectTook (the first kernel's collect call), prior (the last
	// run's mean test time, 0: none) and began (when the tests began).
	late        []*testWorker
	cpu         *idleMeter // with late: the machine's idle CPUs (cpuload.go)
	fileTests   map[string]int
	fileCollect map[string]float64 // the first kernel's collect time per test file, seconds; nil: unknown
	collectTook time.Duration
	prior       time.Duration
	began       time.Time
	// ended counts the results the workers sent (testWorker.send), and
	// reported sums their durations (nanoseconds) as pytest reported them.
	ended    atomic.Int64
	reported atomic.Int64
	// rerun: guarded by mu: entry index -> the agent lost while that
	// test ran; such a test is run again once, elsewhere.
	rerun map[int]string
	// gone: guarded by mu: why workers ended before the run did (a
	// kernel that could not be replaced, an agent lost); the tests left
	// unrun when no worker is left are reported with it.
	gone []string
	// lost: guarded by mu: a kernel was replaced during the run; what its
	// predecessor recorded for --watch's hot path is gone.
	lost bool
}

// newTestRun is a run of workers kernels with pytest's arguments args;
// cancel cancels the context of its calls.
func newTestRun(opts *Options, python kernel.Interpreter, root string, args []string, workers int, flags runFlags, cancel context.CancelCauseFunc) *testRun {
	t := &testRun{opts: opts, python: python, root: root, args: args, workers: workers, flags: flags, cancel: cancel,
		rerun: make(map[int]string), horizon: -1}
	t.more = sync.NewCond(&t.mu)
	return t
}

// indexedResult is a result on its way to the pool's goroutine: i is its
// entry's index.
type indexedResult struct {
	i int
	r *Result
}

// next takes the next group for a worker: with its session open (on
// share), the next group of that share that it can run (can: nil, any;
// a hand-over's session runs the groups it collected), else none; without a session, the
// next group of a share no session holds, else (split) a group to steal,
// else it waits while sessions are open (they may put tests back, or end).
// steal: the group is of a share another session holds; the worker
// collects only its module (split.go). false when the run stops or nothing
// is left for it (see testRun).
func (t *testRun) next(share int, open bool, can func(testGroup) bool) (g testGroup, steal, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for !t.stopped {
		for i, g := range t.queue {
			if (open && (g.share != share || (can != nil && !can(g)))) || (!open && t.holders[g.share] > 0 && t.split) || t.pastHorizon(g) {
				continue
			}
			budget := t.callBudget(open, share)
			t.queue = slices.Delete(t.queue, i, i+1)
			if budget > len(g.indices) {
				g = t.absorb(g, i, budget, can)
			}
			return g, false, true
		}
		if !open && t.split {
			if g, ok := t.steal(); ok {
				return g, true, true
			}
		}
		if open || t.open == 0 {
			break
		}
		t.more.Wait()
	}
	return testGroup{}, false, false
}

// callBudget is how many tests one call of a worker with its session open
// may take: the tests of about callChunk at the mean test time of a
// kernel (the last run's, else measured since the tests began; the first
// call, with neither, takes one group), and at most 1/N of the queued
// ones (N the run's kernels) while it is the run's only session and no
// late kernel has started, 1/2N once others may take from the queue, so
// that the last calls stay short and the kernels end together. 0: one
// group a call. Each call costs a round trip, two wake-ups that a loaded
// machine makes wait: 15 calls of 9 fast tests took 20-50 ms more than 6
// larger ones, 40 calls of 25 tests ~0.1 s. A chunk is short beside a
// late kernel's start, so a late kernel that decides to join finds its
// hand-over queued and the first kernel soon free. With split
// collection a call takes at most half of its share's queued tests: only
// a share with more than one group left can be stolen from (steal), and a
// call that absorbed the rest of its share would leave an idle kernel
// nothing to take while this one runs them all. t.mu held.
func (t *testRun) callBudget(open bool, share int) int {
	if !open {
		return 0
	}
	others := t.open > 1
	for _, w := range t.late {
		others = others || w.joined || w.started.Load()
	}
	mean := t.prior
	if ended := t.ended.Load(); ended > 0 && (mean == 0 || ended >= 10) {
		// The run's time per test ended, over the sessions running.
		mean = time.Since(t.began) * time.Duration(max(t.open, 1)) / time.Duration(ended)
	}
	if mean <= 0 {
		return 0
	}
	queued, own := 0, 0
	for _, g := range t.queue {
		queued += len(g.indices)
		if g.share == share {
			own += len(g.indices)
		}
	}
	div := max(t.workers, 1)
	if others {
		div *= 2
	}
	budget := min(int64(callChunk/mean), int64(queued/div))
	if t.split && t.workers > 1 {
		budget = min(budget, int64(own/2))
	}
	return int(budget)
}

// callChunk: how long one call may take by the mean test time
// (callBudget).
const callChunk = 50 * time.Millisecond

// absorb joins to g the groups that follow it at i in the queue, of its
// share and runnable by the same session (can), in order, while the
// total stays within budget tests: one call runs them (as oneCall's
// queue). t.mu held.
func (t *testRun) absorb(g testGroup, i, budget int, can func(testGroup) bool) testGroup {
	n := len(g.indices)
	j := i
	for j < len(t.queue) {
		h := t.queue[j]
		if h.share != g.share || (can != nil && !can(h)) || t.pastHorizon(h) || n+len(h.indices) > budget {
			break
		}
		n += len(h.indices)
		j++
	}
	if j == i {
		return g
	}
	joined := testGroup{share: g.share, indices: slices.Clone(g.indices)}
	for _, h := range t.queue[i:j] {
		joined.indices = append(joined.indices, h.indices...)
	}
	t.queue = slices.Delete(t.queue, i, j)
	return joined
}

// steal takes the first group of a share that has more than one left, so
// that its own kernel, which needs no new session, keeps at least one: a
// steal costs a session and the module's import, and the run ends only
// when the thief's session does. (A stolen module runs in a session of
// its own, apart from the thief's share and its order.) t.mu held.
func (t *testRun) steal() (testGroup, bool) {
	left := make([]int, len(t.holders))
	for _, g := range t.queue {
		left[g.share]++
	}
	for i, g := range t.queue {
		if left[g.share] > 1 {
			t.queue = slices.Delete(t.queue, i, i+1)
			return g, true
		}
	}
	return testGroup{}, false
}

// retire takes a session whose wide fixture failed (testWorker.clash) out
// of the run when another session is still open: g, its tests not yet
// reported, goes back to the queue for the others, and the session no
// longer counts as open (the worker must not call closed). false when it
// is the last open session (or the run stops): it runs them itself.
func (t *testRun) retire(g testGroup) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.open < 2 {
		return false
	}
	if len(g.indices) > 0 {
		t.queue = append([]testGroup{g}, t.queue...)
	}
	t.open--
	t.holders[g.share]--
	t.more.Broadcast()
	return true
}

// othersOpen reports whether another session than the caller's is open.
func (t *testRun) othersOpen() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open > 1
}

// requeue puts back the tests of a group a dead kernel (or a lost agent)
// did not run.
func (t *testRun) requeue(g testGroup) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.queue = append([]testGroup{g}, t.queue...)
	t.more.Broadcast()
}

// opened and closed count the workers' open sessions, by share.
func (t *testRun) opened(share int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open++
	t.holders[share]++
}

func (t *testRun) closed(share int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open--
	t.holders[share]--
	t.more.Broadcast()
}

// replaced records that a worker's kernel is being replaced.
func (t *testRun) replaced() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lost = true
}

// clean reports whether the run left every kernel's session open and
// whole, with what each test reached recorded: it ran to its end (not
// stopped, no worker gone, no kernel replaced), without split collection
// or unittest. Only then can a watch's hot path use the sessions.
func (t *testRun) clean() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.stopped && !t.lost && len(t.gone) == 0 && !t.split && !t.unit
}

// left records why a worker ended before the run.
func (t *testRun) left(why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = append(t.gone, why)
}

// lostWhileRunning records that test (entry) i was running when agent was lost;
// it returns the agent lost the first time when this is the second.
func (t *testRun) lostWhileRunning(i int, agent string) (before string, again bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if before, again = t.rerun[i]; !again {
		t.rerun[i] = agent
	}
	return before, again
}

// stop ends the run: no group starts, running calls are interrupted.
func (t *testRun) stop(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		t.cancel(cause)
		t.more.Broadcast()
	}
}

// joinLate opens a late worker's session if tests it collected are
// still queued and the run has not ended without it (see late).
func (t *testRun) joinLate(w *testWorker) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped || t.open == 0 || w.aborted || (w.steal != nil && !slices.ContainsFunc(t.queue, w.steal.has)) {
		return false
	}
	w.joined = true
	t.open++
	t.holders[w.share]++
	return true
}

// stopAfter records that a kernel's pytest stopped its session at entry
// (see horizon).
func (t *testRun) stopAfter(entry int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.horizon < 0 || entry < t.horizon {
		t.horizon = entry
	}
	t.more.Broadcast()
}

// pastHorizon reports whether g starts after the horizon. t.mu held.
func (t *testRun) pastHorizon(g testGroup) bool {
	if t.horizon < 0 || len(g.indices) == 0 {
		return false
	}
	j, ok := t.entryOf[g.share][g.indices[0]]
	return ok && j > t.horizon
}

func (t *testRun) isStopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}
