package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Code is a JSON-RPC error code: one of the five JSON-RPC 2.0 codes or an
// application code of PROTOCOL.md section 6. This file is the one list of
// them.
type Code int

// JSON-RPC 2.0 codes.
const (
	CodeParseError     Code = -32700 // the frame is not JSON; the reply's id is null
	CodeInvalidRequest Code = -32600 // JSON, but not a JSON-RPC 2.0 request
	CodeMethodNotFound Code = -32601
	CodeInvalidParams  Code = -32602 // a params field is missing or of the wrong type
	CodeInternalError  Code = -32603 // a bug or an unexpected failure on the server
)

// Application codes (PROTOCOL.md section 6).
const (
	CodeFileNotFound                 Code = 1003
	CodeFileExists                   Code = 1004
	CodeNotDirectory                 Code = 1006
	CodeNotFile                      Code = 1007
	CodeCannotDecode                 Code = 1010
	CodePathOutsideRoot              Code = 1011
	CodeStackItemNotFound            Code = 2001
	CodeContextNotFound              Code = 2002
	CodeEmptyStack                   Code = 2003
	CodeInvalidStackItem             Code = 2004
	CodeModuleNotFound               Code = 2005
	CodeVisualizationNotFound        Code = 2006
	CodeVisualizationExpressionError Code = 2007
	CodeExpressionNotFound           Code = 2008
	CodeFileNotOpened                Code = 3001
	CodeTextEditValidation           Code = 3002
	CodeInvalidVersion               Code = 3003
	CodeWriteDenied                  Code = 3004
	CodeKernelUnavailable            Code = 5001
	CodeSessionNotInitialised        Code = 6001
	CodeStateNotRecorded             Code = 7001 // PROTOCOL.md 8.5: the change could not be made durable, so it was refused
)

var codeNames = map[Code]string{
	CodeParseError:                   "ParseError",
	CodeInvalidRequest:               "InvalidRequest",
	CodeMethodNotFound:               "MethodNotFound",
	CodeInvalidParams:                "InvalidParams",
	CodeInternalError:                "InternalError",
	CodeFileNotFound:                 "FileNotFound",
	CodeFileExists:                   "FileExists",
	CodeNotDirectory:                 "NotDirectory",
	CodeNotFile:                      "NotFile",
	CodeCannotDecode:                 "CannotDecode",
	CodePathOutsideRoot:              "PathOutsideRoot",
	CodeStackItemNotFound:            "StackItemNotFound",
	CodeContextNotFound:              "ContextNotFound",
	CodeEmptyStack:                   "EmptyStack",
	CodeInvalidStackItem:             "InvalidStackItem",
	CodeModuleNotFound:               "ModuleNotFound",
	CodeVisualizationNotFound:        "VisualizationNotFound",
	CodeVisualizationExpressionError: "VisualizationExpressionError",
	CodeExpressionNotFound:           "ExpressionNotFound",
	CodeFileNotOpened:                "FileNotOpened",
	CodeTextEditValidation:           "TextEditValidation",
	CodeInvalidVersion:               "InvalidVersion",
	CodeWriteDenied:                  "WriteDenied",
	CodeKernelUnavailable:            "KernelUnavailable",
	CodeSessionNotInitialised:        "SessionNotInitialised",
	CodeStateNotRecorded:             "StateNotRecorded",
}

// String returns the code's name as PROTOCOL.md spells it ("ContextNotFound"),
// or its number for a code this package does not know.
func (c Code) String() string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}

// Error is the error object of a JSON-RPC response. It implements error, so
// handlers can return it as is; errors.Is matches two *Error values by Code.
type Error struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// cause is the Go error the reply was made from, kept for errors.Is/As
	// and logs; it never goes on the wire.
	cause error
}

// Error returns "Name: message", e.g. "ContextNotFound: context 0f3c... not found".
func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Unwrap returns the Go error the reply was made from, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Errorf returns an *Error with code and a message formatted like
// fmt.Errorf; a %w verb keeps the wrapped error reachable with errors.Is.
func Errorf(code Code, format string, args ...any) *Error {
	cause := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: cause.Error(), cause: cause}
}

// AsError returns err as an *Error to put on the wire: err itself (or the
// *Error it wraps), else an InternalError carrying err's text.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return InternalError(err)
}

// ParseError is the reply to a frame that is not valid JSON.
func ParseError(detail string) *Error {
	return &Error{Code: CodeParseError, Message: "parse error: " + detail}
}

// InvalidRequest is the reply to a message that is JSON but not a valid
// JSON-RPC 2.0 request; reason names the member at fault.
func InvalidRequest(reason string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + reason}
}

