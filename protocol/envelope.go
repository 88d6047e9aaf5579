package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// This file decodes what a client sends: one WebSocket text message holds
// one JSON-RPC 2.0 message or a batch of them. The rules, from the JSON-RPC
// 2.0 specification:
//
//   - Not JSON at all: one ParseError reply with id null, even when the text
//     starts like a batch.
//   - JSON that is not an object or a non-empty array: one InvalidRequest
//     reply with id null ("[]" included).
//   - A batch: each element classified on its own, the replies sent back as
//     one array in element order; nothing is sent when every element is a
//     notification.
//   - An object with an "id" (string, number or null) is a request and gets
//     exactly one reply carrying that id byte for byte; without "id" it is a
//     notification and is never answered, unless it is invalid: invalid
//     messages are always answered (with their id when it is usable, else
//     null), because the sender cannot be assumed to have meant a
//     notification.
//   - Invalid: "jsonrpc" not exactly "2.0", "method" missing or not a
//     string, "id" of another type, "params" neither object, array nor null
//     (null params are taken as absent, as many clients send them).
//
// Member names are matched exactly (encoding/json would match "Method" and
// "METHOD" too), so the top-level object is walked here; params stay raw
// until the method is known (DecodeParams).

// Kind classifies one incoming message.
type Kind uint8

const (
	// KindInvalid is a message to answer with Message.Err.
	KindInvalid Kind = iota
	// KindRequest is a call to answer with a result or an error carrying
	// Message.ID.
	KindRequest
	// KindNotification is a call never answered.
	KindNotification
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one decoded JSON-RPC message.
type Message struct {
	Kind Kind
	// ID is the request's id exactly as received (a JSON string, number or
	// null), for KindRequest and KindInvalid; nil for KindNotification. It
	// aliases the decoded frame's bytes.
	ID json.RawMessage
	// Method is the called method (KindRequest, KindNotification).
	Method string
	// Params is the raw params value, nil when absent or null. It aliases
	// the decoded frame's bytes.
	Params json.RawMessage
	// Err is the reply for KindInvalid.
	Err *Error
}

// Frame is one decoded WebSocket text message.
type Frame struct {
	// Batch reports whether replies go back as a JSON array (the frame was a
	// non-empty array).
	Batch bool
	// Messages are the frame's messages in order; never empty.
	Messages []Message
}

var nullID = json.RawMessage("null")

// Decode classifies one incoming WebSocket text message. It never fails:
// input that is not JSON-RPC comes back as KindInvalid messages carrying the
// prescribed error reply. The returned IDs and Params alias data, so data
// must not be modified while they are in use.
func Decode(data []byte) Frame {
	if !json.Valid(data) {
		return invalidFrame(ParseError(parseProblem(data)))
	}
	data = bytes.TrimSpace(data)
	switch data[0] {
	case '{':
		return Frame{Messages: []Message{decodeMessage(data)}}
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(data, &elems); err != nil {
			return invalidFrame(ParseError(err.Error())) // unreachable: data is valid
		}
		if len(elems) == 0 {
			return invalidFrame(InvalidRequest("empty batch"))
		}
		msgs := make([]Message, len(elems))
		for i, e := range elems {
			if len(e) == 0 || e[0] != '{' {
				msgs[i] = Message{Kind: KindInvalid, ID: nullID, Err: InvalidRequest(
					"batch element " + strconv.Itoa(i) + " is a " + jsonKind(e) + ", not a request object")}
				continue
			}
			msgs[i] = decodeMessage(e)
		}
		return Frame{Batch: true, Messages: msgs}
	}
	return invalidFrame(InvalidRequest("expected a request object or a batch array, got " + jsonKind(data)))
}

func invalidFrame(e *Error) Frame {
	return Frame{Messages: []Message{{Kind: KindInvalid, ID: nullID, Err: e}}}
}

// parseProblem describes why data is not JSON, with the (1-based) position
// of the offending byte.
func parseProblem(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error() + " at byte " + strconv.FormatInt(se.Offset, 10)
	}
	if err == nil {
		return "invalid JSON"
	}
	return err.Error()
}

// decodeMessage classifies one JSON object (already known to be valid JSON).
func decodeMessage(obj []byte) Message {
	var version, id, method, params json.RawMessage
	var haveID bool
	for i := 1; ; {
		key, value, next, ok := nextMember(obj, i)
		if !ok {
			break
		}
		i = next
		switch string(key) {
		case "jsonrpc":
			version = value
		case "id":
			id, haveID = value, true
		case "method":
			method = value
		case "params":
			params = value
		}
	}

	// The id first, so that an invalid message can still be answered with
	// its id when that id is usable.
	replyID := nullID
	if haveID {
		switch jsonKind(id) {
		case "string", "number", "null":
			replyID = id
		default:
			return invalidMessage(nullID, "id must be a string, a number or null, got "+jsonKind(id))
		}
	}
	if version == nil {
		return invalidMessage(replyID, `missing member "jsonrpc"`)
	}
	if v, ok := stringValue(version); !ok || v != "2.0" {
		return invalidMessage(replyID, `jsonrpc must be "2.0"`)
	}
	if method == nil {
		return invalidMessage(replyID, `missing member "method"`)
	}
	name, ok := stringValue(method)
	if !ok {
		return invalidMessage(replyID, "method must be a string, got "+jsonKind(method))
	}
	switch jsonKind(params) {
	case "nothing", "null":
		params = nil
	case "object", "array":
	default:
		return invalidMessage(replyID, "params must be an object or an array, got "+jsonKind(params))
	}
	if !haveID {
		return Message{Kind: KindNotification, Method: name, Params: params}
	}
	return Message{Kind: KindRequest, ID: id, Method: name, Params: params}
}

func invalidMessage(id json.RawMessage, reason string) Message {
	return Message{Kind: KindInvalid, ID: id, Err: InvalidRequest(reason)}
}

// nextMember reads the member of a valid JSON object that starts at or
// after i (i = 1 for the first, just past '{'): the key without its quotes
// and the value, both aliasing obj, and the index to pass for the next one.
// ok is false past the last member. Keys with escapes are unescaped into
// new memory, so "\u006dethod" is "method", as JSON says.
func nextMember(obj []byte, i int) (key, value []byte, next int, ok bool) {
	i = skipSpace(obj, i)
	if i < len(obj) && obj[i] == ',' {
		i = skipSpace(obj, i+1)
	}
	if i >= len(obj) || obj[i] != '"' {
		return nil, nil, i, false
	}
	keyEnd := skipString(obj, i)
	key = unquoteKey(obj[i:keyEnd])
	i = skipSpace(obj, keyEnd)
	i = skipSpace(obj, i+1) // past ':'
	end := skipValue(obj, i)
	return key, obj[i:end], end, true
}

// unquoteKey returns the text of a quoted key: a subslice when it has no
// escapes (the common case, no allocation).
func unquoteKey(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil
	}
	return []byte(s)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the valid JSON value starting at i.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
		i++
	}
	return i
}
