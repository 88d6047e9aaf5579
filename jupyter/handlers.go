package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-zeromq/zmq4"
)

// execute answers an execute_request: execute_input, what the cell
// shows, error if it failed, then the reply.
func (s *Server) execute(sock zmq4.Socket, m *Message) {
	var req ExecuteRequest
	req.StoreHistory = true
	if err := json.Unmarshal(m.Content, &req); err != nil {
		s.send(sock, m.Identities, "execute_reply", m, nil, map[string]any{
			"status": "error", "ename": "BadRequest", "evalue": err.Error(), "traceback": []string{}, "execution_count": s.count})
		return
	}
	var md struct {
		CellID string `json:"cellId"`
	}
	_ = json.Unmarshal(m.Metadata, &md)
	req.CellID = md.CellID
	if s.aborted(m) {
		// A cell sent before the frontend saw an earlier cell fail (Run
		// All): not run, as ipykernel aborts its queue on an error.
		s.send(sock, m.Identities, "execute_reply", m, map[string]any{"status": "aborted"},
			map[string]any{"status": "aborted", "execution_count": s.count})
		return
	}
	// A cell that counts gets the next execution count and goes into the
	// history; an empty one does not, as IPython's run_cell returns
	// before either.
	counted := !req.Silent && req.StoreHistory && strings.TrimSpace(req.Code) != ""
	req.StoreHistory = req.StoreHistory && counted
	if counted {
		s.count++
	}
	req.Count = s.count
	if !req.Silent {
		s.publish(m, "execute_input", map[string]any{"code": req.Code, "execution_count": req.Count})
	}
	out := &shellOutput{s: s, parent: m, silent: req.Silent, allowStdin: req.AllowStdin}
	res := s.backend.Execute(s.ctx, req, out)
	if res.Status == "" {
		res.Status = "ok"
	}
	content := map[string]any{"status": res.Status, "execution_count": req.Count}
	switch res.Status {
	case "ok":
		if res.Payload == nil {
			res.Payload = []map[string]any{}
		}
		content["payload"] = res.Payload
		if res.UserExpressions == nil {
			res.UserExpressions = map[string]any{}
		}
		content["user_expressions"] = res.UserExpressions
	case "error":
		if res.Traceback == nil {
			res.Traceback = []string{}
		}
		content["ename"], content["evalue"], content["traceback"] = res.EName, res.EValue, res.Traceback
		if !req.Silent {
			s.publish(m, "error", map[string]any{"ename": res.EName, "evalue": res.EValue, "traceback": res.Traceback})
		}
		if req.StopOnError {
			s.abortBefore = time.Now()
		}
	}
	if counted {
		s.histMu.Lock()
		parsed := res.Parsed
		if parsed == "" {
			parsed = req.Code
		}
		// Stored without trailing newlines, as IPython's store_inputs.
		s.history = append(s.history, historyEntry{count: req.Count, input: strings.TrimRight(req.Code, "\n"), parsed: strings.TrimRight(parsed, "\n"),
			output: out.resultText, hasOut: out.hasResult})
		s.histMu.Unlock()
	}
	s.send(sock, m.Identities, "execute_reply", m, map[string]any{"status": res.Status}, content)
}

// aborted says whether an execute_request was sent before the last
// failed cell (with stop_on_error) was answered: its header's date,
// the frontend's clock on this machine, is earlier.
func (s *Server) aborted(m *Message) bool {
	if s.abortBefore.IsZero() {
		return false
	}
	sent, err := time.Parse(time.RFC3339Nano, m.Header.Date)
	return err == nil && sent.Before(s.abortBefore)
}

func (s *Server) complete(m *Message) map[string]any {
	var c struct {
		Code      string `json:"code"`
		CursorPos *int   `json:"cursor_pos"`
	}
	_ = json.Unmarshal(m.Content, &c)
	cursor := len([]rune(c.Code))
	if c.CursorPos != nil {
		cursor = *c.CursorPos
	}
	res, err := s.backend.Complete(s.ctx, c.Code, cursor)
	if err != nil {
		return map[string]any{"status": "ok", "matches": []string{}, "cursor_start": cursor, "cursor_end": cursor, "metadata": map[string]any{}}
	}
	if res.Matches == nil {
		res.Matches = []string{}
	}
	md := map[string]any{}
	if res.Types != nil {
		md["_jupyter_types_experimental"] = res.Types
	}
	return map[string]any{"status": "ok", "matches": res.Matches, "cursor_start": res.CursorStart, "cursor_end": res.CursorEnd, "metadata": md}
}

