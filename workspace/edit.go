package workspace

import (
	"fmt"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Position is a place in a text buffer: a 0-based line and a 0-based
// character offset in that line, counted in Unicode code points.
//
// Lines end at "\n"; a "\r" right before the "\n" belongs to the line end, so
// "\r\n" files and "\n" files address the same positions, and the place
// between "\r" and "\n" cannot be addressed. A lone "\r" is an ordinary
// character. The last line runs to the end of the content (it is empty if
// the content ends with a line end). Positions are checked strictly: a line
// past the last line or a character past the end of its line is an error,
// not clamped as LSP would.
type Position struct {
	Line      int
	Character int
}

// Range is the text between Start (inclusive) and End (exclusive).
type Range struct {
	Start Position
	End   Position
}

// TextEdit replaces the text in Range with Text.
type TextEdit struct {
	Range Range
	Text  string
}

func (p Position) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Character) }

// offset returns the byte offset of pos in content.
func offset(content string, pos Position) (int, error) {
	if pos.Line < 0 || pos.Character < 0 {
		return 0, fmt.Errorf("position %s is negative", pos)
	}
	start := 0
	for line := 0; line < pos.Line; line++ {
		i := strings.IndexByte(content[start:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("position %s: line %d is past the last line (%d)", pos, pos.Line, line)
		}
		start += i + 1
	}
	end := len(content)
	if i := strings.IndexByte(content[start:], '\n'); i >= 0 {
		end = start + i
		if end > start && content[end-1] == '\r' {
			end--
		}
	}
	at := start
	for ch := 0; ch < pos.Character; ch++ {
		if at >= end {
			return 0, fmt.Errorf("position %s: line %d has only %d characters", pos, pos.Line, ch)
		}
		if content[at] < utf8.RuneSelf {
			at++
		} else {
			_, size := utf8.DecodeRuneInString(content[at:end])
			at += size
		}
	}
	return at, nil
}

// applyEdits applies edits in order, each to the result of the previous one,
// and returns the final content's bytes. The returned slice is freshly
// allocated and never written again, which is what lets the caller hash it
// and then view it as a string without a copy (see bytesString).
func applyEdits(content string, edits []TextEdit) ([]byte, error) {
	cur := content
	var out []byte
	if len(edits) == 0 {
		out = []byte(content)
	}
	for i, e := range edits {
		start, err := offset(cur, e.Range.Start)
		if err != nil {
			return nil, fmt.Errorf("edit %d: range start: %w", i+1, err)
		}
		end, err := offset(cur, e.Range.End)
		if err != nil {
			return nil, fmt.Errorf("edit %d: range end: %w", i+1, err)
		}
		if !utf8.ValidString(e.Text) {
			return nil, fmt.Errorf("edit %d: the new text is not valid UTF-8", i+1)
		}
		if end < start {
			return nil, fmt.Errorf("edit %d: range end %s is before its start %s", i+1, e.Range.End, e.Range.Start)
		}
		out = make([]byte, 0, len(cur)-(end-start)+len(e.Text))
		out = append(out, cur[:start]...)
		out = append(out, e.Text...)
		out = append(out, cur[end:]...)
		cur = bytesString(out)
	}
	return out, nil
}

// bytesString views b as a string without copying. The caller must never
// modify b afterwards; applyEdits' results are only read.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// EndPosition returns the position just past the last character of content,
// so Range{End: EndPosition(content)} covers all of it.
func EndPosition(content string) Position {
	line := strings.Count(content, "\n")
	last := content[strings.LastIndexByte(content, '\n')+1:]
	return Position{Line: line, Character: utf8.RuneCountInString(last)}
}
