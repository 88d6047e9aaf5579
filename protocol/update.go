package protocol

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// ExpressionUpdate is the state of one expression after a run (or at its
// start, with a Pending payload).
type ExpressionUpdate struct {
	ExpressionID ExpressionID `json:"expressionId"`
	// Type is the value's qualified type name ("builtins.int"); "" when
	// there is no value.
	Type string `json:"type,omitempty" decode:"optional"`
	// MethodCall is set when the statement's value is a direct call of a
	// project function (the target of a LocalCall).
	MethodCall    *MethodCall     `json:"methodCall,omitempty" decode:"optional"`
	ProfilingInfo []ProfilingInfo `json:"profilingInfo"`
	FromCache     bool            `json:"fromCache"`
	Range         *Range          `json:"range,omitempty" decode:"optional"`
	Payload       Payload         `json:"payload"`
}

// MethodCall names the project function a statement calls.
type MethodCall struct {
	MethodPointer MethodPointer `json:"methodPointer"`
}

// ProfilingInfo is one measurement of a statement's run. The only type is
// "ExecutionTime".
type ProfilingInfo struct {
	Type     string `json:"type"`
	NanoTime int64  `json:"nanoTime" decode:"min=0"`
}

// ExecutionTime returns the ProfilingInfo for a run that took ns nanoseconds.
func ExecutionTime(ns int64) ProfilingInfo {
	return ProfilingInfo{Type: "ExecutionTime", NanoTime: ns}
}

// Clone returns a deep copy: nothing in the result aliases u.
func (u ExpressionUpdate) Clone() ExpressionUpdate {
	if u.MethodCall != nil {
		mc := *u.MethodCall
		u.MethodCall = &mc
	}
	if u.Range != nil {
		r := *u.Range
		u.Range = &r
	}
	u.ProfilingInfo = slices.Clone(u.ProfilingInfo)
	u.Payload.Trace = slices.Clone(u.Payload.Trace)
	return u
}

// MarshalJSON writes profilingInfo as [] rather than null when empty.
func (u ExpressionUpdate) MarshalJSON() ([]byte, error) {
	return u.appendJSON(make([]byte, 0, 256))
}

