package protocol

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
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
	// Inner are the values of the statements nested in a compound
	// statement (if/for/while/with/try/match), in source order: the last
	// value each had in the run that made this update and how many times
	// it ran (kernel/PROTOCOL.md "Inner values"). Absent for a simple
	// statement, a Pending update, and one whose inner statements never
	// completed. Sent, cached, replayed and restored with the update, so
	// a fromCache update carries the inner values of the run it comes from.
	Inner []InnerValue `json:"inner,omitempty" decode:"optional"`
}

// InnerValue is one statement nested in a compound statement: an
// assignment, augmented or annotated assignment, or expression statement
// at any depth, not inside a nested def, class or lambda.
type InnerValue struct {
	Range Range `json:"range"`
	// Type and Preview are its last value's, as an update's (a cut repr);
	// absent when it has none to show (an augmented assignment to an
	// attribute or item, or only a Panic).
	Type    string `json:"type,omitempty" decode:"optional"`
	Preview string `json:"preview,omitempty" decode:"optional"`
	// Count is how many times it completed in the run (a loop body's:
	// its iterations that reached it); 0 with Panic set when it raised the
	// first time it ran.
	Count int `json:"count" decode:"min=0"`
	// Panic is the exception ("ZeroDivisionError: division by zero") when
	// this inner statement raised the exception that ended the compound
	// statement; Type and Preview are then its value from the last run
	// that completed, if any.
	Panic string `json:"panic,omitempty" decode:"optional"`
}

