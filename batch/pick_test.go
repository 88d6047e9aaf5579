package batch

import (
	"slices"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

func entriesOf(modules ...string) []Entry {
	es := make([]Entry, len(modules))
	for i, m := range modules {
		es[i] = Entry{Pointer: protocol.MethodPointer{Module: m, Name: "test"}}
	}
	return es
}

// The picker keeps a kernel on its module, gives a free kernel a module
// nobody runs, and shares the biggest module when none is free.
func TestPickerModuleAffinity(t *testing.T) {
	p := newPicker(entriesOf("a", "a", "a", "b", "b", "c"))
	if i := p.take(""); i != 0 {
		t.Fatalf("first take = %d, want 0 (a)", i)
	}
	p.active["a"]++
	if i := p.take(""); i != 3 {
		t.Fatalf("a free kernel got %d, want 3 (b: nobody runs it)", i)
	}
	p.active["b"]++
	if i := p.take("a"); i != 1 {
		t.Fatalf("a's kernel got %d, want 1 (a again)", i)
	}
	p.active["a"]++
	if i := p.take(""); i != 5 {
		t.Fatalf("a third kernel got %d, want 5 (c)", i)
	}
	p.active["c"]++
	// c is done for its kernel: nothing is free, so it shares the module
	// with the most entries left (a and b have one each: a comes first).
	if i := p.take("c"); i != 2 {
		t.Fatalf("c's kernel got %d, want 2 (a, shared)", i)
	}
	if i := p.take("b"); i != 4 || p.left != 0 {
		t.Fatalf("b's kernel got %d (left %d), want 4 and nothing left", i, p.left)
	}
}

// Every entry is taken exactly once whatever the preferences.
func TestPickerTakesEachEntryOnce(t *testing.T) {
	es := entriesOf("m1", "m2", "m1", "m3", "m2", "m2", "m4", "m1")
	p := newPicker(es)
	var got []int
	prefs := []string{"", "m2", "x", "m4", "", "m1", "m3", "m2"}
	for k := 0; p.left > 0; k++ {
		got = append(got, p.take(prefs[k%len(prefs)]))
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("taken %v", got)
	}
}