// appendJSON appends u as JSON. Expression updates are most of what the
// server sends, so they are written by hand rather than through reflection
// (BenchmarkAppendExpressionUpdates); the text is what encoding/json would
// write, except that <, > and & are left as they are.
func (u *ExpressionUpdate) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"expressionId":`...)
	dst = appendQuoted(dst, string(u.ExpressionID))
	if u.Type != "" {
		dst = append(dst, `,"type":`...)
		dst = appendQuoted(dst, u.Type)
	}
	if u.MethodCall != nil {
		dst = append(dst, `,"methodCall":{"methodPointer":`...)
		dst = u.MethodCall.MethodPointer.appendJSON(dst)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"profilingInfo":[`...)
	for i, p := range u.ProfilingInfo {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":`...)
		dst = appendQuoted(dst, p.Type)
		dst = append(dst, `,"nanoTime":`...)
		dst = strconv.AppendInt(dst, p.NanoTime, 10)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"fromCache":`...)
	dst = strconv.AppendBool(dst, u.FromCache)
	if u.Range != nil {
		dst = append(dst, `,"range":`...)
		dst = u.Range.appendJSON(dst)
	}
	dst = append(dst, `,"payload":`...)
	dst, err := u.Payload.appendJSON(dst)
	if err != nil {
		return nil, fmt.Errorf("expression %s: %w", u.ExpressionID, err)
	}
	return append(dst, '}'), nil
}

// UnmarshalJSON decodes strictly.
func (u *ExpressionUpdate) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, u) }

// PayloadType tags the variant of a Payload.
type PayloadType string

const (
	// PayloadValue: the statement ran (or came from the cache) and has a
	// value; Preview is its cut repr.
	PayloadValue PayloadType = "Value"
	// PayloadPanic: the statement raised, or depends on one that did;
	// Message is the exception, Trace starts at the statement that raised.
	PayloadPanic PayloadType = "Panic"
	// PayloadDataflowError is reserved; Python kernels do not produce it.
	PayloadDataflowError PayloadType = "DataflowError"
	// PayloadPending: the statement will run, or was not reached (Message
	// "not reached").
	PayloadPending PayloadType = "Pending"
)

// Payload is the union Value | Panic | DataflowError | Pending; Type says
// which fields are meaningful:
//
//	Value:         Preview (optional), MimeTypes (optional)
//	Panic:         Message, Trace
//	DataflowError: Trace
//	Pending:       Message (optional)
//
// The tags are for the strict decoder, as StackItem's.
type Payload struct {
	Type    PayloadType    `json:"type" decode:"tag=Value|Panic|DataflowError|Pending"`
	Preview string         `json:"preview" decode:"variants=Value?"`
	Message string         `json:"message" decode:"variants=Panic|Pending?"`
	Trace   []ExpressionID `json:"trace" decode:"variants=Panic|DataflowError"`
	// MimeTypes are the representations a Value offers beyond text/plain
	// (PROTOCOL.md 7.2: "text/html", "image/png", ...), found without
	// rendering; the "ripple:display" visualization renders them.
	MimeTypes []string `json:"mimeTypes" decode:"variants=Value?"`
}

// ValuePayload returns a Value payload with the given preview.
func ValuePayload(preview string) Payload { return Payload{Type: PayloadValue, Preview: preview} }

// PanicPayload returns a Panic payload: message is "ExcType: text", trace
// starts at the statement that raised.
func PanicPayload(message string, trace ...ExpressionID) Payload {
	if trace == nil {
		trace = []ExpressionID{}
	}
	return Payload{Type: PayloadPanic, Message: message, Trace: trace}
}

// PendingPayload returns a Pending payload; message may be "".
func PendingPayload(message string) Payload { return Payload{Type: PayloadPending, Message: message} }

// DataflowErrorPayload returns a DataflowError payload.
func DataflowErrorPayload(trace ...ExpressionID) Payload {
	if trace == nil {
		trace = []ExpressionID{}
	}
	return Payload{Type: PayloadDataflowError, Trace: trace}
}

// ErrBadPayload is returned when encoding a Payload of unknown type.
var ErrBadPayload = errors.New("invalid payload")

// MarshalJSON writes the fields of the payload's variant only.
func (p Payload) MarshalJSON() ([]byte, error) {
	return p.appendJSON(make([]byte, 0, 64))
}

func (p *Payload) appendJSON(dst []byte) ([]byte, error) {
	switch p.Type {
	case PayloadValue:
		dst = append(dst, `{"type":"Value"`...)
		if p.Preview != "" {
			dst = append(dst, `,"preview":`...)
			dst = appendQuoted(dst, p.Preview)
		}
		if len(p.MimeTypes) > 0 {
			dst = append(dst, `,"mimeTypes":[`...)
			for i, m := range p.MimeTypes {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendQuoted(dst, m)
			}
			dst = append(dst, ']')
		}
	case PayloadPanic:
		dst = append(dst, `{"type":"Panic","message":`...)
		dst = appendQuoted(dst, p.Message)
		dst = appendTrace(dst, p.Trace)
	case PayloadDataflowError:
		dst = append(dst, `{"type":"DataflowError"`...)
		dst = appendTrace(dst, p.Trace)
	case PayloadPending:
		dst = append(dst, `{"type":"Pending"`...)
		if p.Message != "" {
			dst = append(dst, `,"message":`...)
			dst = appendQuoted(dst, p.Message)
		}
	default:
		return nil, fmt.Errorf("%w: unknown type %q", ErrBadPayload, p.Type)
	}
	return append(dst, '}'), nil
}

func appendTrace(dst []byte, trace []ExpressionID) []byte {
	dst = append(dst, `,"trace":[`...)
	for i, id := range trace {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, string(id))
	}
	return append(dst, ']')
}

// UnmarshalJSON decodes strictly: the type tag and its variant's fields.
func (p *Payload) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, p) }
