package jupyter

import (
	"slices"
	"strings"
	"testing"
)

func TestCellsBecomeTheScript(t *testing.T) {
	st := notebookState{Outputs: map[string][]outputItem{}}
	a := st.place(slotKey("", "a = 1"), "a = 1")
	b := st.place(slotKey("cell-b", "b = a\nc = b"), "b = a\nc = b\n")
	if a != 0 || b != 1 {
		t.Fatalf("slots %d %d", a, b)
	}
	// The same text without an id is the same cell; with an id the id
	// decides, whatever the text.
	if i := st.place(slotKey("", "a = 1"), "a = 1"); i != 0 {
		t.Fatalf("same text: slot %d", i)
	}
	if i := st.place(slotKey("cell-b", "b = 2 * a"), "b = 2 * a\nc = b\nd = c\n"); i != 1 {
		t.Fatalf("same id: slot %d", i)
	}
	if i := st.place(slotKey("", "a = 2"), "a = 2"); i != 2 {
		t.Fatalf("new text without id: slot %d, want a new one", i)
	}
	script, starts := st.script()
	if script != "a = 1\nb = 2 * a\nc = b\nd = c\na = 2\n" {
		t.Fatalf("script %q", script)
	}
	if want := []int{0, 1, 4, 5}; !slices.Equal(starts, want) {
		t.Fatalf("starts %v, want %v", starts, want)
	}
	if slotOf(starts, 0) != 0 || slotOf(starts, 3) != 1 || slotOf(starts, 4) != 2 || slotOf(starts, 5) != -1 {
		t.Fatal("slotOf")
	}
	// A statement that raised at line 2 (c = b) is cut with the rest of
	// its cell.
	st.cut(starts, 1, 2)
	if script, _ := st.script(); script != "a = 1\nb = 2 * a\na = 2\n" {
		t.Fatalf("after the cut: %q", script)
	}
}

func TestKeptOutputIsCapped(t *testing.T) {
	st := notebookState{Outputs: map[string][]outputItem{}}
	st.keepOutput("m:__main__/x", []outputItem{{Kind: "stdout", Text: "small\n"}})
	if got := st.Outputs["m:__main__/x"]; len(got) != 1 || got[0].Text != "small\n" {
		t.Fatalf("kept %+v", got)
	}
	big := strings.Repeat("é", outputCap) // 2 bytes each: twice the cap
	st.keepOutput("m:__main__/y", []outputItem{{Kind: "stdout", Text: "head\n"}, {Kind: "stdout", Text: big}})
	got := st.Outputs["m:__main__/y"]
	if len(got) != 3 || got[0].Text != "head\n" || len(got[1].Text) > outputCap || !strings.HasPrefix(big, got[1].Text) ||
		!strings.Contains(got[2].Text, "was not kept") {
		t.Fatalf("capped output: %d items, %d bytes", len(got), len(got[1].Text))
	}
	st.keepOutput("m:__main__/x", nil)
	if _, ok := st.Outputs["m:__main__/x"]; ok {
		t.Fatal("a statement that now shows nothing keeps its old output")
	}
	dir := t.TempDir()
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := loadState(dir)
	if err != nil || len(back.Outputs["m:__main__/y"]) != 3 {
		t.Fatalf("state round trip: %v", err)
	}
}
