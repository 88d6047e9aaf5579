package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/workspace"
)

// A buffer recorded as a full entry and then as deltas folds back to the
// last state, whatever the edits; a delta of another entry (the text came
// back to an old entry's version, then the entry was rewritten) is
// ignored; a delta that does not give its version restores the entry
// alone, with an error naming the buffer.
func TestBufferDeltasFoldToTheLastState(t *testing.T) {
	var d durableState
	state := func(content string) workspace.BufferState {
		return workspace.BufferState{Path: "m.py", Content: content, Version: workspace.VersionOf(content), Clients: []workspace.ClientID{"c"}}
	}
	record := func(content string) (kind string, full, delta []byte) {
		ev, base, err := d.bufferEvent(state(content))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == KindBuffer {
			d.setBase("m.py", base)
		}
		return ev.Kind, ev.Data, nil
	}
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "x%d = %d\n", i, i)
	}
	text := b.String()
	kind, full, _ := record(text)
	if kind != KindBuffer {
		t.Fatalf("first record is %s, want a full entry", kind)
	}
	var last []byte
	deltas := 0
	for i, edit := range []func(string) string{
		func(s string) string { return strings.Replace(s, "x1 = 1", "x1 = 9", 1) },  // typing near the top
		func(s string) string { return strings.Replace(s, "x1 = 9", "x1 = 95", 1) }, // and on there
		func(s string) string { return strings.Replace(s, "x2 = 2\n", "", 1) },      // a deletion there
		func(s string) string { return s + "y = 2\n" },                              // far away: a new entry
		func(s string) string { return s[:len(s)-1] + "🎉\n" },                       // then deltas again
		func(s string) string { return s[:len(s)-6] + s[len(s)-5:] },                // a deletion inside a line
	} {
		text = edit(text)
		var data []byte
		kind, data, _ = record(text)
		if kind == KindBuffer {
			full, last = data, nil
			continue
		}
		deltas++
		last = data
		if len(last) > 300 {
			t.Fatalf("edit %d: a delta of %d bytes for a small change", i, len(last))
		}
		got, err := savedBufferState("m.py", full, last)
		if err != nil || got.Content != text || got.Version != workspace.VersionOf(text) {
			t.Fatalf("edit %d folds to %d bytes (%v), want the buffer's text", i, len(got.Content), err)
		}
	}
	if deltas != 5 {
		t.Fatalf("%d of 6 edits recorded as deltas, want 5 (one far edit rebases)", deltas)
	}
	// A change of most of the buffer is a full entry with a new base.
	text = strings.Repeat("z = 3\n", 3000)
	if kind, full2, _ := record(text); kind != KindBuffer {
		t.Fatalf("a rewrite recorded as %s, want a full entry", kind)
	} else if got, err := savedBufferState("m.py", full2, last); err != nil || got.Content != text {
		t.Fatalf("the new entry with the old entry's delta: %q, %v; want the new entry alone", got.Content[:10], err)
	}
	// A delta that does not give its version: the entry alone, and an
	// error naming the buffer.
	var bd bufferDelta
	if err := json.Unmarshal(last, &bd); err != nil {
		t.Fatal(err)
	}
	bd.Text += "tampered"
	bad, _ := json.Marshal(bd)
	got, err := savedBufferState("m.py", full, bad)
	if err == nil || !strings.Contains(err.Error(), "m.py") {
		t.Fatalf("a delta that does not give its version: %v, want an error naming m.py", err)
	}
	var entry savedBuffer
	if err := json.Unmarshal(full, &entry); err != nil {
		t.Fatal(err)
	}
	if got.Content != entry.Content {
		t.Fatal("a bad delta did not leave the entry's own content")
	}
}