func (s *Server) inspect(m *Message) map[string]any {
	var c struct {
		Code        string `json:"code"`
		CursorPos   *int   `json:"cursor_pos"`
		DetailLevel int    `json:"detail_level"`
	}
	_ = json.Unmarshal(m.Content, &c)
	cursor := len([]rune(c.Code))
	if c.CursorPos != nil {
		cursor = *c.CursorPos
	}
	res, err := s.backend.Inspect(s.ctx, c.Code, cursor, min(max(c.DetailLevel, 0), 1))
	data := map[string]any{}
	if err == nil && res.Found {
		data["text/plain"] = res.Text
	}
	return map[string]any{"status": "ok", "found": err == nil && res.Found, "data": data, "metadata": map[string]any{}}
}

func (s *Server) isComplete(m *Message) map[string]any {
	var c struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(m.Content, &c)
	status, indent := s.backend.IsComplete(s.ctx, c.Code)
	out := map[string]any{"status": status}
	if status == "incomplete" {
		out["indent"] = indent
	}
	return out
}

// historyReply answers history_request from this kernel's executions
// as ipykernel's HistoryManager answers it in a session whose history
// database is new (see history.go).
func (s *Server) historyReply(m *Message) map[string]any {
	var c historyQuery
	c.Raw = true
	_ = json.Unmarshal(m.Content, &c)
	s.histMu.Lock()
	all := append([]historyEntry(nil), s.history...)
	s.histMu.Unlock()
	return map[string]any{"status": "ok", "history": c.answer(all)}
}

// shellOutput is the Output of one execute_request.
type shellOutput struct {
	s          *Server
	parent     *Message
	silent     bool
	allowStdin bool
	resultText string // text/plain of the last execute_result (history output)
	hasResult  bool   // an execute_result was shown
}

func (o *shellOutput) Stream(name, text string) {
	if o.silent || text == "" {
		return
	}
	o.s.publish(o.parent, "stream", map[string]any{"name": name, "text": text})
}

func (o *shellOutput) Display(data, metadata json.RawMessage, update bool, displayID string) {
	if o.silent {
		return
	}
	content := map[string]any{"data": data, "metadata": objectOrEmpty(metadata), "transient": map[string]any{}}
	if displayID != "" {
		content["transient"] = map[string]any{"display_id": displayID}
	}
	kind := "display_data"
	if update {
		kind = "update_display_data"
	}
	o.s.publish(o.parent, kind, content)
}

func (o *shellOutput) Result(data, metadata json.RawMessage) {
	var plain struct {
		Text string `json:"text/plain"`
	}
	_ = json.Unmarshal(data, &plain)
	o.resultText, o.hasResult = plain.Text, true
	if o.silent {
		return
	}
	o.s.publish(o.parent, "execute_result", map[string]any{"data": data, "metadata": objectOrEmpty(metadata), "execution_count": o.s.count})
}

func (o *shellOutput) ClearOutput(wait bool) {
	if o.silent {
		return
	}
	o.s.publish(o.parent, "clear_output", map[string]any{"wait": wait})
}

// Input sends input_request on stdin to the frontend that sent the
// execute_request and waits for its input_reply.
func (o *shellOutput) Input(ctx context.Context, prompt string, password bool) (string, error) {
	if !o.allowStdin {
		return "", ErrStdinNotAllowed
	}
	for len(o.s.stdinReplies) > 0 { // a stale reply of an earlier request
		<-o.s.stdinReplies
	}
	o.s.send(o.s.stdin, o.parent.Identities, "input_request", o.parent, nil, map[string]any{"prompt": prompt, "password": password})
	select {
	case r := <-o.s.stdinReplies:
		var c struct {
			Value string `json:"value"`
		}
		if err := json.Unmarshal(r.Content, &c); err != nil {
			return "", fmt.Errorf("input_reply: %w", err)
		}
		return c.Value, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}
