package batch

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// handOverRun is a run whose first kernel collected files a.py (4 tests),
// b.py (4) and c.py (2), queued as one group per file, with the hand-over
// prepared as drive would have it.
func handOverRun(queue []testGroup) *testRun {
	t := &testRun{}
	var items []testItem
	for _, f := range []struct {
		name string
		n    int
	}{{"a.py", 4}, {"b.py", 4}, {"c.py", 2}} {
		for i := range f.n {
			items = append(items, testItem{NodeID: fmt.Sprintf("%s::test_%d", f.name, i)})
		}
	}
	t.shareItems = [][]testItem{items}
	t.late = []*testWorker{{}}
	t.prepareHandOver(&collectAnswer{took: time.Second})
	t.queue = queue
	return t
}

// A late kernel is handed the queue's suffix from its k/n of the queued
// tests: whole files by path, a file of which only some tests are handed
// by those tests' node ids; its indices are the first kernel's.
func TestHandOverSelection(t *testing.T) {
	files := []testGroup{{indices: []int{0, 1, 2, 3}}, {indices: []int{4, 5, 6, 7}}, {indices: []int{8, 9}}}
	for _, c := range []struct {
		name  string
		queue []testGroup
		k, n  int
		want  []int
		sel   []string
		files int
	}{
		{"half of the whole queue", files, 1, 2, []int{4, 5, 6, 7, 8, 9}, []string{"b.py", "c.py"}, 2},
		{"a third of four kernels' queue", files, 3, 4, []int{8, 9}, []string{"c.py"}, 1},
		{"one group left", files[2:], 1, 2, []int{8, 9}, []string{"c.py"}, 1},
		// --dist load's chunks: part of b.py goes by node id.
		{"chunks", []testGroup{{indices: []int{4, 5}}, {indices: []int{6, 7}}, {indices: []int{8, 9}}}, 1, 2,
			[]int{6, 7, 8, 9}, []string{"c.py", "b.py::test_2", "b.py::test_3"}, 2},
	} {
		tr := handOverRun(c.queue)
		h, ok := tr.handOverFor(c.k, c.n)
		if !ok || !slices.Equal(h.want, c.want) || !slices.Equal(h.sel, c.sel) || h.files != c.files {
			t.Errorf("%s: got %v %v %d files (ok %v), want %v %v %d", c.name, h.want, h.sel, h.files, ok, c.want, c.sel, c.files)
		}
	}
	if _, ok := handOverRun(nil).handOverFor(1, 2); ok {
		t.Errorf("an empty queue hands something over")
	}
}

// The session of a hand-over runs only groups whose every test it
// collected, mapped to its own indices.
func TestHandOverSessionRunsWhatItCollected(t *testing.T) {
	tr := handOverRun(nil)
	s := handOver{want: []int{6, 7, 8, 9}}.stolen()
	// The kernel collected b.py::test_2, b.py::test_3 and c.py, in that order.
	got := []testItem{{NodeID: "b.py::test_2"}, {NodeID: "b.py::test_3"}, {NodeID: "c.py::test_0"}, {NodeID: "c.py::test_1"}}
	if err := s.index(got, tr.indexOf[0]); err != nil {
		t.Fatal(err)
	}
	if !s.has(testGroup{indices: []int{8, 9}}) || s.has(testGroup{indices: []int{5, 6}}) {
		t.Errorf("has: a group it collected, or one it did not, misjudged")
	}
	if m := s.fromShare([]int{7, 8}); !slices.Equal(m, []int{1, 2}) {
		t.Errorf("fromShare = %v, want [1 2]", m)
	}
	if err := s.index(got[:3], tr.indexOf[0]); err == nil {
		t.Errorf("a hand-over that lacks a handed test was accepted")
	}
	if err := s.index(append(got, testItem{NodeID: "x.py::test_new"}), tr.indexOf[0]); err == nil {
		t.Errorf("a hand-over with a test the first kernel did not collect was accepted")
	}
}

