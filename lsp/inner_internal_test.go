package lsp

import (
	"strings"
	"testing"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
)

// TestInnerHints: a compound statement's inner values get hints of their
// own at their ends, "×N" for one that ran more than once; one without a
// value to show (an attribute's augmented assignment) or whose value says
// nothing (a print's None) gets none; none while the statement is pending.
func TestInnerHints(t *testing.T) {
	t.Parallel()
	text := "def main():\n    for i in range(3):\n        sq = i * i\n        print(sq)\n        o.n += 1\n    if True:\n        raise_it = 1 / 0\n"
	at := func(line, from, to int) protocol.Range {
		return protocol.Range{Start: protocol.Position{Line: line, Character: from}, End: protocol.Position{Line: line, Character: to}}
	}
	loop := stmt("#1", 1, protocol.ValuePayload("None"))
	loop.Type = "builtins.NoneType"
	loop.Inner = []protocol.InnerValue{
		{Range: at(2, 8, 18), Type: "builtins.int", Preview: "4", Count: 3},
		{Range: at(3, 8, 17), Type: "builtins.NoneType", Preview: "None", Count: 3},
		{Range: at(4, 8, 16), Count: 3},
	}
	cond := stmt("#2", 5, protocol.PanicPayload("ZeroDivisionError: division by zero"))
	cond.Inner = []protocol.InnerValue{{Range: at(6, 8, 24), Panic: "ZeroDivisionError: division by zero"}}
	e := testEntry(loop, cond)
	pos := func(p protocol.Position) lsproto.Position {
		return lsproto.Position{Line: uint32(p.Line), Character: uint32(p.Character)}
	}
	hints := e.innerHints(text, loop, 0, 10, false, pos)
	if len(hints) != 1 {
		t.Fatalf("loop hints %+v, want one (sq's)", hints)
	}
	if h := hints[0]; h.Label != lsproto.String("= 4 ×3") || h.Position != (lsproto.Position{Line: 2, Character: 18}) {
		t.Errorf("sq's hint %+v, want \"= 4 ×3\" at 2:18", h)
	}
	if tip := hints[0].Tooltip.(*lsproto.MarkupContent).Value; !strings.Contains(tip, "the last value in 3 runs of the statement at line 2") {
		t.Errorf("sq's tooltip %q", tip)
	}
	if got := e.innerHints(text, loop, 3, 10, false, pos); len(got) != 0 {
		t.Errorf("hints out of the lines asked for: %+v", got)
	}
	if got := e.innerHints(text, loop, 0, 10, true, pos); len(got) != 0 {
		t.Errorf("hints while a run is pending: %+v", got)
	}
	raised := e.innerHints(text, cond, 0, 10, false, pos)
	if len(raised) != 1 || raised[0].Label != lsproto.String("✗ ZeroDivisionError: division by zero") {
		t.Errorf("the raising inner statement's hints %+v", raised)
	}
}
