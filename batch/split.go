package batch

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"
)

// Split collection: each kernel of a test run collects (imports) only the
// test modules it runs, instead of the whole suite.
//
// Which kernel collects a test module is decided in the kernels, before
// anything is imported, the same way on each (kernel/python/ripple_kernel/pytest_plugin.py,
// _Split): a pre-pass lists the candidate test files as pytest would find
// them and deals them out over the run's shares (one per kernel at its
// start) by size; a module it did not foresee goes by the hash of its path.
// pytest's hooks then make a kernel skip the modules of other shares while
// it still walks the whole tree (directories, packages' __init__.py and
// conftest.py are collected everywhere), so every kernel reports the same
// files in the same collection order, each with its owning share.
//
// Here the kernels' collections are merged (mergeSplit): the union is the
// suite, in pytest's order (by file in collection order, then each file's
// items in its kernel's order; a file every kernel collected, such as a
// doctest text file, counts once, from the share its name hashes to), and
// a collection error is reported by the kernel whose share has the file
// (an error of a directory's conftest.py, which every kernel reports, by
// share 0).
//
// The split is asked for (Options.SplitCollection, ripple run
// --split-collection): a test module's import side effects reach only the
// tests of the kernel that imported it, where pytest imports every module
// before it runs any test, so a suite whose tests rely on another
// module's import would differ. It is off, and every kernel collects the
// whole suite, when:
//   - it is not asked for, or -p no:ripple-split among pytest's arguments
//     (or the ini file's addopts), or the run has one kernel, or pytest is
//     missing;
//   - a kernel says an option needs the whole collection (--collect-only,
//     --lf, --ff, --nf, --sw, --doctest-modules, --keep-duplicates,
//     --pyargs, a reordering plugin such as pytest-randomly): it then
//     collected everything already;
//   - the collections cannot be merged in pytest's order (splitFallback: a
//     pytest_collection_modifyitems hook reordered the items, the kernels
//     saw different files) or a kernel was lost while it collected: the
//     kernels that split collect again, everything. Slower, never wrong.
//
// Scheduling with shares (testRun.next): a kernel runs only groups of the
// share its session collected. A kernel that finished its share steals:
// it takes the first queued group of a share that has more than
// one group left and opens a session that collects only that group's
// module (split "only"; its items are mapped to the share's by node id,
// stolen), runs it and ends that session. The size of a file says little
// about how long its tests run, so without stealing one kernel could be
// left with most of the work. When a kernel is gone for good (it could
// not be replaced, its agent was lost), its share has no session left,
// and the next idle kernel opens a session that collects that whole share
// (it must collect the same items) and runs what is left of it.

// sharedItem is an item (or a collection report) of the merged collection:
// the share whose session collected it and its index in that session.
type sharedItem struct {
	testItem
	share int
	index int
}

// splitFallback says why the kernels' split collections cannot be merged,
// "" when they can. shares[i] is answers[i]'s share.
func splitFallback(answers []*collectAnswer, shares []int, n int) string {
	seen := make([]bool, n)
	first := answers[0]
	for i, a := range answers {
		switch {
		case a.Split == nil:
			return "a kernel did not split its collection"
		case a.Split.Off != "":
			return a.Split.Off
		case a.Split.Unsafe != "":
			return a.Split.Unsafe
		case a.Split.Shares != n || a.Split.Share != shares[i] || shares[i] < 0 || shares[i] >= n || seen[shares[i]]:
			return "the kernels' shares do not cover the suite"
		case !slices.Equal(a.Files, first.Files) || !slices.Equal(a.Owners, first.Owners) || len(a.Owners) != len(a.Files):
			return "the kernels found different test files"
		}
		seen[shares[i]] = true
	}
	if slices.Contains(seen, false) {
		return "a share has no kernel"
	}
	return ""
}