// MethodNotFound names the unknown method.
func MethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "method not found: " + strconv.Quote(method)}
}

// InvalidParams names the params field at fault with its path below params
// ("contextId", "edit.edits[2].range") and what is wrong with it.
func InvalidParams(path, problem string) *Error {
	where := "params"
	if path != "" {
		where += "." + path
	}
	return &Error{Code: CodeInvalidParams, Message: where + ": " + problem}
}

// InternalError wraps an unexpected failure.
func InternalError(err error) *Error {
	return &Error{Code: CodeInternalError, Message: "internal error: " + err.Error(), cause: err}
}

// FileNotFound names the missing file.
func FileNotFound(path string) *Error {
	return Errorf(CodeFileNotFound, "file %q not found", path)
}

// FileExists names the file that is in the way.
func FileExists(path string) *Error {
	return Errorf(CodeFileExists, "file %q already exists", path)
}

// NotDirectory names the path that should have been a directory.
func NotDirectory(path string) *Error {
	return Errorf(CodeNotDirectory, "%q is not a directory", path)
}

// NotFile names the path that should have been a regular file.
func NotFile(path string) *Error {
	return Errorf(CodeNotFile, "%q is not a file", path)
}

// CannotDecode names a file whose contents are not valid UTF-8 text.
func CannotDecode(path, detail string) *Error {
	return Errorf(CodeCannotDecode, "cannot decode %q: %s", path, detail)
}

// PathOutsideRoot names a path that escapes the project root.
func PathOutsideRoot(path string) *Error {
	return Errorf(CodePathOutsideRoot, "path %q is outside the project root", path)
}

// StackItemNotFound names the context and the frame depth that do not exist.
func StackItemNotFound(id ContextID, depth int) *Error {
	return Errorf(CodeStackItemNotFound, "context %s has no stack item at depth %d", id, depth)
}

// ContextNotFound names the unknown execution context.
func ContextNotFound(id ContextID) *Error {
	return Errorf(CodeContextNotFound, "context %s not found", id)
}

// EmptyStack names the context whose stack is empty.
func EmptyStack(id ContextID) *Error {
	return Errorf(CodeEmptyStack, "context %s: stack is empty", id)
}

// InvalidStackItem names the context and why the item cannot be pushed.
func InvalidStackItem(id ContextID, reason string) *Error {
	return Errorf(CodeInvalidStackItem, "context %s: invalid stack item: %s", id, reason)
}

// ModuleNotFound names the module.
func ModuleNotFound(module string) *Error {
	return Errorf(CodeModuleNotFound, "module %q not found", module)
}

// VisualizationNotFound names the unknown visualization.
func VisualizationNotFound(id VisualizationID) *Error {
	return Errorf(CodeVisualizationNotFound, "visualization %s not found", id)
}

// VisualizationExpressionError names the visualization whose expression
// failed to compile or evaluate, and why.
func VisualizationExpressionError(id VisualizationID, detail string) *Error {
	return Errorf(CodeVisualizationExpressionError, "visualization %s: expression error: %s", id, detail)
}

// ExpressionNotFound names the unknown expression.
func ExpressionNotFound(id ExpressionID) *Error {
	return Errorf(CodeExpressionNotFound, "expression %q not found", id)
}

// FileNotOpened names a file that has no open text buffer.
func FileNotOpened(path string) *Error {
	return Errorf(CodeFileNotOpened, "file %q is not open", path)
}

// TextEditValidation names the file and the edit that cannot be applied.
func TextEditValidation(path, detail string) *Error {
	return Errorf(CodeTextEditValidation, "invalid edit of %q: %s", path, detail)
}

// InvalidVersion names the file, the version the buffer has and the version
// the client claimed.
func InvalidVersion(path, current, claimed string) *Error {
	return Errorf(CodeInvalidVersion, "file %q: version %s does not match the buffer's version %s", path, claimed, current)
}

// WriteDenied names the file that may not be written now and why.
func WriteDenied(path, reason string) *Error {
	return Errorf(CodeWriteDenied, "cannot write %q: %s", path, reason)
}

// KernelUnavailable says why no kernel can serve the request.
func KernelUnavailable(detail string) *Error {
	return Errorf(CodeKernelUnavailable, "kernel unavailable: %s", detail)
}

// SessionNotInitialised names the method called before
// session/initProtocolConnection.
func SessionNotInitialised(method string) *Error {
	return Errorf(CodeSessionNotInitialised, "session not initialised: call %s before %s", MethodInitProtocolConnection, method)
}
