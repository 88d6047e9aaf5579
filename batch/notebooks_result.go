package batch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ripple-run/ripple/notebook"
	"github.com/ripple-run/ripple/protocol"
)

// cellRun is what one code cell did in a notebook's run.
type cellRun struct {
	outputs []notebook.Output
	last    *protocol.ExpressionUpdate // the cell's last statement
}

// notebookResult turns a notebook's run into its result and sets the
// cells' outputs in nb: each cell gets the output of its statements, in
// the order it came, its last statement's value as execute_result when it
// is an expression with a value (as IPython's displayhook shows it), and
// the failing cell an error output. Code cells after the failing one are
// cleared (not run).
func notebookResult(en Entry, nb *notebook.Notebook, s *notebook.Script, rec *notebookRecord) *Result {
	r := &Result{Entry: en, Status: StatusPassed}
	cells := make(map[int]*cellRun)
	cellOf := func(u protocol.ExpressionUpdate) (notebook.Origin, bool) {
		if u.Range == nil {
			return notebook.Origin{}, false
		}
		return s.Origin(u.Range.Start.Line + 1)
	}
	at := func(cell int) *cellRun {
		if cells[cell] == nil {
			cells[cell] = &cellRun{}
		}
		return cells[cell]
	}
	var panics []protocol.ExpressionUpdate
	for _, u := range rec.updates {
		o, ok := cellOf(u)
		if !ok {
			continue
		}
		c := at(o.Cell)
		if c.last == nil || compareBySource(u, *c.last) > 0 {
			c.last = &u
		}
		if u.Payload.Type == protocol.PayloadPanic {
			panics = append(panics, u)
		}
	}
	addEvents(rec, cells, cellOf, at)
	failedCell := len(nb.Cells)
	if len(panics) > 0 {
		slices.SortFunc(panics, compareBySource)
		u := panics[0]
		o, _ := cellOf(u)
		failedCell = o.Cell
		ename, evalue := splitException(u.Payload.Message)
		f := Failure{ExpressionID: u.ExpressionID, Path: en.Path, Line: o.Line, Source: statementText(s, u.Range),
			Message: o.String() + ": " + u.Payload.Message}
		tb := traceback(en.Path, s, diagnosticOf(rec, u.ExpressionID), &f)
		at(o.Cell).outputs = append(at(o.Cell).outputs, notebook.Error(ename, evalue, append(tb, ename+": "+evalue)))
		r.Status, r.Message, r.Failures = StatusFailed, f.Message, []Failure{f}
	}
	firstRun := 0
	if rec.failed != nil {
		failedCell = min(failedCell, runFailure(r, s, rec.failed, at))
		if rec.failed.Kind == protocol.ResultCompileError {
			firstRun = failedCell // the script did not compile: no cell ran, the failing one shows why
		}
	}
	setCellOutputs(nb, s, cells, firstRun, failedCell)
	return r
}

// addEvents files the run's output under the cells of the statements that
// wrote it (output outside statements goes with the cell before it).
func addEvents(rec *notebookRecord, cells map[int]*cellRun, cellOf func(protocol.ExpressionUpdate) (notebook.Origin, bool), at func(int) *cellRun) {
	// Output in statement order (a statement that ran again in a watch
	// run has its new output), in the order it came within a statement.
	events := slices.Clone(rec.events)
	slices.SortStableFunc(events, func(a, b notebookEvent) int {
		ua, oka := rec.updates[a.expr]
		ub, okb := rec.updates[b.expr]
		if !oka || !okb {
			return 0
		}
		return compareBySource(ua, ub)
	})
	cell := -1
	for _, ev := range events {
		if u, ok := rec.updates[ev.expr]; ok {
			if o, ok := cellOf(u); ok {
				cell = o.Cell
			}
		}
		if cell < 0 {
			continue
		}
		c := at(cell)
		if ev.stream != "" {
			if n := len(c.outputs); n > 0 && c.outputs[n-1].OutputType == "stream" && c.outputs[n-1].Name == string(ev.stream) {
				c.outputs[n-1].Text += ev.text // one output per burst of a stream, as Jupyter joins them
			} else {
				c.outputs = append(c.outputs, notebook.Stream(string(ev.stream), ev.text))
			}
			continue
		}
		var data map[string]any
		if json.Unmarshal(ev.display, &data) == nil && len(data) > 0 {
			kind := "display_data"
			if _, ok := data[resultMime]; ok {
				// The cell's value with every mime type its formatter
				// gives (notebook.py show_result); its count is set with
				// the cell's (setCellOutputs).
				delete(data, resultMime)
				kind = "execute_result"
			}
			c.outputs = append(c.outputs, notebook.Output{OutputType: kind, Data: data})
		}
	}
}

