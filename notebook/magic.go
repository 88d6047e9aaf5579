package notebook

import (
	"fmt"
	"regexp"
	"strings"
)

// IPython's escapes, rewritten as IPython's input transformers
// (IPython.core.inputtransformer2) rewrite them, so that what runs is
// IPython's own magic or system machinery (get_ipython(), package doc).
// Not rewritten: escapes inside multi-line strings are taken as escapes
// (IPython tokenizes first), help (`obj?`) and auto-call (`/f x`) are left
// as they are (a SyntaxError names the line).
var (
	// assignEscape is `target = !cmd`, `target = %magic args`.
	assignEscape = regexp.MustCompile(`^(\s*)([A-Za-z_][\w.\[\], ]*?)\s*=\s*([!%])(.*)$`)
	// lineEscape is `!cmd`, `!!cmd`, `%magic args` at the start of a line.
	lineEscape = regexp.MustCompile(`^(\s*)(!!|!|%)(.*)$`)
)

// rewriteIPython rewrites a code cell's lines, one line for one.
func rewriteIPython(lines []string) []string {
	out := make([]string, len(lines))
	if len(lines) > 0 && strings.HasPrefix(lines[0], "%%") {
		name, args := magicCall(lines[0][2:])
		body := strings.Join(lines[1:], "\n")
		if len(lines) > 1 {
			body += "\n"
		}
		out[0] = fmt.Sprintf("get_ipython().run_cell_magic(%s, %s, %s)", pyQuote(name), pyQuote(args), pyQuote(body))
		for i, l := range lines[1:] {
			out[i+1] = strings.TrimRight("# "+l, " ")
		}
		return out
	}
	for i, l := range lines {
		out[i] = rewriteLine(l)
	}
	return out
}

// rewriteLine rewrites one line with an escape; others are returned as is.
func rewriteLine(l string) string {
	if m := assignEscape.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[4], "=") {
		escape, rest := m[3], m[4]
		if escape == "!" {
			escape, rest = "!!", strings.TrimPrefix(rest, "!") // x = !cmd keeps the output, as !!cmd
		}
		return m[1] + m[2] + " = " + escapeCall(escape, rest)
	}
	if m := lineEscape.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[3], "%") {
		return m[1] + escapeCall(m[2], m[3])
	}
	return l
}

// escapeCall is the call an escape becomes; rest follows the escape.
func escapeCall(escape, rest string) string {
	switch escape {
	case "!":
		return fmt.Sprintf("get_ipython().system(%s)", pyQuote(strings.TrimSpace(rest)))
	case "!!":
		return fmt.Sprintf("get_ipython().getoutput(%s)", pyQuote(strings.TrimSpace(rest)))
	}
	name, args := magicCall(rest)
	return fmt.Sprintf("get_ipython().run_line_magic(%s, %s)", pyQuote(name), pyQuote(args))
}

// magicCall splits "name args" after a magic's %.
func magicCall(s string) (name, args string) {
	name, args, _ = strings.Cut(strings.TrimSpace(s), " ")
	return name, strings.TrimSpace(args)
}

// pyQuote is s as a Python string literal.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
