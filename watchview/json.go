package watchview

import (
	"encoding/json"
	"io"

	"github.com/ripple-run/ripple/protocol"
)

// The event names of the JSON lines (see the package doc for each shape).
const (
	EventWatching   = "watching"
	EventFile       = "file"
	EventUpdate     = "update"
	EventOutput     = "output"
	EventDiagnostic = "diagnostic"
	EventComplete   = "complete"
	EventFailed     = "failed"
	EventRestarted  = "kernelRestarted"
	EventInterrupt  = "interrupt"
	EventStopped    = "stopped"
)

// Event is one JSON line. Event says which fields are set; the package doc
// lists them per event.
type Event struct {
	Event string `json:"event"`
	Run   int    `json:"run,omitempty"`

	// watching
	Root          string `json:"root,omitempty"`
	Entry         string `json:"entry,omitempty"`
	Python        string `json:"python,omitempty"`
	PythonVersion string `json:"pythonVersion,omitempty"`

	// file
	Path string `json:"path,omitempty"`
	Kind string `json:"kind,omitempty"` // also failed: the ExecutionResult kind

	// update
	ExpressionID protocol.ExpressionID `json:"expressionId,omitempty"`
	Label        string                `json:"label,omitempty"`
	Line         int                   `json:"line,omitempty"`
	Type         string                `json:"type,omitempty"`
	FromCache    *bool                 `json:"fromCache,omitempty"`
	NanoTime     *int64                `json:"nanoTime,omitempty"`
	MethodCall   string                `json:"methodCall,omitempty"`
	Payload      *protocol.Payload     `json:"payload,omitempty"`

	// output
	Stream protocol.OutputStream `json:"stream,omitempty"`
	Text   string                `json:"text,omitempty"`

	// complete
	Recomputed *int `json:"recomputed,omitempty"`
	Cached     *int `json:"cached,omitempty"`
	Held       int  `json:"held,omitempty"`

	// failed, kernelRestarted
	Message    string               `json:"message,omitempty"`
	Diagnostic *protocol.Diagnostic `json:"diagnostic,omitempty"`
	Reason     string               `json:"reason,omitempty"`
}

// jsonPrinter writes one Event per line. Owned by the render goroutine.
type jsonPrinter struct {
	enc *json.Encoder
}

func newJSONPrinter(w io.Writer) *jsonPrinter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &jsonPrinter{enc: enc}
}

func (p *jsonPrinter) write(ev *Event) {
	// A write error (stdout closed) leaves nothing to tell it to.
	_ = p.enc.Encode(ev)
}

func (p *jsonPrinter) update(run int, r *Row) {
	fromCache, ns, payload := r.FromCache, r.NanoTime, r.Payload
	if payload.Type == protocol.PayloadPanic && payload.Trace == nil {
		payload.Trace = []protocol.ExpressionID{}
	}
	p.write(&Event{Event: EventUpdate, Run: run, ExpressionID: r.ID, Label: r.Label, Line: r.Line(), Type: r.Type,
		FromCache: &fromCache, NanoTime: &ns, MethodCall: r.MethodCall, Payload: &payload})
}

func (p *jsonPrinter) end(s RunSummary) {
	if s.Failed == nil {
		rec, cached := s.Recomputed, s.Cached
		p.write(&Event{Event: EventComplete, Run: s.Run, Recomputed: &rec, Cached: &cached, Held: s.Held, NanoTime: &s.NanoTime})
		return
	}
	p.write(&Event{Event: EventFailed, Run: s.Run, Kind: string(s.Failed.Kind), Message: s.Failed.Message, Diagnostic: s.Failed.Diagnostic})
}
