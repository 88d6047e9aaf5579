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
//			method, ok := protocol.LookupMethod(m.Method)
//			// !ok: protocol.MethodNotFound(m.Method)
//			params := method.NewParams()
//			err := protocol.DecodeParams(m.Params, params) // *Error, -32602, names the field
//			// method.Handling says who answers and in what order; a Handler:
//			result, err := method.Call(ctx, handler, clientID, params)
//			...
//		}
//	}
//	out := protocol.JoinReplies(frame.Batch, replies) // nil: send nothing
//
// Notifications go out with AppendNotification; clients use AppendRequest
// and read replies and notifications as ServerMessage.
//
// The files: envelope.go (Decode), encode.go (Append*), errors.go (every
// error code and the *Error constructors), methods.go (the names, and
// Methods: the one table of client methods with their params and result
// types and who handles them), handler.go (Handler, what serves them),
// types.go (ids, Position, Range, MethodPointer, ExpressionID),
// stackitem.go, update.go (ExpressionUpdate, its payload and inner values),
// diagnostic.go, params.go (method params and results), notifications.go,
// strict.go (the strict decoder behind every params type) and
// strictplan.go (its plans, read from the types' json and decode tags).
package protocol
