package batch

import "strings"

// isExpressionStatement reports whether a statement's source is an
// expression statement whose value IPython's displayhook would show: not an
// assignment (plain, augmented, annotated, to an attribute or item), not a
// compound or simple statement starting with a keyword, and not ending with
// ";" (IPython's way to silence a cell's last value). The source is the
// statement's text as the kernel's range gives it.
func isExpressionStatement(src string) bool {
	src = strings.TrimSpace(src)
	if src == "" || strings.HasPrefix(src, "@") {
		return false
	}
	word := src
	if i := strings.IndexFunc(src, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z') }); i >= 0 {
		word = src[:i]
	}
	switch word {
	case "for", "while", "if", "with", "try", "def", "class", "import", "from", "return", "del", "pass",
		"raise", "assert", "global", "nonlocal", "async", "break", "continue", "match":
		return false
	}
	return !topLevelAssignment(src) && !endsWithSemicolon(src)
}

// topLevelAssignment reports whether src has an assignment operator outside
// brackets and strings: "=", "+=", ..., or an annotation's ":".
func topLevelAssignment(src string) bool {
	depth := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			i = skipString(src, i)
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && c == ':' && (i+1 >= len(src) || src[i+1] != '='):
			return true // x: int = 1 (a lambda's ":" is inside no bracket only in a bare lambda, which has no value worth showing)
		case depth == 0 && c == '=':
			prev := byte(0)
			if i > 0 {
				prev = src[i-1]
			}
			next := byte(0)
			if i+1 < len(src) {
				next = src[i+1]
			}
			if next == '=' {
				i++ // ==
				continue
			}
			shift := i >= 2 && (prev == '<' || prev == '>') && src[i-2] == prev
			if strings.IndexByte("=!<>", prev) >= 0 && !shift {
				continue // ==, !=, <=, >= (but <<= and >>= assign)
			}
			if prev == ':' {
				continue // := (a walrus in a bare expression)
			}
			return true // =, +=, -=, ..., including <<= and >>=
		}
	}
	return false
}

// skipString returns the index of the closing quote of the string starting
// at src[i] (triple-quoted included; prefixes are letters before it).
func skipString(src string, i int) int {
	q := src[i]
	if strings.HasPrefix(src[i:], strings.Repeat(string(q), 3)) {
		end := strings.Index(src[i+3:], strings.Repeat(string(q), 3))
		if end < 0 {
			return len(src)
		}
		return i + 3 + end + 2
	}
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case q, '\n':
			return j
		}
	}
	return len(src)
}

// endsWithSemicolon: the statement's last code (comments dropped) is ";".
func endsWithSemicolon(src string) bool {
	lines := strings.Split(src, "\n")
	last := lines[len(lines)-1]
	if i := strings.Index(last, "#"); i >= 0 && !strings.ContainsAny(last[:i], `"'`) {
		last = last[:i]
	}
	return strings.HasSuffix(strings.TrimSpace(last), ";")
}
