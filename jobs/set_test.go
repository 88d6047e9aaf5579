package jobs_test

import (
	"slices"
	"testing"

	"github.com/ripple-run/ripple/jobs"
)

func TestSetOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		items []string
		want  []string
		empty bool
	}{
		{name: "none", items: nil, want: nil, empty: true},
		{name: "sorted", items: []string{"b", "a", "c"}, want: []string{"a", "b", "c"}},
		{name: "duplicates dropped", items: []string{"b", "a", "b", "a"}, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := jobs.SetOf(tt.items...)
			if !slices.Equal(s.Items(), tt.want) || s.IsEmpty() != tt.empty || s.IsAll() {
				t.Fatalf("SetOf(%q) = %v (empty %v, all %v), want %q", tt.items, s, s.IsEmpty(), s.IsAll(), tt.want)
			}
			for _, item := range tt.items {
				if !s.Contains(item) {
					t.Errorf("%v does not contain %q", s, item)
				}
			}
			if s.Contains("zz") {
				t.Errorf("%v contains zz", s)
			}
		})
	}
}

func TestSetOfDoesNotRetainItems(t *testing.T) {
	t.Parallel()
	items := []string{"b", "a"}
	s := jobs.SetOf(items...)
	items[0], items[1] = "x", "y"
	if !s.Equal(jobs.SetOf("a", "b")) {
		t.Fatalf("SetOf kept the caller's slice: %v", s)
	}
}

func TestSetUnion(t *testing.T) {
	t.Parallel()
	all := jobs.All[string]()
	tests := []struct {
		name   string
		s, o   jobs.Set[string]
		want   jobs.Set[string]
		String string
	}{
		{"empty with empty", jobs.Set[string]{}, jobs.Set[string]{}, jobs.Set[string]{}, "{}"},
		{"empty with items", jobs.Set[string]{}, jobs.SetOf("a"), jobs.SetOf("a"), "{a}"},
		{"items with empty", jobs.SetOf("a"), jobs.Set[string]{}, jobs.SetOf("a"), "{a}"},
		{"disjoint", jobs.SetOf("a", "c"), jobs.SetOf("b", "d"), jobs.SetOf("a", "b", "c", "d"), "{a, b, c, d}"},
		{"overlapping", jobs.SetOf("a", "b"), jobs.SetOf("b", "c"), jobs.SetOf("a", "b", "c"), "{a, b, c}"},
		{"subset", jobs.SetOf("a", "b"), jobs.SetOf("b"), jobs.SetOf("a", "b"), "{a, b}"},
		{"all wins on the right", jobs.SetOf("a"), all, all, "all"},
		{"all wins on the left", all, jobs.SetOf("a"), all, "all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.s
			got.Union(tt.o)
			if !got.Equal(tt.want) {
				t.Fatalf("%v ∪ %v = %v, want %v", tt.s, tt.o, got, tt.want)
			}
			if got.String() != tt.String {
				t.Errorf("String() = %q, want %q", got.String(), tt.String)
			}
		})
	}
}

// A copy of a set must not see a later union of the original (the storage
// is copy-on-write even when the backing array has spare capacity).
func TestSetUnionDoesNotWriteSharedStorage(t *testing.T) {
	t.Parallel()
	s := jobs.SetOf("b", "d")
	s.Union(jobs.SetOf("a")) // s now owns its array
	s.Union(jobs.SetOf("e"))
	snapshot := s
	s.Union(jobs.SetOf("c"))
	if !snapshot.Equal(jobs.SetOf("a", "b", "d", "e")) {
		t.Fatalf("copy changed by a later union: %v", snapshot)
	}
	if !s.Equal(jobs.SetOf("a", "b", "c", "d", "e")) {
		t.Fatalf("union = %v", s)
	}
}

func TestSetUnionOfHeldItemsDoesNotAllocate(t *testing.T) {
	s := jobs.SetOf[jobs.ExpressionID]("m:f/a", "m:f/b", "m:f/c")
	o := jobs.SetOf[jobs.ExpressionID]("m:f/b", "m:f/c")
	allocs := testing.AllocsPerRun(100, func() { s.Union(o) })
	if allocs != 0 {
		t.Fatalf("Union of held items: %v allocations, want 0", allocs)
	}
}
