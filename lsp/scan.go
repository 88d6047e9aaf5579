package lsp

import (
	"regexp"
	"strings"
)

// The code lenses need to know where functions start and which top-level
// functions take no arguments. The statements themselves come from the
// kernel (their ranges ride on every expression update), so what is left is
// finding `def` lines, which a line scan does exactly for the code a
// formatter writes; a `def` whose parameter list spans lines is not offered
// a ▶ Run lens (it rarely has no parameters).
var (
	// topLevelNoArgs matches `def name():` (or async def, with a return
	// annotation) at column 0.
	topLevelNoArgs = regexp.MustCompile(`^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(\s*\)\s*(?:->[^:]*)?:`)
	// anyDef matches a def at any indentation and captures its name.
	anyDef = regexp.MustCompile(`^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(`)
)

// runnable is a top-level function that takes no arguments.
type runnable struct {
	name string
	line int // 0-based line of its def
}

// runnables lists the top-level functions of a module's text that take no
// arguments, in source order.
func runnables(text string) []runnable {
	var out []runnable
	for i, line := range strings.Split(text, "\n") {
		if m := topLevelNoArgs.FindStringSubmatch(line); m != nil {
			out = append(out, runnable{name: m[1], line: i})
		}
	}
	return out
}

// defLine returns the line of the `def` of function name at or above line
// from (the first statement of its body), or -1 when there is none.
func defLine(text, name string, from int) int {
	lines := strings.Split(text, "\n")
	for i := min(from, len(lines)-1); i >= 0; i-- {
		if m := anyDef.FindStringSubmatch(lines[i]); m != nil && m[1] == name {
			return i
		}
	}
	return -1
}
