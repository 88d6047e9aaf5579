package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/ripple-run/ripple/protocol"
)

// IPython's session state in the kernel (kernel jupyter_shell.py and
// jupyter_comm.py, reached as modes of the jupyterCell method): In, Out
// and their friends around each cell, user_expressions after it, comms.

// session calls a jupyterCell mode whose answer is only logged when it
// fails: the cell's own outcome does not depend on it.
func (s *Session) session(ctx context.Context, params map[string]any) json.RawMessage {
	raw, err := s.eng.KernelCall(ctx, s.ctxID, "jupyterCell", params)
	if err != nil {
		s.log.Warn("jupyter: kernel session state", "mode", params["mode"], "err", err)
		return nil
	}
	return raw
}

// historyName matches IPython's history variables in a statement: a
// statement reading one reads something the engine's cache does not see
// change (they live in builtins), so it runs again every time its cell
// runs, as it would in IPython.
var historyName = regexp.MustCompile(`\b(_{1,3}|_\d+|_i{1,3}|_i\d+|_ih|_oh|_dh|In|Out)\b`)

// historyReaders are the statements of the cell keyed key, in the frame
// as it is (the script before the cell is placed, whose slots start at
// starts), whose text names one of IPython's history variables.
func (s *Session) historyReaders(key string, starts []int) []protocol.ExpressionID {
	i := -1
	for k := range s.state.Slots {
		if s.state.Slots[k].Key == key {
			i = k
		}
	}
	if i < 0 || i+1 >= len(starts) || !historyName.MatchString(s.state.Slots[i].Source) {
		return nil
	}
	us, err := s.eng.TopFrameUpdates(s.ctxID)
	if err != nil {
		return nil
	}
	lines := strings.SplitAfter(s.state.Slots[i].Source, "\n")
	var out []protocol.ExpressionID
	for _, u := range us {
		if u.Range == nil || slotOf(starts, u.Range.Start.Line) != i {
			continue
		}
		from, to := u.Range.Start.Line-starts[i], min(u.Range.End.Line-starts[i]+1, len(lines))
		if from >= 0 && from < to && historyName.MatchString(strings.Join(lines[from:to], "")) {
			out = append(out, u.ExpressionID)
		}
	}
	return out
}

// userExpressions evaluates an execute_request's user_expressions in the
// notebook's namespace, as ipykernel answers them.
func (s *Session) userExpressions(ctx context.Context, exprs map[string]string) map[string]any {
	raw, err := s.eng.KernelCall(ctx, s.ctxID, "jupyterCell", map[string]any{"mode": "expressions", "context": string(s.ctxID), "expressions": exprs})
	out := map[string]any{}
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil {
		for name := range exprs {
			out[name] = map[string]any{"status": "error", "ename": "RippleError", "evalue": err.Error(),
				"traceback": []string{"RippleError: " + err.Error()}}
		}
	}
	return out
}

// Comm implements CommBackend: the kernel's comm manager handles the
// message (jupyter_comm.py).
func (s *Session) Comm(ctx context.Context, msgType string, content json.RawMessage) (CommReply, error) {
	raw, err := s.eng.KernelCall(ctx, s.ctxID, "jupyterCell", map[string]any{"mode": "comm", "type": msgType, "content": content})
	if err != nil {
		return CommReply{}, err
	}
	var r CommReply
	var v struct {
		Messages []CommMessage `json:"messages"`
		Stdout   string        `json:"stdout"`
		Stderr   string        `json:"stderr"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return r, fmt.Errorf("jupyterCell comm: %w", err)
	}
	return CommReply{Messages: v.Messages, Stdout: v.Stdout, Stderr: v.Stderr}, nil
}

// CommInfo implements CommBackend.
func (s *Session) CommInfo(ctx context.Context, target string) (map[string]any, error) {
	raw, err := s.eng.KernelCall(ctx, s.ctxID, "jupyterCell", map[string]any{"mode": "commInfo", "target_name": target})
	if err != nil {
		return nil, err
	}
	var v struct {
		Comms map[string]any `json:"comms"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("jupyterCell commInfo: %w", err)
	}
	return v.Comms, nil
}
