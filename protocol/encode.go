package protocol

import (
	"encoding/json"
	"github.com/ripple-run/ripple/internal/jsonstr"
	"strconv"
)

// This file encodes what goes on the wire: responses and notifications from
// the server, requests from clients (tests, benchmarks, scripts). The
// Append functions write into a caller's buffer so a connection can reuse
// one.

// AppendResult appends the response {"jsonrpc":"2.0","id":id,"result":...}.
// result is encoded with encoding/json; nil gives null. On an encoding error
// dst is returned unchanged with the error.
func AppendResult(dst []byte, id json.RawMessage, result any) ([]byte, error) {
	body, err := marshalOrNull(result)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"result":`...)
	dst = append(dst, body...)
	return append(dst, '}'), nil
}

// AppendError appends the response {"jsonrpc":"2.0","id":id,"error":e}.
func AppendError(dst []byte, id json.RawMessage, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendQuoted(dst, e.Message)
	if len(e.Data) > 0 && json.Valid(e.Data) {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, "}}"...)
}

// AppendResponse appends the reply to a request: an error response when err
// is non-nil (see AsError), else a result response; a result that cannot be
// encoded becomes an InternalError response. It always yields a reply.
func AppendResponse(dst []byte, id json.RawMessage, result any, err error) []byte {
	if err == nil {
		out, merr := AppendResult(dst, id, result)
		if merr == nil {
			return out
		}
		err = merr
	}
	return AppendError(dst, id, AsError(err))
}

// jsonAppender is implemented by the types written by hand because they are
// most of the traffic.
type jsonAppender interface {
	appendJSON(dst []byte) ([]byte, error)
}

// AppendNotification appends {"jsonrpc":"2.0","method":method,"params":params}.
func AppendNotification(dst []byte, method string, params any) ([]byte, error) {
	if a, ok := params.(jsonAppender); ok {
		start := len(dst)
		dst = append(dst, `{"jsonrpc":"2.0","method":`...)
		dst = appendQuoted(dst, method)
		dst = append(dst, `,"params":`...)
		out, err := a.appendJSON(dst)
		if err != nil {
			return dst[:start], err
		}
		return append(out, '}'), nil
	}
	body, err := marshalOrNull(params)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = appendQuoted(dst, method)
	dst = append(dst, `,"params":`...)
	dst = append(dst, body...)
	return append(dst, '}'), nil
}

// AppendRequest appends a request {"jsonrpc":"2.0","id":id,"method":...,
// "params":...}, as a client sends it; a nil id makes it a notification.
func AppendRequest(dst []byte, id json.RawMessage, method string, params any) ([]byte, error) {
	body, err := marshalOrNull(params)
	if err != nil {
		return dst, err
	}
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = appendID(dst, id)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst = appendQuoted(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, body...)
	}
	return append(dst, '}'), nil
}

// JoinReplies assembles the replies to one frame: nil when there are none
// (a notification, or a batch of notifications), the reply itself for a
// single message, a JSON array for a batch.
func JoinReplies(batch bool, replies [][]byte) []byte {
	if len(replies) == 0 {
		return nil
	}
	if !batch {
		return replies[0]
	}
	n := 1 + len(replies)
	for _, r := range replies {
		n += len(r)
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, r := range replies {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}

// ServerMessage is a message from the server as a client reads it: a
// response (ID set, Result or Error) or a notification (Method and Params).
type ServerMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// IsNotification reports whether m is a notification rather than a response.
func (m *ServerMessage) IsNotification() bool { return m.Method != "" && m.ID == nil }

var jsonNull = []byte("null")

func marshalOrNull(v any) ([]byte, error) {
	if v == nil {
		return jsonNull, nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		if len(raw) == 0 {
			return jsonNull, nil
		}
		return raw, nil
	}
	return json.Marshal(v)
}

func appendID(dst []byte, id json.RawMessage) []byte {
	if len(id) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, id...)
}

// appendQuoted appends s as a JSON string (see jsonstr.Append).
func appendQuoted(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }
