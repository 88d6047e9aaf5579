package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

// A statement's kept output: stream text merged, displays apart, cleared
// when the statement runs again, replayed once per client, cut at the cap
// with one note.
func TestKeptOutputs(t *testing.T) {
	var k keptOutputs
	const id, x, y = protocol.ContextID("c"), protocol.ExpressionID("m:f/x"), protocol.ExpressionID("m:f/y")
	k.add(id, x, keptItem{Stream: protocol.Stdout, Text: []byte("a")})
	k.add(id, x, keptItem{Stream: protocol.Stdout, Text: []byte("b")})
	k.add(id, x, keptItem{Data: []byte(`{"text/plain":"1"}`)})
	k.add(id, "", keptItem{Stream: protocol.Stdout, Text: []byte("no statement")})
	k.add(id, y, keptItem{Stream: protocol.Stderr, Text: []byte("e")})
	k.markShown(id, []string{"ide"})
	if got := k.toReplay(id, "ide", []protocol.ExpressionID{x, y}); got != nil {
		t.Errorf("a client that saw the output gets %v", got)
	}
	got := k.toReplay(id, "tab", []protocol.ExpressionID{x, y})
	if len(got[x]) != 2 || string(got[x][0].Text) != "ab" || got[x][1].Data == nil || string(got[y][0].Text) != "e" {
		t.Errorf("replayed %+v", got)
	}
	if again := k.toReplay(id, "tab", []protocol.ExpressionID{x}); again != nil {
		t.Errorf("replayed twice: %v", again)
	}
	k.started(id, []protocol.ExpressionUpdate{{ExpressionID: x, Payload: protocol.Payload{Type: protocol.PayloadPending, Message: protocol.MessageRunning}}})
	if got := k.toReplay(id, "third", []protocol.ExpressionID{x, y}); len(got[x]) != 0 || len(got[y]) != 1 {
		t.Errorf("after x ran again: %+v", got)
	}
	big := []byte(strings.Repeat("z", keptOutputCap/2+1))
	k.add(id, x, keptItem{Stream: protocol.Stdout, Text: big})
	k.add(id, x, keptItem{Stream: protocol.Stdout, Text: big})
	k.add(id, x, keptItem{Stream: protocol.Stdout, Text: big})
	got = k.toReplay(id, "fourth", []protocol.ExpressionID{x})
	if n := len(got[x]); n != 2 || !strings.Contains(string(got[x][1].Text), "not kept") || len(got[x][0].Text) != len(big) {
		t.Errorf("over the cap: %d items", n)
	}
	k.forget(id)
	if got := k.toReplay(id, "fifth", []protocol.ExpressionID{x}); len(got) != 0 {
		t.Errorf("after forget: %v", got)
	}
}

// The contexts whose cached values read a changed file.
func TestReadSets(t *testing.T) {
	var r readSets
	r.set("b", []string{"/p/data/z.csv", "/p/data/a.csv"})
	r.set("a", []string{"/p/data/a.csv"})
	r.set("c", []string{"/p/other.txt"})
	if got := r.readers([]string{"/p/data/a.csv"}); !slices.Equal(got, []protocol.ContextID{"a", "b"}) {
		t.Errorf("readers of a.csv: %v", got)
	}
	if got := r.readers([]string{"/p/data/z.csv", "/p/none"}); !slices.Equal(got, []protocol.ContextID{"b"}) {
		t.Errorf("readers of z.csv: %v", got)
	}
	r.set("b", nil)
	if got := r.readers([]string{"/p/data/z.csv"}); len(got) != 0 {
		t.Errorf("after b read nothing: %v", got)
	}
}
