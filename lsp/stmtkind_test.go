package lsp

import (
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text   string
		kind   stmtKind
		target string
		rhs    string
		aug    bool
	}{
		{"a = 6", kindAssign, "a", "6", false},
		{"a = b = 6", kindAssign, "a = b", "6", false},
		{`x["q"] += n`, kindAssign, `x["q"]`, "n", true},
		{"n **= 2", kindAssign, "n", "2", true},
		{"n //= 2", kindAssign, "n", "2", true},
		{"n <<= 2", kindAssign, "n", "2", true},
		{"a: int = 6", kindAssign, "a: int", "6", false},
		{"d = {'k': (1, 'x=2')}  # c = 3", kindAssign, "d", "{'k': (1, 'x=2')}  # c = 3", false},
		{"print(a, sep='=')", kindExpr, "", "", false},
		{"f(x=1)", kindExpr, "", "", false},
		{"a == b", kindExpr, "", "", false},
		{"a <= b", kindExpr, "", "", false},
		{"(y := 2)", kindExpr, "", "", false},
		{"for i in range(3):\n    s = i", kindCompound, "", "", false},
		{"if a:\n    b = 1", kindCompound, "", "", false},
		{"with open(p) as f:\n    x = f.read()", kindCompound, "", "", false},
		{"return a", kindOther, "", "", false},
		{"import os", kindOther, "", "", false},
	} {
		got := classify(c.text)
		if got.kind != c.kind || got.target != c.target || got.rhs != c.rhs || got.aug != c.aug {
			t.Errorf("classify(%q) = %+v, want kind %d target %q rhs %q aug %v", c.text, got, c.kind, c.target, c.rhs, c.aug)
		}
	}
}

func TestHoverSpan(t *testing.T) {
	t.Parallel()
	text := "def main():\n    total = 1 + 2\n    print(total)\n    for i in x:\n        pass\n    return total\n"
	r := func(l1, c1, l2, c2 int) protocol.Range {
		return protocol.Range{Start: protocol.Position{Line: l1, Character: c1}, End: protocol.Position{Line: l2, Character: c2}}
	}
	for _, c := range []struct {
		stmt protocol.Range
		want protocol.Range
		ok   bool
	}{
		{r(1, 4, 1, 17), r(1, 4, 1, 9), true},     // the target only
		{r(2, 4, 2, 16), r(2, 4, 2, 16), true},    // the expression
		{r(3, 4, 4, 12), r(3, 4, 3, 7), true},     // the keyword
		{r(5, 4, 5, 16), protocol.Range{}, false}, // a return: not ours
	} {
		got, ok := hoverSpan(text, c.stmt)
		if got != c.want || ok != c.ok {
			t.Errorf("hoverSpan(%v) = %v, %v; want %v, %v", c.stmt, got, ok, c.want, c.ok)
		}
	}
}

// TestQuietHints: the hint noise of the issue (`= None` on calls, for and
// if headers and prints; `a = 6 = 6`) is not shown; an assignment of None
// and an augmented assignment are.
func TestQuietHints(t *testing.T) {
	t.Parallel()
	text := "print(a)\nf()\nfor i in x:\n    pass\na = 6\nb = f()\nc += 1\nd = a * 7\n"
	val := func(line, end int, typ, preview string, endLine int) protocol.ExpressionUpdate {
		u := stmt("s", line, protocol.ValuePayload(preview))
		u.Type = typ
		u.Range = &protocol.Range{Start: protocol.Position{Line: line}, End: protocol.Position{Line: endLine, Character: end}}
		return u
	}
	none := "builtins.NoneType"
	for _, c := range []struct {
		u     protocol.ExpressionUpdate
		quiet bool
	}{
		{val(0, 8, none, "None", 0), true},
		{val(1, 3, none, "None", 1), true},
		{val(2, 8, none, "None", 3), true},
		{val(4, 5, "builtins.int", "6", 4), true},
		{val(5, 7, none, "None", 5), false}, // an assignment of None: shown
		{val(6, 6, "builtins.int", "1", 6), false},
		{val(7, 9, "builtins.int", "42", 7), false},
	} {
		if got := quiet(text, c.u); got != c.quiet {
			t.Errorf("quiet(line %d %q) = %v, want %v", c.u.Range.Start.Line, c.u.Payload.Preview, got, c.quiet)
		}
	}
}