// runFailure records a run that failed as a whole (a syntax error in a
// cell, a kernel that died, a timeout) and returns the cell it failed in
// (the notebook's length when unknown).
func runFailure(r *Result, s *notebook.Script, failed *protocol.ExecutionResult, at func(int) *cellRun) int {
	r.Kind, r.Diagnostic = failed.Kind, failed.Diagnostic
	switch failed.Kind {
	case protocol.ResultKernelDied:
		r.Status = StatusCrashed
	case protocol.ResultTimeout:
		r.Status = StatusTimeout
	case protocol.ResultInterrupted:
		r.Status = StatusInterrupted
	default:
		r.Status = StatusError
	}
	msg := failed.Message
	cell := -1
	if d := failed.Diagnostic; d != nil {
		msg = cmp.Or(d.Message, msg)
	}
	ename, evalue := splitException(msg)
	if d := failed.Diagnostic; d != nil {
		if d.Location != nil {
			if o, ok := s.Origin(d.Location.Start.Line + 1); ok {
				cell = o.Cell
				msg = o.String() + ": " + msg
			}
		}
	}
	if r.Message == "" {
		r.Message = msg
	}
	if cell < 0 {
		return 1 << 30
	}
	at(cell).outputs = append(at(cell).outputs, notebook.Error(ename, evalue, []string{msg}))
	return cell
}

// setCellOutputs writes every code cell's outputs and execution count:
// cells from firstRun up to failedCell ran (counted from 1), the others
// are cleared.
func setCellOutputs(nb *notebook.Notebook, s *notebook.Script, cells map[int]*cellRun, firstRun, failedCell int) {
	count := 0
	for _, c := range nb.Cells {
		if c.Type != notebook.CodeCell {
			continue
		}
		if c.Index < firstRun || c.Index > failedCell {
			_ = nb.SetOutputs(c.Index, nil, 0) // a code cell: cannot fail
			continue
		}
		count++
		run := cells[c.Index]
		var outs []notebook.Output
		if run != nil {
			outs = run.outputs
			shown := false
			for i := range outs {
				if outs[i].OutputType == "execute_result" {
					outs[i].ExecutionCount, shown = count, true
				}
			}
			// A value the kernel did not show (a matplotlib Figure, shown
			// as its PNG) is its preview.
			if u := run.last; u != nil && !shown && c.Index != failedCell && isExpressionValue(*u) && isExpressionStatement(statementText(s, u.Range)) {
				outs = append(outs, notebook.Output{OutputType: "execute_result", ExecutionCount: count,
					Data: map[string]any{"text/plain": u.Payload.Preview}})
			}
		}
		_ = nb.SetOutputs(c.Index, outs, count) // built above: valid outputs
	}
}

// resultMime marks the display bundle that is a cell's execute_result
// (kernel notebook.RESULT_MIME).
const resultMime = "application/vnd.ripple.execute-result"

// isExpressionValue: the statement is an expression statement (labelled
// "#N": it binds no name) whose value is not None.
func isExpressionValue(u protocol.ExpressionUpdate) bool {
	id := string(u.ExpressionID)
	label := id[strings.LastIndex(id, "/")+1:]
	return strings.HasPrefix(label, "#") && u.Payload.Type == protocol.PayloadValue &&
		u.Type != "" && u.Type != "builtins.NoneType"
}

// splitException splits "NameError: name 'b' is not defined".
func splitException(msg string) (ename, evalue string) {
	ename, evalue, found := strings.Cut(msg, ": ")
	if !found || strings.ContainsAny(ename, " \n") {
		return "Error", msg
	}
	return ename, evalue
}

// diagnosticOf is the diagnostic the run reported for a statement.
func diagnosticOf(rec *notebookRecord, id protocol.ExpressionID) *protocol.Diagnostic {
	for i := len(rec.diagnostics) - 1; i >= 0; i-- { // the latest run's
		if rec.diagnostics[i].ExpressionID == id {
			return &rec.diagnostics[i]
		}
	}
	return nil
}

// traceback is a failure's traceback as a notebook shows it, the
// notebook's lines named by cell and line; it fills f.Traceback.
func traceback(path string, s *notebook.Script, d *protocol.Diagnostic, f *Failure) []string {
	tb := []string{"Traceback (most recent call last):"}
	if d == nil {
		return tb
	}
	f.Traceback = frames(d.Stack)
	for _, fr := range f.Traceback {
		where := fmt.Sprintf("File %s:%d", fr.Path, fr.Line)
		if fr.Path == path {
			if o, ok := s.Origin(fr.Line); ok {
				where = fmt.Sprintf("%s, %s", path, o)
			}
		}
		tb = append(tb, fmt.Sprintf("  %s, in %s", where, fr.Function))
	}
	return tb
}

// statementText is the derived script's text of a statement's range.
func statementText(s *notebook.Script, rg *protocol.Range) string {
	if rg == nil {
		return ""
	}
	lines := strings.Split(s.Source, "\n")
	if rg.Start.Line >= len(lines) {
		return ""
	}
	end := min(rg.End.Line, rg.Start.Line+maxSourceLines-1, len(lines)-1)
	return strings.Join(lines[rg.Start.Line:end+1], "\n")
}