// When a late kernel joins: when its handed tests, at the estimated time
// per test, take longer than collecting its share of the files; the time
// per test is the last run's until ten tests ended, else measured, once
// the run has measured for long enough.
func TestJoinPays(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		e    joinEstimate
		pays bool
	}{
		// 1000 tests of 0.3 ms in 40 files that took 1.5 s to collect
		// (addopts deselected 95%): half the files cost 0.85 s.
		{"deselect-heavy", joinEstimate{collect: 1500 * ms, files: 40, handedFiles: 20, handedTests: 500, perTest: ms * 3 / 10}, false},
		// 130 tests of 2 ms, 15 files collected in 0.3 s.
		{"small", joinEstimate{collect: 300 * ms, files: 15, handedFiles: 8, handedTests: 65, perTest: 2 * ms}, false},
		// 300 tests of 50 ms.
		{"slow tests", joinEstimate{collect: 3000 * ms, files: 60, handedFiles: 30, handedTests: 150, perTest: 50 * ms}, true},
		{"unknown yet", joinEstimate{collect: 10 * ms, files: 1, handedFiles: 1, handedTests: 150}, false},
		// click's shape: 2,016 tests of ~1.3 ms in 20 files collected in
		// 1.75 s, of which one file (31,000 deselected stress tests) took
		// 1.5 s: handed half the files, that one among them, the late
		// kernel would collect for 1.5 s to run 1.3 s of tests; its share
		// of the files says 0.9 s.
		{"share of the files", joinEstimate{collect: 1750 * ms, files: 20, handedFiles: 10, handedTests: 1008, perTest: ms * 13 / 10}, true},
		{"the handed files' own times", joinEstimate{collect: 1750 * ms, files: 20, handedFiles: 10, handedTests: 1008, perTest: ms * 13 / 10,
			handedCollect: 1550 * ms}, false},
	} {
		if got := c.e.pays(); got != c.pays {
			t.Errorf("%s: pays = %v (cost %v, tests %v), want %v", c.name, got, c.e.cost(), time.Duration(c.e.handedTests)*c.e.perTest, c.pays)
		}
	}
	for _, c := range []struct {
		name                    string
		elapsed                 time.Duration
		ended                   int64
		reported                time.Duration
		prior, observe, perTest time.Duration
	}{
		{"the last run's mean first", 5 * ms, 3, 6 * ms, 2 * ms, 50 * ms, 2 * ms},
		{"measured once ten ended", 100 * ms, 20, 100 * ms, 2 * ms, 50 * ms, 5*ms + testOverhead},
		{"nothing before observing", 10 * ms, 3, 3 * ms, 0, 50 * ms, 0},
		// 390 tests of ~0.6 ms on a loaded first run: the wall time per
		// test ended (the late kernel's start slowing the first kernel)
		// was 2.25 ms; the tests' own durations say 0.6 ms.
		{"the tests' durations, not the wall time", 225 * ms, 100, 60 * ms, 0, 50 * ms, ms*6/10 + testOverhead},
		{"the running test's time so far", 80 * ms, 0, 0, 0, 50 * ms, 80 * ms},
	} {
		if got := perTest(c.elapsed, c.ended, c.reported, c.prior, c.observe); got != c.perTest {
			t.Errorf("%s: perTest = %v, want %v", c.name, got, c.perTest)
		}
	}
}

