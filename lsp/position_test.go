package lsp

import (
	"errors"
	"testing"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
)

func TestNegotiate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		offered []lsproto.PositionEncodingKind
		want    encoding
	}{
		{nil, encUTF16},
		{[]lsproto.PositionEncodingKind{"utf-8"}, encUTF16},
		{[]lsproto.PositionEncodingKind{"utf-16", "utf-32"}, encUTF32},
		{[]lsproto.PositionEncodingKind{"utf-32"}, encUTF32},
	} {
		if got := negotiate(tc.offered); got != tc.want {
			t.Errorf("negotiate(%v) = %s, want %s", tc.offered, got, tc.want)
		}
	}
}

// The text has an astral character (two UTF-16 units, one code point)
// before a statement, a BMP character (one of each), and CRLF line ends.
const astral = "x = 1\r\ns = \"🎉\"; c = 'é' + 1\r\nend"

func TestPositionConversion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rp     protocol.Position // code points
		utf16  uint32
		reason string
	}{
		{protocol.Position{Line: 1, Character: 0}, 0, "line start"},
		{protocol.Position{Line: 1, Character: 5}, 5, "before the emoji"},
		{protocol.Position{Line: 1, Character: 6}, 7, "after the emoji: one code point, two units"},
		{protocol.Position{Line: 1, Character: 8}, 9, "after `;`"},
		{protocol.Position{Line: 1, Character: 15}, 16, "after é (BMP: one unit)"},
		{protocol.Position{Line: 1, Character: 20}, 21, "line end (the \\r is not in the line)"},
	} {
		for _, enc := range []encoding{encUTF16, encUTF32} {
			want := tc.utf16
			if enc == encUTF32 {
				want = uint32(tc.rp.Character)
			}
			got := enc.toLSP(astral, tc.rp)
			if got.Line != uint32(tc.rp.Line) || got.Character != want {
				t.Errorf("%s: toLSP(%v) = %d:%d, want %d:%d (%s)", enc, tc.rp, got.Line, got.Character, tc.rp.Line, want, tc.reason)
			}
			back, err := enc.fromLSP(astral, got)
			if err != nil || back != tc.rp {
				t.Errorf("%s: fromLSP(%d:%d) = %v, %v; want %v (%s)", enc, got.Line, got.Character, back, err, tc.rp, tc.reason)
			}
		}
	}
}

func TestPositionClampAndRefuse(t *testing.T) {
	t.Parallel()
	// Past the line's end clamps (LSP says so).
	if p, err := encUTF16.fromLSP(astral, lsproto.Position{Line: 0, Character: 99}); err != nil || p.Character != 5 {
		t.Errorf("utf-16 past the end: %v, %v; want character 5", p, err)
	}
	if p := encUTF32.toLSP(astral, protocol.Position{Line: 2, Character: 99}); p.Character != 3 {
		t.Errorf("utf-32 toLSP past the end: %v; want character 3", p)
	}
	// Inside the surrogate pair: refused, naming the place.
	if _, err := encUTF16.fromLSP(astral, lsproto.Position{Line: 1, Character: 6}); !errors.Is(err, errPosition) {
		t.Errorf("utf-16 inside a surrogate pair: %v, want errPosition", err)
	}
	// A line past the end: refused.
	if _, err := encUTF32.fromLSP(astral, lsproto.Position{Line: 3}); !errors.Is(err, errPosition) {
		t.Errorf("line past the end: %v, want errPosition", err)
	}
}

func TestApplyEdit(t *testing.T) {
	t.Parallel()
	r := func(l1, c1, l2, c2 int) protocol.Range {
		return protocol.Range{Start: protocol.Position{Line: l1, Character: c1}, End: protocol.Position{Line: l2, Character: c2}}
	}
	for _, tc := range []struct {
		r    protocol.Range
		with string
		want string
	}{
		{r(1, 6, 1, 6), "🎊", "x = 1\r\ns = \"🎉🎊\"; c = 'é' + 1\r\nend"},
		{r(1, 14, 1, 15), "e", "x = 1\r\ns = \"🎉\"; c = 'e' + 1\r\nend"},
		{r(0, 5, 1, 0), "\n", "x = 1\ns = \"🎉\"; c = 'é' + 1\r\nend"},
		{r(0, 0, 2, 3), "", ""},
	} {
		got, err := applyEdit(astral, tc.r, tc.with)
		if err != nil || got != tc.want {
			t.Errorf("applyEdit(%v, %q) = %q, %v; want %q", tc.r, tc.with, got, err, tc.want)
		}
	}
	if _, err := applyEdit(astral, r(1, 3, 1, 2), ""); !errors.Is(err, errPosition) {
		t.Errorf("reversed range: %v, want errPosition", err)
	}
	if got := endOf(astral); got != (protocol.Position{Line: 2, Character: 3}) {
		t.Errorf("endOf = %v, want 2:3", got)
	}
}

