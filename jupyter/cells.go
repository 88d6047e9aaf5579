package jupyter

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// The notebook as a script: every cell executed so far is a slot, in the
// order of its first execution; the script is the slots' Python source
// one after the other (cellsModule in the session's state directory).
// Executing a cell again replaces its slot's source in place: a frontend
// that sends a cell id (JupyterLab, nbclient) names the slot by it, else
// the slot is the one whose code is the same text, else a new slot is
// added at the end. A statement that raised, or was interrupted, is cut
// from its slot with the rest of the slot, so the script holds what ran,
// as Jupyter's namespace does.

const (
	cellsModule = "ripple_cells"
	cellsFile   = cellsModule + ".py"
	stateFile   = "jupyter-state.json"
	// outputCap bounds what is kept of one statement's output for replay.
	outputCap = 1 << 20
)

type slot struct {
	Key    string `json:"key"`    // "id:<cell id>" or "code:<the cell's text>"
	Source string `json:"source"` // the cell as Python (jupyterCell), ends with "\n"
}

// outputItem is one thing a statement showed, kept to be shown again when
// the statement comes from the cache (its cell's output area was cleared).
type outputItem struct {
	Kind     string          `json:"kind"` // "stdout", "stderr", "display", "result"
	Text     string          `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// notebookState is what survives the kernel process (restart): the slots
// and the outputs of their statements. The values are in the journal.
type notebookState struct {
	Slots   []slot                  `json:"slots"`
	Outputs map[string][]outputItem `json:"outputs"`
}

func slotKey(cellID, code string) string {
	if cellID != "" {
		return "id:" + cellID
	}
	return "code:" + code
}

// place puts a cell's source into its slot (see the file comment) and
// returns the slot's index.
func (st *notebookState) place(key, source string) int {
	if !strings.HasSuffix(source, "\n") {
		source += "\n"
	}
	for i := range st.Slots {
		if st.Slots[i].Key == key {
			st.Slots[i].Source = source
			return i
		}
	}
	st.Slots = append(st.Slots, slot{Key: key, Source: source})
	return len(st.Slots) - 1
}

// script is the slots' sources joined, and the first line of each slot.
func (st *notebookState) script() (string, []int) {
	var b strings.Builder
	starts := make([]int, len(st.Slots)+1)
	line := 0
	for i, s := range st.Slots {
		starts[i] = line
		b.WriteString(s.Source)
		line += strings.Count(s.Source, "\n")
	}
	starts[len(st.Slots)] = line
	return b.String(), starts
}

// slotOf is the slot holding script line (0-based), -1 if none.
func slotOf(starts []int, line int) int {
	for i := 0; i+1 < len(starts); i++ {
		if line >= starts[i] && line < starts[i+1] {
			return i
		}
	}
	return -1
}

// cut drops the lines of slot i from script line `line` on.
func (st *notebookState) cut(starts []int, i, line int) {
	keep := line - starts[i]
	lines := strings.SplitAfter(st.Slots[i].Source, "\n")
	if keep < 0 || keep >= len(lines) {
		return
	}
	st.Slots[i].Source = strings.Join(lines[:keep], "")
}

func (st *notebookState) keepOutput(id string, items []outputItem) {
	if len(items) == 0 {
		delete(st.Outputs, id)
		return
	}
	size := 0
	for k, it := range items {
		if size+len(it.Text)+len(it.Data) <= outputCap {
			size += len(it.Text) + len(it.Data)
			continue
		}
		// The first outputCap bytes are kept (a text cut on a rune
		// boundary), then a note of what was not.
		kept := items[:k:k]
		if it.Text != "" {
			cut := []rune(it.Text[:outputCap-size])
			if len(cut) > 0 && cut[len(cut)-1] == utf8.RuneError {
				cut = cut[:len(cut)-1]
			}
			kept = append(kept, outputItem{Kind: it.Kind, Text: string(cut)})
		}
		items = append(kept, outputItem{Kind: "stderr", Text: fmt.Sprintf("\n[ripple: output past %d bytes was not kept]\n", outputCap)})
		break
	}
	st.Outputs[id] = items
}

func loadState(dir string) (notebookState, error) {
	st := notebookState{Outputs: map[string][]outputItem{}}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return notebookState{Outputs: map[string][]outputItem{}}, fmt.Errorf("%s: %w", stateFile, err)
	}
	if st.Outputs == nil {
		st.Outputs = map[string][]outputItem{}
	}
	return st, nil
}

// writeAtomic writes a file of the state directory (temp file, rename).
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (st *notebookState) save(dir string) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, stateFile), b)
}