// A call takes several groups: about callChunk of tests at the measured
// mean, in order, at most 1/N of the queue while the first kernel is
// alone (N kernels), 1/2N once a late kernel started; one group a call
// before anything was measured, and when the tests are slow. A run of one
// kernel takes chunks too.
func TestCallChunks(t *testing.T) {
	queue := func(groups int) []testGroup {
		var q []testGroup
		for g := range groups {
			q = append(q, testGroup{indices: []int{2 * g, 2*g + 1}})
		}
		return q
	}
	tr := handOverRun(queue(20))
	tr.workers, tr.open, tr.horizon, tr.more = 2, 1, -1, sync.NewCond(&tr.mu)
	tr.began = time.Now()
	if g, _, _ := tr.next(0, true, nil); !slices.Equal(g.indices, []int{0, 1}) {
		t.Fatalf("first call, nothing measured: %v, want one group", g.indices)
	}
	tr.ended.Store(2)
	tr.began = time.Now().Add(-2 * time.Millisecond) // 1 ms a test: 50 a chunk, capped at half of the 38 queued
	if g, _, _ := tr.next(0, true, nil); !slices.Equal(g.indices, slices.Collect(func(yield func(int) bool) {
		for i := 2; i < 20; i++ {
			yield(i)
		}
	})) {
		t.Errorf("fast tests: %v, want the groups of the next 18 tests (19 = half the queue)", g.indices)
	}
	tr.began = time.Now().Add(-time.Second) // 0.5 s a test
	if g, _, _ := tr.next(0, true, nil); !slices.Equal(g.indices, []int{20, 21}) {
		t.Errorf("slow tests: %v, want one group", g.indices)
	}
	tr.began = time.Now().Add(-2 * time.Millisecond)
	tr.late[0].started.Store(true)
	if g, _, _ := tr.next(0, true, nil); !slices.Equal(g.indices, []int{22, 23, 24, 25}) {
		t.Errorf("a late kernel started: %v, want the groups of a quarter of the 16 queued", g.indices)
	}

	one := handOverRun(queue(20))
	one.late = nil
	one.workers, one.open, one.horizon, one.more = 1, 1, -1, sync.NewCond(&one.mu)
	one.ended.Store(2)
	one.began = time.Now().Add(-2 * time.Millisecond)
	if g, _, _ := one.next(0, true, nil); len(g.indices) != 40 {
		t.Errorf("one kernel, fast tests: %d tests a call, want the 40 queued", len(g.indices))
	}
}

// With split collection a call takes at most half of its share's queued
// tests, whatever the test time allows: a share left with one group
// cannot be stolen from, so an idle kernel would wait for this one.
func TestCallChunksLeaveSteals(t *testing.T) {
	q := []testGroup{{share: 0, indices: []int{1}}, {share: 0, indices: []int{2}}, {share: 0, indices: []int{3}}}
	for i := 4; i < 13; i++ {
		q = append(q, testGroup{share: 1, indices: []int{i}})
	}
	tr := &testRun{queue: q, split: true, workers: 2, open: 2, holders: []int{1, 1}, horizon: -1}
	tr.more = sync.NewCond(&tr.mu)
	tr.ended.Store(20)
	tr.began = time.Now().Add(-10 * time.Millisecond) // 1 ms a test: 50 a chunk, 3 by the queue (12 queued, a quarter)
	if g, _, _ := tr.next(0, true, nil); !slices.Equal(g.indices, []int{1}) {
		t.Errorf("share 0 with 3 queued (the queue allows 3): %v, want one group, leaving two to steal", g.indices)
	}
	if g, steal, _ := tr.next(1, false, nil); !steal || !slices.Equal(g.indices, []int{2}) {
		t.Errorf("an idle kernel: %v (steal %v), want share 0's next group stolen", g.indices, steal)
	}
	if g, _, _ := tr.next(1, true, nil); !slices.Equal(g.indices, []int{4, 5}) {
		t.Errorf("share 1 with 9 queued (the queue allows 2 of 10): %v, want two groups", g.indices)
	}
}

// A hand-over's collect cost is the sum of its files' collect times as
// the first kernel measured them (a file handed in part costs all of
// its collection); unknown when a file has no time.
func TestHandOverCollectTime(t *testing.T) {
	tr := handOverRun([]testGroup{{indices: []int{0, 1, 2, 3}}, {indices: []int{4, 5, 6, 7}}, {indices: []int{8, 9}}})
	tr.fileCollect = map[string]float64{"a.py": 0.1, "b.py": 2, "c.py": 0.25}
	h, ok := tr.handOverFor(1, 2)
	if !ok || h.collect != 2250*time.Millisecond {
		t.Errorf("hand-over of b.py and c.py: collect %v, want 2.25s (b.py 2 s, c.py 0.25 s)", h.collect)
	}
	delete(tr.fileCollect, "c.py")
	if h, _ := tr.handOverFor(1, 2); h.collect != 0 {
		t.Errorf("c.py's time unknown: collect %v, want 0 (the share of the files then)", h.collect)
	}
}