func TestRunnables(t *testing.T) {
	t.Parallel()
	text := "def main():\n    pass\n\nasync def job() -> int:\n    return 1\n\ndef f(x):\n    pass\n\nclass C:\n    def m():\n        pass\ndef g( ):\n    def inner():\n        pass\n"
	got := runnables(text)
	want := []runnable{{"main", 0}, {"job", 3}, {"g", 12}}
	if len(got) != len(want) {
		t.Fatalf("runnables = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("runnables[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if l := defLine(text, "m", 11); l != 10 {
		t.Errorf("defLine(m) = %d, want 10", l)
	}
	if l := defLine(text, "nope", 11); l != -1 {
		t.Errorf("defLine(nope) = %d, want -1", l)
	}
}

func TestShift(t *testing.T) {
	t.Parallel()
	pos := func(l, c int) protocol.Position { return protocol.Position{Line: l, Character: c} }
	edit := func(l1, c1, l2, c2 int, text string) protocol.TextEdit {
		return protocol.TextEdit{Range: protocol.Range{Start: pos(l1, c1), End: pos(l2, c2)}, Text: text}
	}
	for _, tc := range []struct {
		p    protocol.Position
		ed   protocol.TextEdit
		want protocol.Position
	}{
		{pos(1, 4), edit(3, 0, 3, 0, "x\n"), pos(1, 4)},        // before the edit
		{pos(3, 4), edit(3, 0, 3, 0, "new line\n"), pos(4, 4)}, // a line inserted above
		{pos(5, 2), edit(1, 0, 3, 0, ""), pos(3, 2)},           // two lines deleted above
		{pos(2, 9), edit(2, 4, 2, 5, "🎉🎉"), pos(2, 10)},        // same line, one code point became two
		{pos(3, 5), edit(2, 4, 3, 1, "a\nbc"), pos(3, 6)},      // on the last line of an edit that spans lines
		{pos(2, 6), edit(2, 4, 2, 8, "zz"), pos(2, 4)},         // inside: to the start
		{pos(4, 0), edit(2, 4, 3, 0, ""), pos(3, 0)},           // a line end removed above
	} {
		if got := shift(tc.p, tc.ed); got != tc.want {
			t.Errorf("shift(%v, %v %q) = %v, want %v", tc.p, tc.ed.Range, tc.ed.Text, got, tc.want)
		}
	}
}

func TestChangedSpan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		old, new string
		from, to int
		with     string
	}{
		{"d = b * 2\n", "d = b * 5\n", 8, 9, "5"},
		{"x = 1\n", "x = 1\ny = 2\n", 6, 6, "y = 2\n"},
		{"s = '🎉'\n", "s = '🎊'\n", 5, 9, "🎊"}, // the emojis share their first bytes: cut at the character
		{"aaa", "aa", 2, 3, ""},
	} {
		from, to, with := changedSpan(tc.old, tc.new)
		if from != tc.from || to != tc.to || with != tc.with {
			t.Errorf("changedSpan(%q, %q) = %d, %d, %q; want %d, %d, %q", tc.old, tc.new, from, to, with, tc.from, tc.to, tc.with)
		}
		if got := tc.old[:from] + with + tc.old[to:]; got != tc.new {
			t.Errorf("applying the span to %q gives %q, want %q", tc.old, got, tc.new)
		}
	}
	if p := positionAt("ab\n🎉x", 7); p != (protocol.Position{Line: 1, Character: 1}) {
		t.Errorf("positionAt = %v, want 1:1", p)
	}
}