// UnmarshalJSON decodes strictly.
func (v *InnerValue) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, v) }

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
	u.Payload = u.Payload.Clone()
	u.Inner = slices.Clone(u.Inner) // InnerValue holds no pointers
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
	if len(u.Inner) > 0 {
		dst = append(dst, `,"inner":[`...)
		for i := range u.Inner {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = u.Inner[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// MarshalJSON writes v as appendJSON does.
func (v InnerValue) MarshalJSON() ([]byte, error) { return v.appendJSON(make([]byte, 0, 96)), nil }

// appendJSON appends v as JSON, its empty optional fields left out.
func (v *InnerValue) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"range":`...)
	dst = v.Range.appendJSON(dst)
	if v.Type != "" {
		dst = append(dst, `,"type":`...)
		dst = appendQuoted(dst, v.Type)
	}
	if v.Preview != "" {
		dst = append(dst, `,"preview":`...)
		dst = appendQuoted(dst, v.Preview)
	}
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, int64(v.Count), 10)
	if v.Panic != "" {
		dst = append(dst, `,"panic":`...)
		dst = appendQuoted(dst, v.Panic)
	}
	return append(dst, '}')
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
	// PayloadPending: the statement will run, is running (Message
	// "running"), was held (Message "held: ...") or was not reached
	// (Message "not reached"); Reason says why for the last two.
	PayloadPending PayloadType = "Pending"
)

// Pending messages with a meaning of their own (PROTOCOL.md 8.1, 8.2, 8.4);
// any other message, "" included, is a statement waiting to run.
const (
	// MessageRunning marks the statement running now; StartedAt says since
	// when.
	MessageRunning = "running"
	// MessageNotReached: the statement will not run in this run; Reason
	// says why (absent when a return ended the frame).
	MessageNotReached = "not reached"
	// MessageHeldPrefix starts the message of a statement whose effect was
	// held: "held: shutil.rmtree('out')".
	MessageHeldPrefix = "held: "
)

// Kinds of PendingReason.
const (
	// ReasonException: the statement ExpressionID raised and ended the
	// frame (8.1).
	ReasonException = "exception"
	// ReasonHeld: on the held statement itself, Event and Args name the
	// effect; on a later one, ExpressionID names the held statement (8.2).
	ReasonHeld = "held"
	// ReasonInterrupted: the run was interrupted before the statement ran.
	ReasonInterrupted = "interrupted"
	// ReasonKernelDied: the kernel died before the statement ran.
	ReasonKernelDied = "kernelDied"
	// ReasonWaitingForKernel: the run waits for its kernel (a lost agent
	// within its grace, a Slurm job not started yet); Detail says why,
	// for people ("slurm job 17 PENDING (Resources), ...").
	ReasonWaitingForKernel = "waitingForKernel"
)

// MessageWaitingForKernel is the Pending message of a statement whose run
// waits for its kernel (reason ReasonWaitingForKernel).
const MessageWaitingForKernel = "waiting for a kernel"

// PendingReason says why a Pending statement will not run in this run
// (PROTOCOL.md 8.1, 8.2, 8.4). Kind is one of the Reason constants; a
// kind this version does not know is passed on as it is.
type PendingReason struct {
	Kind string `json:"kind"`
	// ExpressionID is the statement that raised (exception) or was held
	// (held, on the statements after it).
	ExpressionID ExpressionID `json:"expressionId,omitempty" decode:"optional"`
	// Event is the audit event of a held effect ("open",
	// "shutil.rmtree"), on the held statement only.
	Event string `json:"event,omitempty" decode:"optional"`
	// Args are the held event's arguments, short reprs (at most 200
	// characters each).
	Args []string `json:"args,omitempty" decode:"optional"`
	// Detail says why a run waits for its kernel (waitingForKernel).
	Detail string `json:"detail,omitempty" decode:"optional"`
}

// UnmarshalJSON decodes strictly.
func (r *PendingReason) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, r) }

// Payload is the union Value | Panic | DataflowError | Pending; Type says
// which fields are meaningful:
//
//	Value:         Preview, MimeTypes, Effects (each optional)
//	Panic:         Message, Trace
//	DataflowError: Trace
//	Pending:       Message, Reason, StartedAt (each optional)
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
	// Effects are the effects the statement's last completed run made
	// ("open('out.csv', 'w')"), in order, at most 10 (PROTOCOL.md 8.2).
	Effects []string `json:"effects" decode:"variants=Value?"`
	// Reason says why a Pending statement is held or not reached; nil for
	// one that waits, runs, or follows a return.
	Reason *PendingReason `json:"reason" decode:"variants=Pending?"`
	// StartedAt is when a running statement started, by the kernel's
	// clock: RFC 3339 UTC with milliseconds ("2026-11-29T01:02:03.456Z").
	StartedAt string `json:"startedAt" decode:"variants=Pending?"`
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

// StartedAtLayout is the form of Payload.StartedAt (in UTC).
const StartedAtLayout = "2006-01-02T15:04:05.000Z07:00"

// RunningPayload returns the Pending payload of a statement that started
// running at t.
func RunningPayload(t time.Time) Payload {
	return Payload{Type: PayloadPending, Message: MessageRunning, StartedAt: t.UTC().Format(StartedAtLayout)}
}

// NotReachedPayload returns the Pending payload of a statement that will
// not run in this run, for the given reason (ReasonInterrupted,
// ReasonKernelDied; ReasonException and ReasonHeld name the statement
// that ended the frame).
func NotReachedPayload(kind string, origin ExpressionID) Payload {
	return Payload{Type: PayloadPending, Message: MessageNotReached, Reason: &PendingReason{Kind: kind, ExpressionID: origin}}
}

// HeldPayload returns the Pending payload of a statement whose effect was
// held: effect is the effect written as a call ("open('a.txt', 'w')"),
// event and args the audit event.
func HeldPayload(effect, event string, args ...string) Payload {
	return Payload{Type: PayloadPending, Message: MessageHeldPrefix + effect,
		Reason: &PendingReason{Kind: ReasonHeld, Event: event, Args: args}}
}

// DataflowErrorPayload returns a DataflowError payload.
func DataflowErrorPayload(trace ...ExpressionID) Payload {
	if trace == nil {
		trace = []ExpressionID{}
	}
	return Payload{Type: PayloadDataflowError, Trace: trace}
}

// IsRunning reports whether p marks the statement running now.
func (p *Payload) IsRunning() bool { return p.Type == PayloadPending && p.Message == MessageRunning }

// IsNotReached reports whether p is a statement that will not run in this
// run (after a return, an exception, a held effect, an interrupt or a
// kernel death).
func (p *Payload) IsNotReached() bool {
	return p.Type == PayloadPending && p.Message == MessageNotReached
}

// IsHeld reports whether p is the statement whose effect was held.
func (p *Payload) IsHeld() bool {
	return p.Type == PayloadPending && p.Reason != nil && p.Reason.Kind == ReasonHeld &&
		len(p.Message) > len(MessageHeldPrefix) && p.Message[:len(MessageHeldPrefix)] == MessageHeldPrefix
}

// IsWaiting reports whether p is a statement that waits to run in this
// run: Pending, neither running, held nor not reached.
func (p *Payload) IsWaiting() bool {
	return p.Type == PayloadPending && !p.IsRunning() && !p.IsNotReached() && !p.IsHeld()
}

// Clone returns a deep copy: nothing in the result aliases p.
func (p Payload) Clone() Payload {
	p.Trace = slices.Clone(p.Trace)
	p.MimeTypes = slices.Clone(p.MimeTypes)
	p.Effects = slices.Clone(p.Effects)
	if p.Reason != nil {
		r := *p.Reason
		r.Args = slices.Clone(r.Args)
		p.Reason = &r
	}
	return p
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
			dst = appendStrings(append(dst, `,"mimeTypes":`...), p.MimeTypes)
		}
		if len(p.Effects) > 0 {
			dst = appendStrings(append(dst, `,"effects":`...), p.Effects)
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
		if p.Reason != nil {
			dst = p.Reason.appendJSON(append(dst, `,"reason":`...))
		}
		if p.StartedAt != "" {
			dst = append(dst, `,"startedAt":`...)
			dst = appendQuoted(dst, p.StartedAt)
		}
	default:
		return nil, fmt.Errorf("%w: unknown type %q", ErrBadPayload, p.Type)
	}
	return append(dst, '}'), nil
}

// appendJSON appends r as JSON, its empty optional fields left out.
func (r *PendingReason) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"kind":`...)
	dst = appendQuoted(dst, r.Kind)
	if r.ExpressionID != "" {
		dst = append(dst, `,"expressionId":`...)
		dst = appendQuoted(dst, string(r.ExpressionID))
	}
	if r.Event != "" {
		dst = append(dst, `,"event":`...)
		dst = appendQuoted(dst, r.Event)
	}
	if len(r.Args) > 0 {
		dst = appendStrings(append(dst, `,"args":`...), r.Args)
	}
	if r.Detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = appendQuoted(dst, r.Detail)
	}
	return append(dst, '}')
}

// appendStrings appends ss as a JSON array of strings.
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQuoted(dst, s)
	}
	return append(dst, ']')
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
