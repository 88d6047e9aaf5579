package notebook

import (
	"fmt"
	"strings"
)

// Script is the Python a notebook runs as: its cells in order (package doc,
// "The derived script"), and where each of its lines comes from.
type Script struct {
	Source  string
	origins []Origin // origins[i] is line i+1 of Source
}

// Origin is where a line of the derived script comes from.
type Origin struct {
	Cell   int    // the cell's 0-based index among all cells
	CellID string // its nbformat id ("" before nbformat 4.5)
	// Line is the 1-based line in the cell; 0 for the cell's separator.
	Line int
	Code bool // a code cell's line (markdown and raw lines are comments)
}

// String names the place as a user reads it: "cell 3, line 2".
func (o Origin) String() string {
	if o.Line == 0 {
		return fmt.Sprintf("cell %d", o.Cell+1)
	}
	return fmt.Sprintf("cell %d, line %d", o.Cell+1, o.Line)
}

// Separator is the comment line that starts cell number n (1-based) of
// type kind in the derived script.
func Separator(n int, kind string) string {
	if kind == CodeCell {
		return fmt.Sprintf("# %%%% [cell %d]", n)
	}
	return fmt.Sprintf("# %%%% [cell %d] %s", n, kind)
}

// Script derives the notebook's Python (package doc).
func (nb *Notebook) Script() *Script {
	var b strings.Builder
	s := &Script{}
	for _, c := range nb.Cells {
		b.WriteString(Separator(c.Number(), c.Type))
		b.WriteByte('\n')
		s.origins = append(s.origins, Origin{Cell: c.Index, CellID: c.ID})
		lines := splitLines(c.Source)
		if c.Type == CodeCell {
			lines = rewriteIPython(lines)
		} else {
			for i, l := range lines {
				lines[i] = strings.TrimRight("# "+l, " ")
			}
		}
		for i, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
			s.origins = append(s.origins, Origin{Cell: c.Index, CellID: c.ID, Line: i + 1, Code: c.Type == CodeCell})
		}
	}
	s.Source = b.String()
	return s
}

// splitLines splits a cell's text into lines without their line ends
// (\n, \r\n or \r, as Python reads them).
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// Origin maps a 1-based line of the derived script to its cell and line;
// ok is false outside the script.
func (s *Script) Origin(line int) (o Origin, ok bool) {
	if line < 1 || line > len(s.origins) {
		return Origin{}, false
	}
	return s.origins[line-1], true
}

// Line maps a cell (0-based index) and a 1-based line in it (0: its
// separator) to the line of the derived script; ok is false when the cell
// or line does not exist.
func (s *Script) Line(cell, line int) (int, bool) {
	for i, o := range s.origins {
		if o.Cell == cell && o.Line == line {
			return i + 1, true
		}
	}
	return 0, false
}

// Lines is the number of lines of the derived script.
func (s *Script) Lines() int { return len(s.origins) }
