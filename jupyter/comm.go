package jupyter

import (
	"encoding/json"
)

// comm routes a frontend's comm_open, comm_msg or comm_close to the
// backend's comm manager and publishes what it sent back (CommBackend).
func (s *Server) comm(m *Message) {
	cb, ok := s.backend.(CommBackend)
	if !ok {
		if m.Header.MsgType == "comm_open" {
			s.publish(m, "comm_close", map[string]any{"comm_id": commID(m), "data": map[string]any{}})
		}
		return
	}
	res, err := cb.Comm(s.ctx, m.Header.MsgType, m.Content)
	if err != nil {
		s.log.Warn("jupyter: comm", "type", m.Header.MsgType, "err", err)
		if m.Header.MsgType == "comm_open" {
			// The frontend's comm cannot open: it is told so, as ipykernel
			// tells it of a target that failed.
			s.publish(m, "comm_close", map[string]any{"comm_id": commID(m), "data": map[string]any{}})
		}
		return
	}
	// The comm messages first, then what the handler printed, in the
	// order ipykernel's are seen (its streams are flushed later).
	out := &shellOutput{s: s, parent: m}
	for _, c := range res.Messages {
		out.Comm(c.MsgType, c.Content, c.Metadata)
	}
	out.Stream("stdout", res.Stdout)
	out.Stream("stderr", res.Stderr)
}

func commID(m *Message) string {
	var c struct {
		CommID string `json:"comm_id"`
	}
	_ = json.Unmarshal(m.Content, &c)
	return c.CommID
}

// commInfo answers comm_info_request: the backend's open comms (of the
// request's target_name, when given).
func (s *Server) commInfo(m *Message) map[string]any {
	var c struct {
		Target string `json:"target_name"`
	}
	_ = json.Unmarshal(m.Content, &c)
	comms := map[string]any{}
	if cb, ok := s.backend.(CommBackend); ok {
		got, err := cb.CommInfo(s.ctx, c.Target)
		if err != nil {
			s.log.Warn("jupyter: comm_info", "err", err)
		} else if got != nil {
			comms = got
		}
	}
	return map[string]any{"status": "ok", "comms": comms}
}

// Comm publishes a comm message the kernel sent while this request ran.
func (o *shellOutput) Comm(msgType string, content, metadata json.RawMessage) {
	switch msgType {
	case "comm_open", "comm_msg", "comm_close":
	default:
		return // the kernel sends nothing else this way
	}
	o.s.publishMeta(o.parent, msgType, objectOrEmpty(metadata), objectOrEmpty(content))
}
