package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ripple-run/ripple/protocol"
)

// helpLine is `name?` or `name??`: IPython's help, answered as a page.
var helpLine = regexp.MustCompile(`^\s*([A-Za-z_][\w.]*)\s*(\?\??)\s*$`)

// Execute implements Backend: the cell goes into the notebook's script
// (cells.go) and the context runs again; only the statements whose
// inputs changed run, the others show their kept output. The
// user_expressions of a cell that succeeded are evaluated after it.
func (s *Session) Execute(ctx context.Context, req ExecuteRequest, out Output) ExecuteResult {
	res := s.execute(ctx, req, out)
	if res.Status == "ok" && len(req.UserExpressions) > 0 {
		res.UserExpressions = s.userExpressions(ctx, req.UserExpressions)
	}
	return res
}

func (s *Session) execute(ctx context.Context, req ExecuteRequest, out Output) ExecuteResult {
	code, status := withoutStatusLines(req.Code)
	if status {
		// %ripple_status is answered here, after the rest of its cell.
		defer func() { out.Stream("stdout", s.statusText()) }()
	}
	if strings.TrimSpace(code) == "" {
		return ExecuteResult{Status: "ok"}
	}
	counted := !req.Silent && req.StoreHistory
	if m := helpLine.FindStringSubmatch(code); m != nil {
		if counted {
			s.session(ctx, map[string]any{"mode": "begin", "count": req.Count, "code": req.Code, "parsed": code})
		}
		return s.help(ctx, m[1], len(m[2])-1)
	}
	// The kernel sets In, _i, _ii, ... as IPython does before the cell
	// runs, in the same call.
	source, parsed, failed := s.transform(ctx, code, req)
	if failed != nil {
		return *failed
	}
	_, before := s.state.script()
	key := slotKey(req.CellID, code)
	elsewhere := s.otherCells(key, before)
	stale := s.historyReaders(key, before)
	idx := s.state.place(key, source)
	script, starts := s.state.script()
	if err := s.writeScript(script); err != nil {
		return errorResult("OSError", err.Error())
	}
	s.curMu.Lock()
	s.current = out
	s.curMu.Unlock()
	defer func() {
		s.curMu.Lock()
		s.current = nil
		s.curMu.Unlock()
	}()
	mark := s.client.mark()
	params := protocol.RecomputeParams{ContextID: s.ctxID}
	if len(stale) > 0 {
		params.InvalidatedExpressions = &protocol.InvalidatedExpressions{IDs: stale}
	}
	if err := s.eng.Recompute(ctx, clientID, params); err != nil {
		return errorResult("RippleError", err.Error())
	}
	r := newRun(s, out, idx, starts)
	r.elsewhere = elsewhere
	r.wait(ctx, mark)
	if r.failed == nil {
		r.replay()
	}
	if counted && r.resultExpr != "" {
		// Out, _, __, ... as IPython's displayhook sets them: the value of
		// the statement whose result the cell showed.
		s.session(ctx, map[string]any{"mode": "finish", "count": req.Count, "expression": r.resultExpr})
	}
	for id := range r.computed {
		s.state.keepOutput(id, r.fresh[id])
	}
	res := r.result()
	res.Parsed = parsed
	if script, _ := s.state.script(); script != s.lastSrc {
		if err := s.writeScript(script); err != nil {
			s.log.Warn("jupyter: script", "err", err)
		}
	}
	if err := s.state.save(s.cfg.StateDir); err != nil {
		s.log.Warn("jupyter: state", "err", err)
	}
	return res
}

// withoutStatusLines is code without its `%ripple_status` lines, and
// whether it had one.
func withoutStatusLines(code string) (string, bool) {
	if !strings.Contains(code, "%ripple_status") {
		return code, false
	}
	lines := strings.SplitAfter(code, "\n")
	kept := lines[:0]
	found := false
	for _, l := range lines {
		if strings.TrimSpace(l) == "%ripple_status" {
			found = true
			continue
		}
		kept = append(kept, l)
	}
	return strings.Join(kept, ""), found
}

