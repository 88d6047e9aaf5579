package lsp

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ripple-run/ripple/protocol"
)

// The hints and the hover need to know what kind of statement they sit
// on: an assignment shows its value, an expression statement or a
// compound statement's header only a value other than None (their None
// is noise: `print(x)`, `for`, `if`), and the hover answers only on the
// assignment's targets or the expression, so that another server's hover
// on a name elsewhere on the line still shows. The kernel sends ranges,
// not kinds; a scan of the statement's text at bracket depth 0, outside
// strings and comments, tells them apart.

// stmtKind is what a statement is, as far as hints go.
type stmtKind int

const (
	kindExpr     stmtKind = iota // an expression statement
	kindAssign                   // a = ..., a: T = ..., a += ...
	kindCompound                 // for/while/if/with/try/def/class/match header
	kindOther                    // return, raise, del, import, pass, assert ...
)

// compoundKeywords start a compound statement.
var compoundKeywords = []string{"for", "while", "if", "with", "try", "def", "class", "match", "async", "@"}

// otherKeywords start a simple statement that is not an expression.
var otherKeywords = []string{"return", "raise", "del", "import", "from", "pass", "assert", "global", "nonlocal", "break", "continue"}

// stmtInfo is a statement's kind, where its assignment operator is (byte
// offset into its text, -1 for none) and its right-hand side.
type stmtInfo struct {
	kind   stmtKind
	opAt   int    // byte offset of the assignment operator in the statement's text
	target string // the text before the operator, trimmed
	rhs    string // the text after the operator, trimmed
	aug    bool   // an augmented assignment (+=, -=, ...)
}

// firstWord returns the leading keyword-like word of s ("@" for a
// decorator).
func firstWord(s string) string {
	if strings.HasPrefix(s, "@") {
		return "@"
	}
	end := strings.IndexFunc(s, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') })
	if end < 0 {
		return s
	}
	return s[:end]
}

// classify tells what the statement text (its whole text, from its first
// character) is.
func classify(text string) stmtInfo {
	t := strings.TrimLeft(text, " \t")
	w := firstWord(t)
	for _, k := range compoundKeywords {
		if w == k {
			return stmtInfo{kind: kindCompound, opAt: -1}
		}
	}
	for _, k := range otherKeywords {
		if w == k {
			return stmtInfo{kind: kindOther, opAt: -1}
		}
	}
	at, width, aug := assignOperator(text)
	if at < 0 {
		return stmtInfo{kind: kindExpr, opAt: -1}
	}
	return stmtInfo{kind: kindAssign, opAt: at, aug: aug,
		target: strings.TrimSpace(text[:at]), rhs: strings.TrimSpace(text[at+width:])}
}

// assignOperator finds the last top-level assignment operator of a
// statement (`a = b = 1`: the second `=`, whose right-hand side is the
// value): its byte offset and width, and whether it is augmented. -1 when
// the statement assigns nothing (`f(x=1)`, `a == b`, `(y := 2)`).
func assignOperator(text string) (at, width int, aug bool) {
	at = -1
	depth := 0
	var quote byte
	for i := 0; i < len(text); i++ {
		c := text[i]
		if quote != 0 {
			switch {
			case c == '\\':
				i++
			case c == quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '#':
			for i < len(text) && text[i] != '\n' {
				i++
			}
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '=':
			if depth != 0 {
				continue
			}
			next := byte(0)
			if i+1 < len(text) {
				next = text[i+1]
			}
			prev := byte(0)
			if i > 0 {
				prev = text[i-1]
			}
			if next == '=' { // ==
				i++
				continue
			}
			switch prev {
			case '=', '!', '<', '>', ':':
				if prev == '<' || prev == '>' {
					// <<= and >>= are augmented; <= and >= compare.
					if i >= 2 && text[i-2] == prev {
						at, width, aug = i-2, 3, true
					}
					continue
				}
				continue // ==, !=, :=
			case '+', '-', '*', '/', '%', '&', '|', '^', '@':
				start := i - 1
				if (prev == '*' || prev == '/') && i >= 2 && text[i-2] == prev {
					start = i - 2 // **= //=
				}
				at, width, aug = start, i+1-start, true
				continue
			}
			at, width, aug = i, 1, false
		}
	}
	return at, width, aug
}

// stmtText returns the text of a statement's range ("" when the range is
// not in text).
func stmtText(text string, r protocol.Range) string {
	from, err := byteOffset(text, r.Start)
	if err != nil {
		return ""
	}
	to, err := byteOffset(text, r.End)
	if err != nil || to < from {
		return ""
	}
	return text[from:to]
}

// hoverSpan is the part of a statement the hover answers on: an
// assignment's targets, an expression statement's expression, a compound
// statement's keyword; ok false for other statements. Code points.
func hoverSpan(text string, r protocol.Range) (protocol.Range, bool) {
	st := stmtText(text, r)
	if st == "" {
		return protocol.Range{}, false
	}
	info := classify(st)
	switch info.kind {
	case kindExpr:
		return r, true
	case kindAssign:
		end := strings.TrimRight(st[:info.opAt], " \t")
		return protocol.Range{Start: r.Start, End: advance(r.Start, end)}, true
	case kindCompound:
		w := firstWord(strings.TrimLeft(st, " \t"))
		lead := len(st) - len(strings.TrimLeft(st, " \t"))
		start := advance(r.Start, st[:lead])
		return protocol.Range{Start: start, End: advance(start, w)}, true
	}
	return protocol.Range{}, false
}

// advance returns the position after s, written from p (code points).
func advance(p protocol.Position, s string) protocol.Position {
	if n := strings.Count(s, "\n"); n > 0 {
		return protocol.Position{Line: p.Line + n, Character: utf8.RuneCountInString(s[strings.LastIndexByte(s, '\n')+1:])}
	}
	return protocol.Position{Line: p.Line, Character: p.Character + utf8.RuneCountInString(s)}
}

// within reports whether p lies in r (its end included: a cursor after the
// last character of a name is on it).
func within(p protocol.Position, r protocol.Range) bool {
	return !p.Before(r.Start) && !r.End.Before(p)
}
