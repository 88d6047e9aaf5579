package batch

import (
	"slices"
	"testing"
)

// loadChunks (--dist load): every item once, in collection order; chunk
// sizes never grow and end at one test, the first is the items over
// loadChunkDiv times the kernels; a chunk never spans two shares, nor with
// split collection two files.
func TestLoadChunks(t *testing.T) {
	items := func(n int, share func(i int) int, path func(i int) string) []sharedItem {
		var out []sharedItem
		for i := range n {
			out = append(out, sharedItem{testItem: testItem{Path: path(i)}, share: share(i), index: i})
		}
		return out
	}
	check := func(name string, its []sharedItem, workers int, split bool) []testGroup {
		t.Helper()
		q := loadChunks(its, workers, split)
		var order []int
		for k, g := range q {
			if len(g.indices) == 0 {
				t.Fatalf("%s: chunk %d is empty", name, k)
			}
			for _, i := range g.indices {
				if its[i].share != g.share || (split && its[i].Path != its[g.indices[0]].Path) {
					t.Errorf("%s: chunk %d mixes shares or files: %v", name, k, g.indices)
				}
			}
			order = append(order, g.indices...)
		}
		want := make([]int, len(its))
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(order, want) {
			t.Errorf("%s: the chunks hold %v, want every item once in collection order", name, order)
		}
		return q
	}

	one := func(int) int { return 0 }
	file := func(i int) string { return []string{"a.py", "b.py"}[min(i/700, 1)] }
	q := check("1000 tests, 2 kernels", items(1000, one, file), 2, false)
	if got, want := len(q[0].indices), (1000+loadChunkDiv*2-1)/(loadChunkDiv*2); got != want {
		t.Errorf("first chunk %d tests, want %d", got, want)
	}
	for k := 1; k < len(q); k++ {
		if len(q[k].indices) > len(q[k-1].indices) {
			t.Errorf("chunk %d (%d tests) is larger than chunk %d (%d)", k, len(q[k].indices), k-1, len(q[k-1].indices))
		}
	}
	if last := q[len(q)-1]; len(last.indices) != 1 {
		t.Errorf("the last chunk has %d tests, want 1", len(last.indices))
	}
	// Without split a chunk may cross from a.py into b.py.
	crosses := slices.ContainsFunc(q, func(g testGroup) bool { return file(g.indices[0]) != file(g.indices[len(g.indices)-1]) })
	if !crosses {
		t.Error("no chunk crosses a file boundary without split collection; the sizes alone should cut")
	}

	check("split: two shares", items(1000, func(i int) int { return i % 3 / 2 }, file), 2, true)
	check("split: files", items(1000, one, file), 4, true)
	check("one test", items(1, one, file), 2, false)
	if q := loadChunks(nil, 2, false); len(q) != 0 {
		t.Errorf("no items: %d chunks", len(q))
	}
}

// scopeGroups (--dist loadfile and loadscope): consecutive items of one
// scope and one share form a group in collection order, whatever the
// kernels: a kernel's tests are a subsequence of pytest's order.
func TestScopeGroups(t *testing.T) {
	item := func(scope string, share, index int) sharedItem {
		return sharedItem{testItem: testItem{Scope: scope}, share: share, index: index}
	}
	items := []sharedItem{item("a.py", 0, 0), item("b.py", 0, 1), item("b.py", 0, 2), item("b.py", 1, 0), item("c.py", 1, 1), item("c.py", 1, 2), item("a.py", 0, 3)}
	want := []testGroup{{0, []int{0}}, {0, []int{1, 2}}, {1, []int{0}}, {1, []int{1, 2}}, {0, []int{3}}}
	if got := scopeGroups(items); !slices.EqualFunc(got, want, equalGroups) {
		t.Errorf("%v, want %v", got, want)
	}
}

func equalGroups(a, b testGroup) bool {
	return a.share == b.share && slices.Equal(a.indices, b.indices)
}

// oneCall joins a lone kernel's groups into one request per share, the
// order kept.
func TestOneCall(t *testing.T) {
	q := oneCall([]testGroup{{0, []int{0, 1}}, {0, []int{2}}, {1, []int{0}}, {1, []int{1, 2}}, {0, []int{3}}})
	want := []testGroup{{0, []int{0, 1, 2}}, {1, []int{0, 1, 2}}, {0, []int{3}}}
	if len(q) != len(want) {
		t.Fatalf("oneCall = %v, want %v", q, want)
	}
	for i := range q {
		if q[i].share != want[i].share || !slices.Equal(q[i].indices, want[i].indices) {
			t.Errorf("oneCall = %v, want %v", q, want)
		}
	}
}