// otherCells are the statements the frame has now (the script before
// this cell is placed, whose slots start at starts) that belong to
// another cell than the one keyed key.
func (s *Session) otherCells(key string, starts []int) map[string]bool {
	out := map[string]bool{}
	us, err := s.eng.TopFrameUpdates(s.ctxID)
	if err != nil {
		return out
	}
	for _, u := range us {
		if u.Range == nil {
			continue
		}
		if i := slotOf(starts, u.Range.Start.Line); i >= 0 && s.state.Slots[i].Key != key {
			out[string(u.ExpressionID)] = true
		}
	}
	return out
}

func errorResult(ename, evalue string) ExecuteResult {
	return ExecuteResult{Status: "error", EName: ename, EValue: evalue, Traceback: []string{ename + ": " + evalue}}
}

func (s *Session) writeScript(script string) error {
	if script == s.lastSrc {
		return nil
	}
	if err := writeAtomic(filepath.Join(s.cfg.StateDir, cellsFile), []byte(script)); err != nil {
		return err
	}
	s.lastSrc = script
	return nil
}

// transform asks the kernel for the cell as Python (jupyterCell): the
// source for the script, and the transformed cell (IPython's In); a
// result when it cannot run (a syntax error, IPython syntax without
// IPython).
func (s *Session) transform(ctx context.Context, code string, req ExecuteRequest) (string, string, *ExecuteResult) {
	params := map[string]any{"code": code}
	if !req.Silent && req.StoreHistory {
		params["count"], params["raw"] = req.Count, req.Code
	}
	raw, err := s.eng.KernelCall(ctx, s.ctxID, "jupyterCell", params)
	if err != nil {
		res := errorResult("RippleError", err.Error())
		return "", "", &res
	}
	var v struct {
		Source string `json:"source"`
		Parsed string `json:"parsed"`
		Error  *struct {
			EName     string   `json:"ename"`
			EValue    string   `json:"evalue"`
			Traceback []string `json:"traceback"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		res := errorResult("RippleError", fmt.Sprintf("jupyterCell: %v", err))
		return "", "", &res
	}
	if v.Error != nil {
		return "", "", &ExecuteResult{Status: "error", EName: v.Error.EName, EValue: v.Error.EValue, Traceback: v.Error.Traceback}
	}
	return v.Source, v.Parsed, nil
}

// help answers `name?` (detail 0) and `name??` (1) as IPython does: a
// page payload.
func (s *Session) help(ctx context.Context, name string, detail int) ExecuteResult {
	in, err := s.Inspect(ctx, name, len([]rune(name)), detail)
	if err != nil {
		return errorResult("RippleError", err.Error())
	}
	text := in.Text
	if !in.Found {
		text = "Object `" + name + "` not found."
	}
	return ExecuteResult{Status: "ok", Payload: []map[string]any{{"source": "page", "data": map[string]any{"text/plain": text}, "start": 0}}}
}

// statusText is %ripple_status: what the kernel's start brought back
// from the value journal, and the cells it holds.
func (s *Session) statusText() string {
	var b strings.Builder
	cells := 0
	for _, sl := range s.state.Slots {
		if strings.TrimSpace(sl.Source) != "" {
			cells++
		}
	}
	fmt.Fprintf(&b, "ripple: %d cells in the notebook's script (%s)\n", cells, filepath.Join(s.cfg.StateDir, cellsFile))
	if len(s.restored) == 0 && len(s.reran) == 0 {
		b.WriteString("ripple: nothing was restored at this kernel's start\n")
	} else {
		fmt.Fprintf(&b, "ripple: restored from the value journal (not run again): %s\n", labels(s.restored))
		fmt.Fprintf(&b, "ripple: run again at start (not in the journal): %s\n", labels(s.reran))
	}
	if s.restoreErr != "" {
		fmt.Fprintf(&b, "ripple: the restore run failed: %s\n", s.restoreErr)
	}
	return b.String()
}

// labels are the statements' labels (the part of their id after the
// slash), sorted.
func labels(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		_, label, _ := strings.Cut(id, "/")
		out = append(out, label)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
