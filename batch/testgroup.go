package batch

// testGroup: the unit a test run hands to a kernel, and how a run's items
// become groups: by scope (a module, or with --dist loadscope a class) or
// in --dist load's shrinking chunks.

import "slices"

// testGroup is tests that run in one session, in this order: indices into
// the collection of share.
type testGroup struct {
	share   int
	indices []int
}

// groups is the run's queue of the items keep, in collection order: by
// scope, or with DistLoad in chunks (loadChunks).
func (t *testRun) groups(keep []sharedItem) []testGroup {
	if t.opts.Dist == DistLoad {
		return loadChunks(keep, t.workers, t.split)
	}
	return scopeGroups(keep)
}

// scopeGroups groups consecutive items of one scope (a module, or with
// loadscope a class) and one share, in collection order, and the queue
// keeps that order: each kernel takes the queue's first group it may run,
// so it runs its tests as a subsequence of pytest's order. (The queue was
// once sorted largest group first, for balance: at 2 kernels a module
// then ran after modules that follow it under pytest and changed a global
// default it relied on; pyparsing's suite failed 17 tests so.)
func scopeGroups(items []sharedItem) []testGroup {
	var queue []testGroup
	for j, it := range items {
		if j > 0 && it.Scope == items[j-1].Scope && items[j-1].share == it.share {
			last := &queue[len(queue)-1]
			last.indices = append(last.indices, it.index)
			continue
		}
		queue = append(queue, testGroup{share: it.share, indices: []int{it.index}})
	}
	return queue
}

// loadChunkDiv: a chunk of --dist load is the tests not yet handed out
// over loadChunkDiv times the kernels. Small, because test times are
// skewed (numpy's random suite: its first module holds two thirds of the
// time; with 2 as the divisor one chunk of it outlasted everything else):
// measured on that suite with 2 kernels, divisors 2, 4, 8 and 16 ran in
// 8.9, 8.5, 7.5 and 6.4 s, and smaller chunks gained nothing more. A
// chunk costs one request; the fixtures it shares with its neighbours
// cost nothing more (see loadChunks).
const loadChunkDiv = 16

// loadChunks is the queue of --dist load (pytest-xdist's default mode):
// the items in collection order, cut into consecutive chunks whose sizes
// shrink as the suite is handed out (guided self-scheduling), so that the
// last ones, a test or a few each, even out the kernels' ends without
// knowing any test's time. A chunk holds one share's items; with split
// collection also one file's, as a kernel that steals a chunk collects
// only its module.
//
// A kernel takes chunks in collection order, so it never comes back to a
// module or class after it left it: each module- or class-scoped fixture
// is set up at most once per kernel, as under xdist, however small the
// chunks (a kernel lost mid-run puts its chunk back at the front: its
// taker may then set them up again).
func loadChunks(items []sharedItem, workers int, split bool) []testGroup {
	var queue []testGroup
	size := 0 // the current chunk's target
	for j, it := range items {
		if j > 0 {
			last := &queue[len(queue)-1]
			same := items[j-1].share == it.share && (!split || items[j-1].Path == it.Path)
			if same && len(last.indices) < size {
				last.indices = append(last.indices, it.index)
				continue
			}
		}
		left := len(items) - j
		size = max(1, (left+loadChunkDiv*workers-1)/(loadChunkDiv*workers))
		queue = append(queue, testGroup{share: it.share, indices: []int{it.index}})
	}
	return queue
}

// oneCall is the queue of a run whose one kernel runs every test (no
// other kernel, none late to join): the groups of each share joined into
// one, in the same order, so that the kernel gets them in one request.
// Nothing could take a group from it, and each request costs a round
// trip, two wake-ups of processes that a loaded machine makes wait.
func oneCall(queue []testGroup) []testGroup {
	var out []testGroup
	for _, g := range queue {
		if n := len(out); n > 0 && out[n-1].share == g.share {
			out[n-1].indices = append(out[n-1].indices, g.indices...)
			continue
		}
		out = append(out, testGroup{share: g.share, indices: slices.Clone(g.indices)})
	}
	return out
}
