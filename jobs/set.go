package jobs

import (
	"cmp"
	"fmt"
	"slices"
)

// Set is a set of module names or expression ids as job requests carry
// them: either "all" or a finite set of items.
//
// A Set is a value with copy-on-write storage: Union never writes into an
// array another copy may share (it allocates a new one when it must insert),
// so Sets can be copied and passed around freely. Union of a set with items
// it already holds does not allocate, which keeps collapsing enqueues free of
// allocations. The zero Set is empty (no item, not all).
type Set[T cmp.Ordered] struct {
	all bool
	// items is sorted and free of duplicates; nil when all is set. Its
	// backing array is never written after the Set that made it is built.
	items []T
}

// ModuleSet is a set of dotted module names.
type ModuleSet = Set[Module]

// ExpressionSet is a set of expression ids.
type ExpressionSet = Set[ExpressionID]

// All returns the set of every item.
func All[T cmp.Ordered]() Set[T] { return Set[T]{all: true} }

// SetOf returns the set of the given items (duplicates are dropped). The
// items slice is copied, never retained.
func SetOf[T cmp.Ordered](items ...T) Set[T] {
	if len(items) == 0 {
		return Set[T]{}
	}
	sorted := slices.Clone(items)
	slices.Sort(sorted)
	return Set[T]{items: slices.Clip(slices.Compact(sorted))}
}

// IsAll reports whether the set holds every item.
func (s Set[T]) IsAll() bool { return s.all }

// IsEmpty reports whether the set holds no item at all.
func (s Set[T]) IsEmpty() bool { return !s.all && len(s.items) == 0 }

// Len is the number of items of a finite set; 0 for All.
func (s Set[T]) Len() int { return len(s.items) }

// Items returns the items of a finite set in ascending order (nil for All).
// The slice is shared: callers must not modify it.
func (s Set[T]) Items() []T { return s.items }

// Contains reports whether the set holds item.
func (s Set[T]) Contains(item T) bool {
	if s.all {
		return true
	}
	_, found := slices.BinarySearch(s.items, item)
	return found
}

// Equal reports whether both sets hold the same items.
func (s Set[T]) Equal(o Set[T]) bool {
	return s.all == o.all && slices.Equal(s.items, o.items)
}

// Union adds every item of o to s; "all" wins. It allocates only when o
// holds items s does not.
func (s *Set[T]) Union(o Set[T]) {
	switch {
	case s.all:
		return
	case o.all:
		*s = Set[T]{all: true}
		return
	}
	missing := 0
	for _, item := range o.items {
		if _, found := slices.BinarySearch(s.items, item); !found {
			missing++
		}
	}
	if missing == 0 {
		return
	}
	// Merge into a fresh array: the old one may be shared with copies.
	merged := make([]T, 0, len(s.items)+missing)
	a, b := s.items, o.items
	for len(a) > 0 && len(b) > 0 {
		switch c := cmp.Compare(a[0], b[0]); {
		case c < 0:
			merged, a = append(merged, a[0]), a[1:]
		case c > 0:
			merged, b = append(merged, b[0]), b[1:]
		default:
			merged, a, b = append(merged, a[0]), a[1:], b[1:]
		}
	}
	merged = append(append(merged, a...), b...)
	s.items = merged
}

// String renders the set for logs and test failures: "all" or "{a, b}".
func (s Set[T]) String() string {
	if s.all {
		return "all"
	}
	buf := []byte{'{'}
	for i, item := range s.items {
		if i > 0 {
			buf = append(buf, ", "...)
		}
		buf = fmt.Append(buf, item)
	}
	return string(append(buf, '}'))
}