// mergeSplit is the union of the kernels' split collections, in pytest's
// order: the items, and the collection reports that did not pass.
// splitFallback has accepted them.
func mergeSplit(answers []*collectAnswer, shares []int, n int) (items, reports []sharedItem) {
	files, owners := answers[0].Files, answers[0].Owners
	// owns: whether share s reports what is about file f (-1: no file).
	owns := func(s, f int) bool {
		if f >= 0 && f < len(owners) && owners[f] >= 0 {
			return owners[f] == s
		}
		// Every kernel collected it: the share its name hashes to
		// reports it (share 0 what is about no file).
		if f < 0 || f >= len(files) {
			return s == 0
		}
		h := fnv.New64a()
		h.Write([]byte(files[f]))
		return h.Sum64()%uint64(n) == uint64(s)
	}
	for k, a := range answers {
		s := shares[k]
		for i, it := range a.Items {
			if owns(s, it.File) {
				items = append(items, sharedItem{it, s, i})
			}
		}
		for i, r := range a.CollectReports {
			if owns(s, r.File) {
				reports = append(reports, sharedItem{r, s, i})
			}
		}
	}
	// A file's items come from one share, contiguous and in pytest's
	// order (no hook reordered them).
	slices.SortStableFunc(items, func(a, b sharedItem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.share, b.share), cmp.Compare(a.index, b.index))
	})
	// A report comes when its collector is done: after the files
	// collection had reached then (Pos); a file's own report before its
	// directory's.
	slices.SortStableFunc(reports, func(a, b sharedItem) int {
		return cmp.Or(cmp.Compare(a.Pos, b.Pos), cmp.Compare(noFile(a.File), noFile(b.File)),
			cmp.Compare(a.share, b.share), cmp.Compare(a.index, b.index))
	})
	return items, reports
}

func noFile(f int) int {
	if f < 0 {
		return 1
	}
	return 0
}

// stolen is a session that collected only one module of another kernel's
// share (work stealing): its kernel indices are not the share's.
//
// A late kernel's hand-over (handover.go) is mapped the same way: its
// session collected the handed tests (sel), and, unlike a stolen
// module's, it stays open for every group it has (handOver).
type stolen struct {
	file  string      // the module's node id (a hand-over: what it is, for messages)
	want  []int       // the group's tests (the share's kernel indices)
	share map[int]int // the session's kernel index -> the share's
	own   map[int]int // the share's kernel index -> the session's
	// handOver: a late kernel's hand-over; sel: what its session collects
	// (collectRequest.Select).
	handOver bool
	sel      []string
}

// fileOf is the node id of the module a group's tests are in (a group is
// one module's tests).
func (t *testRun) fileOf(g testGroup) string {
	return t.files[t.shareItems[g.share][g.indices[0]].File]
}

// index maps the session's collection to the share's by node id (byID:
// the share's node id -> kernel index).
func (s *stolen) index(items []testItem, byID map[string]int) error {
	s.share, s.own = make(map[int]int, len(items)), make(map[int]int, len(items))
	for i, it := range items {
		j, ok := byID[it.NodeID]
		if !ok {
			return fmt.Errorf("collecting %s alone, it collected %s, which its kernel did not", s.file, it.NodeID)
		}
		s.share[i], s.own[j] = j, i
	}
	for _, j := range s.want {
		if _, ok := s.own[j]; !ok {
			return fmt.Errorf("collecting %s alone, it did not collect a test its kernel did", s.file)
		}
	}
	return nil
}

// fromShare maps the share's kernel indices to the session's; toShare the
// other way.
func (s *stolen) fromShare(indices []int) []int {
	out := make([]int, 0, len(indices))
	for _, i := range indices {
		if j, ok := s.own[i]; ok {
			out = append(out, j)
		}
	}
	return out
}

func (s *stolen) toShare(indices []int) []int {
	out := make([]int, 0, len(indices))
	for _, i := range indices {
		if j, ok := s.share[i]; ok {
			out = append(out, j)
		}
	}
	return out
}
