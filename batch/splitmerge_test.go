package batch

import (
	"hash/fnv"
	"slices"
	"testing"
)

// The merge of two kernels' split collections: items in file order then
// each kernel's order, a file every kernel collected (owner -1) counted
// once from the share its name hashes to, collection reports by the
// owning share (share 0 for a directory's), and the checks that make the
// run collect everything instead.
func TestMergeSplit(t *testing.T) {
	files := []string{"a/test_x.py", "b/test_y.py", "doc.txt", "test_z.py"}
	owners := []int{1, 0, -1, 1}
	h := fnv.New64a()
	h.Write([]byte("doc.txt"))
	docShare := int(h.Sum64() % 2)
	item := func(id string, file int) testItem { return testItem{NodeID: id, File: file} }
	report := func(id string, file, pos int) testItem {
		return testItem{NodeID: id, File: file, Pos: pos, Status: "error"}
	}
	k0 := &collectAnswer{Split: &splitAnswer{Share: 0, Shares: 2}, Files: files, Owners: owners,
		Items:          []testItem{item("b/test_y.py::t2", 1), item("b/test_y.py::t1", 1), item("doc.txt::d", 2)},
		CollectReports: []testItem{report("a", -1, 1)}}
	k1 := &collectAnswer{Split: &splitAnswer{Share: 1, Shares: 2}, Files: files, Owners: owners,
		Items:          []testItem{item("a/test_x.py::t", 0), item("doc.txt::d", 2), item("test_z.py::C::t", 3), item("test_z.py::C::s", 3)},
		CollectReports: []testItem{report("a", -1, 1), report("a/test_x.py::C", 0, 1), report("test_z.py", 3, 4)}}
	answers, shares := []*collectAnswer{k1, k0}, []int{1, 0}
	if why := splitFallback(answers, shares, 2); why != "" {
		t.Fatalf("splitFallback: %s", why)
	}
	items, reports := mergeSplit(answers, shares, 2)
	var ids []string
	for _, it := range items {
		ids = append(ids, it.NodeID)
		if it.NodeID == "doc.txt::d" && it.share != docShare {
			t.Errorf("doc.txt::d from share %d, want %d (its hash)", it.share, docShare)
		}
	}
	want := []string{"a/test_x.py::t", "b/test_y.py::t2", "b/test_y.py::t1", "doc.txt::d", "test_z.py::C::t", "test_z.py::C::s"}
	if !slices.Equal(ids, want) {
		t.Errorf("items %q, want %q", ids, want)
	}
	ids = nil
	for _, r := range reports {
		ids = append(ids, r.NodeID+"@"+string(rune('0'+r.share)))
	}
	if want := []string{"a/test_x.py::C@1", "a@0", "test_z.py@1"}; !slices.Equal(ids, want) {
		t.Errorf("reports %q, want %q", ids, want)
	}

	for _, c := range []struct {
		name    string
		answers []*collectAnswer
		shares  []int
	}{
		{"off", []*collectAnswer{{Split: &splitAnswer{Off: "--collect-only"}}, k0}, []int{1, 0}},
		{"unsafe", []*collectAnswer{k1, {Split: &splitAnswer{Share: 0, Shares: 2, Unsafe: "reordered"}, Files: files, Owners: owners}}, shares},
		{"no split", []*collectAnswer{k1, {}}, shares},
		{"other files", []*collectAnswer{k1, {Split: &splitAnswer{Share: 0, Shares: 2}, Files: files[:3], Owners: owners[:3]}}, shares},
		{"same share twice", []*collectAnswer{k1, k1}, []int{1, 1}},
		{"a share missing", []*collectAnswer{k1}, []int{1}},
	} {
		if why := splitFallback(c.answers, c.shares, 2); why == "" {
			t.Errorf("%s: the split was accepted", c.name)
		}
	}
}
