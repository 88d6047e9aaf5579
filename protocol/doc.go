// Package protocol defines ripple's client protocol (PROTOCOL.md in the
// shared docs): the JSON-RPC 2.0 envelope, the name of every method and
// notification, the params and result of every method, the params of every
// notification, and the error codes. It does no I/O.
//
// A server reads one WebSocket text message, classifies it, decodes each
// request's params strictly, and writes the replies:
//
//	frame := protocol.Decode(msg)
//	var replies [][]byte
//	for _, m := range frame.Messages {
//		switch m.Kind {
//		case protocol.KindInvalid:
//			replies = append(replies, protocol.AppendError(nil, m.ID, m.Err))
//		case protocol.KindRequest, protocol.KindNotification:
//			params, ok := protocol.NewParams(m.Method)
//			// !ok: protocol.MethodNotFound(m.Method)
//			err := protocol.DecodeParams(m.Params, params) // *Error, -32602, names the field
//			...
//		}
//	}
//	out := protocol.JoinReplies(frame.Batch, replies) // nil: send nothing
//
// Notifications go out with AppendNotification; clients use AppendRequest
// and read replies and notifications as ServerMessage.
//
// The files: envelope.go (Decode), encode.go (Append*), errors.go (every
// error code and the *Error constructors), methods.go (names), types.go
// (ids, Position, Range, MethodPointer, ExpressionID), stackitem.go,
// update.go (ExpressionUpdate and its payload), diagnostic.go, params.go
// (method params and results), notifications.go, strict.go (the strict
// field decoder behind every params type).
package protocol
