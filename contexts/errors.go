package contexts

import (
	"errors"

	"github.com/ripple-run/ripple/protocol"
)

// Sentinel errors. Operations wrap them with the id at fault
// ("context not found: 6f1c..."); match with errors.Is. ProtocolError
// turns them into the client protocol's error codes.
var (
	// ErrInvalidID: an empty context, visualization or expression id, or
	// another argument no record could have.
	ErrInvalidID = errors.New("invalid id")
	// ErrNoSlot: every kernel slot is closed (AssignSlotAmong).
	ErrNoSlot = errors.New("no open kernel slot")
	// ErrContextNotFound: no execution context with that id.
	ErrContextNotFound = errors.New("context not found")
	// ErrEmptyStack: pop of a context whose stack is empty.
	ErrEmptyStack = errors.New("stack is empty")
	// ErrInvalidStackItem: a malformed item, an ExplicitCall on a non-empty
	// stack or a LocalCall on an empty one.
	ErrInvalidStackItem = errors.New("invalid stack item")
	// ErrStackItemNotFound: no frame at that depth.
	ErrStackItemNotFound = errors.New("stack item not found")
	// ErrStaleFrame: the frame a write was meant for has been popped or
	// replaced since it was read (see RecordUpdates); the write is dropped.
	ErrStaleFrame = errors.New("stale stack frame")
	// ErrVisualizationNotFound: no visualization with that id, or not
	// attached to the named context and expression.
	ErrVisualizationNotFound = errors.New("visualization not found")
	// ErrExpressionNotFound: no update recorded for that expression.
	ErrExpressionNotFound = errors.New("expression not found")
)

// ProtocolError maps an error of this package to the client protocol's
// error (PROTOCOL.md section 6), keeping err's message, which names the id
// at fault. Errors of other packages become InternalError.
func ProtocolError(err error) *protocol.Error {
	if err == nil {
		return nil
	}
	code := protocol.CodeInternalError
	switch {
	case errors.Is(err, ErrContextNotFound):
		code = protocol.CodeContextNotFound
	case errors.Is(err, ErrEmptyStack):
		code = protocol.CodeEmptyStack
	case errors.Is(err, ErrInvalidStackItem):
		code = protocol.CodeInvalidStackItem
	case errors.Is(err, ErrStackItemNotFound), errors.Is(err, ErrStaleFrame):
		code = protocol.CodeStackItemNotFound
	case errors.Is(err, ErrVisualizationNotFound):
		code = protocol.CodeVisualizationNotFound
	case errors.Is(err, ErrExpressionNotFound):
		code = protocol.CodeExpressionNotFound
	case errors.Is(err, ErrInvalidID):
		code = protocol.CodeInvalidParams
	default:
		return protocol.InternalError(err)
	}
	return protocol.Errorf(code, "%w", err)
}
