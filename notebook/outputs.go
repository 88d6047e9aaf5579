package notebook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Output is one nbformat 4 output of a code cell. OutputType says which
// fields apply:
//   - "stream": Name ("stdout" or "stderr") and Text;
//   - "execute_result": Data, Metadata and ExecutionCount;
//   - "display_data": Data and Metadata;
//   - "error": EName, EValue and Traceback.
type Output struct {
	OutputType     string
	Name           string
	Text           string
	Data           map[string]any // mime type -> text (or a JSON value for +json types)
	Metadata       map[string]any
	ExecutionCount int
	EName, EValue  string
	Traceback      []string
}

// Stream is a stream output.
func Stream(name, text string) Output { return Output{OutputType: "stream", Name: name, Text: text} }

// Error is an error output.
func Error(ename, evalue string, traceback []string) Output {
	return Output{OutputType: "error", EName: ename, EValue: evalue, Traceback: traceback}
}

// json is the output as nbformat writes it (text as a list of lines).
func (o Output) json() (map[string]any, error) {
	m := map[string]any{"output_type": o.OutputType}
	switch o.OutputType {
	case "stream":
		if o.Name != "stdout" && o.Name != "stderr" {
			return nil, fmt.Errorf("stream output named %q: want stdout or stderr", o.Name)
		}
		m["name"], m["text"] = o.Name, lines(o.Text)
	case "execute_result", "display_data":
		data := make(map[string]any, len(o.Data))
		for mime, v := range o.Data {
			if s, ok := v.(string); ok && !strings.HasSuffix(mime, "json") {
				data[mime] = lines(s)
			} else {
				data[mime] = v
			}
		}
		m["data"] = data
		md := o.Metadata
		if md == nil {
			md = map[string]any{}
		}
		m["metadata"] = md
		if o.OutputType == "execute_result" {
			m["execution_count"] = o.ExecutionCount
		}
	case "error":
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		m["ename"], m["evalue"], m["traceback"] = o.EName, o.EValue, tb
	default:
		return nil, fmt.Errorf("output_type %q: want stream, execute_result, display_data or error", o.OutputType)
	}
	return m, nil
}

// lines splits text as nbformat's multiline strings are written: each line
// keeps its newline.
func lines(text string) []string {
	out := strings.SplitAfter(text, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// SetOutputs replaces code cell cell's outputs and execution_count (0 writes
// null: not run).
func (nb *Notebook) SetOutputs(cell int, outs []Output, count int) error {
	if cell < 0 || cell >= len(nb.raw) {
		return fmt.Errorf("%w: no cell %d (the notebook has %d)", ErrInvalid, cell+1, len(nb.raw))
	}
	if nb.Cells[cell].Type != CodeCell {
		return fmt.Errorf("%w: cell %d is a %s cell: only code cells have outputs", ErrInvalid, cell+1, nb.Cells[cell].Type)
	}
	list := make([]map[string]any, 0, len(outs))
	for _, o := range outs {
		m, err := o.json()
		if err != nil {
			return fmt.Errorf("cell %d: %w", cell+1, err)
		}
		list = append(list, m)
	}
	raw, err := encode(list, "")
	if err != nil {
		return fmt.Errorf("cell %d: outputs: %w", cell+1, err)
	}
	nb.raw[cell]["outputs"] = raw
	nb.raw[cell]["execution_count"] = json.RawMessage("null")
	if count > 0 {
		nb.raw[cell]["execution_count"] = json.RawMessage(fmt.Sprint(count))
	}
	return nil
}

// ClearOutputs empties every code cell's outputs and execution_count.
func (nb *Notebook) ClearOutputs() {
	for i, c := range nb.Cells {
		if c.Type == CodeCell {
			_ = nb.SetOutputs(i, nil, 0) // a code cell in range: cannot fail
		}
	}
}

// WriteFile writes the notebook to path atomically: a temp file in the same
// directory with path's mode, fsync, rename over path, fsync of the
// directory, so a crash leaves the old notebook or the new one.
func WriteFile(path string, nb *Notebook) error {
	data, err := nb.Marshal()
	if err != nil {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename: nothing to remove
	if _, err = f.Write(data); err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("notebook %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: the rename is done
		d.Close()
	}
	return nil
}
