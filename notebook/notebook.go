package notebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every error about a notebook that is not
// nbformat 4 JSON; the message names the field or cell at fault.
var ErrInvalid = errors.New("invalid notebook")

// Cell types of nbformat 4.
const (
	CodeCell     = "code"
	MarkdownCell = "markdown"
	RawCell      = "raw"
)

// Notebook is a parsed nbformat 4 notebook. It keeps every top-level field
// and every cell's fields as read (raw JSON), so that Marshal writes back
// what it did not change. Not safe for concurrent use.
type Notebook struct {
	top   map[string]json.RawMessage
	raw   []map[string]json.RawMessage // raw[i]: cell i's fields, outputs updated in place
	Cells []Cell                       // read-only view of the cells, same order as raw
}

// Cell is one cell as the derivation sees it.
type Cell struct {
	Index  int    // 0-based position among all cells
	ID     string // nbformat 4.5 cell id, "" before 4.5
	Type   string // CodeCell, MarkdownCell or RawCell
	Source string // the cell's text, joined
}

// Number is the cell's 1-based position, as Jupyter's "cell N" counts.
func (c Cell) Number() int { return c.Index + 1 }

// Parse reads an nbformat 4 notebook.
func Parse(data []byte) (*Notebook, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%w: not a JSON object: %w", ErrInvalid, err)
	}
	var major int
	if err := json.Unmarshal(top["nbformat"], &major); err != nil || top["nbformat"] == nil {
		return nil, fmt.Errorf("%w: \"nbformat\" is missing or not a number", ErrInvalid)
	}
	if major != 4 {
		return nil, fmt.Errorf("%w: nbformat %d: ripple reads nbformat 4 (jupyter nbconvert --to notebook converts older ones)", ErrInvalid, major)
	}
	var cells []map[string]json.RawMessage
	if err := json.Unmarshal(top["cells"], &cells); err != nil || top["cells"] == nil {
		return nil, fmt.Errorf("%w: \"cells\" is missing or not a list of objects", ErrInvalid)
	}
	nb := &Notebook{top: top, raw: cells, Cells: make([]Cell, len(cells))}
	for i, raw := range cells {
		c, err := parseCell(i, raw)
		if err != nil {
			return nil, err
		}
		nb.Cells[i] = c
	}
	return nb, nil
}

// parseCell reads the fields of cell i that the derivation needs.
func parseCell(i int, raw map[string]json.RawMessage) (Cell, error) {
	c := Cell{Index: i}
	if err := json.Unmarshal(raw["cell_type"], &c.Type); err != nil || raw["cell_type"] == nil {
		return c, fmt.Errorf("%w: cell %d: \"cell_type\" is missing or not a string", ErrInvalid, i+1)
	}
	switch c.Type {
	case CodeCell, MarkdownCell, RawCell:
	default:
		return c, fmt.Errorf("%w: cell %d: cell_type %q: want code, markdown or raw", ErrInvalid, i+1, c.Type)
	}
	if id, ok := raw["id"]; ok {
		if err := json.Unmarshal(id, &c.ID); err != nil {
			return c, fmt.Errorf("%w: cell %d: \"id\" is not a string", ErrInvalid, i+1)
		}
	}
	src, err := multiline(raw["source"])
	if err != nil {
		return c, fmt.Errorf("%w: cell %d: \"source\": %w", ErrInvalid, i+1, err)
	}
	c.Source = src
	return c, nil
}

// multiline reads nbformat's multiline string: a string or a list of
// strings to concatenate.
func multiline(raw json.RawMessage) (string, error) {
	if raw == nil {
		return "", errors.New("missing")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of strings")
	}
	return strings.Join(parts, ""), nil
}

// Marshal writes the notebook as Jupyter writes it: keys sorted, one-space
// indent, non-ASCII text unescaped, a final newline.
func (nb *Notebook) Marshal() ([]byte, error) {
	cells, err := encode(nb.raw, "")
	if err != nil {
		return nil, err
	}
	top := make(map[string]json.RawMessage, len(nb.top))
	for k, v := range nb.top {
		top[k] = v
	}
	top["cells"] = cells
	return encode(top, " ")
}

// encode is json's encoding without HTML escapes (Jupyter writes "<" as
// is; json.Marshal would write \u003c, also inside raw messages), indented
// by indent ("" for compact), newline-terminated.
func encode(v any, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
