package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestErrorCodesMatchProtocol(t *testing.T) {
	t.Parallel()
	// PROTOCOL.md section 6, verbatim numbers and names.
	want := map[Code]string{
		-32700: "ParseError", -32600: "InvalidRequest", -32601: "MethodNotFound",
		-32602: "InvalidParams", -32603: "InternalError",
		1003: "FileNotFound", 1004: "FileExists", 1006: "NotDirectory", 1007: "NotFile",
		1010: "CannotDecode", 1011: "PathOutsideRoot", 2001: "StackItemNotFound",
		2002: "ContextNotFound", 2003: "EmptyStack", 2004: "InvalidStackItem",
		2005: "ModuleNotFound", 2006: "VisualizationNotFound",
		2007: "VisualizationExpressionError", 2008: "ExpressionNotFound",
		3001: "FileNotOpened", 3002: "TextEditValidation", 3003: "InvalidVersion",
		3004: "WriteDenied", 5001: "KernelUnavailable", 6001: "SessionNotInitialised",
		7001: "StateNotRecorded",
	}
	if len(codeNames) != len(want) {
		t.Errorf("%d codes defined, PROTOCOL.md has %d", len(codeNames), len(want))
	}
	for code, name := range want {
		if got := code.String(); got != name {
			t.Errorf("Code(%d).String() = %q, want %q", int(code), got, name)
		}
	}
	if got := Code(42).String(); got != "Code(42)" {
		t.Errorf("unknown code String() = %q", got)
	}
}

// TestConstructorsNameTheThingAtFault checks each constructor's code and
// that its message carries the id, path or name it was given.
func TestConstructorsNameTheThingAtFault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *Error
		code Code
		has  []string
	}{
		{ParseError("invalid character 'x'"), CodeParseError, []string{"invalid character 'x'"}},
		{InvalidRequest("empty batch"), CodeInvalidRequest, []string{"empty batch"}},
		{MethodNotFound("file/reed"), CodeMethodNotFound, []string{`"file/reed"`}},
		{InvalidParams("stackItem.type", "missing required field"), CodeInvalidParams, []string{"params.stackItem.type: missing required field"}},
		{InvalidParams("", "expected object, got array"), CodeInvalidParams, []string{"params: expected object"}},
		{InternalError(errors.New("boom")), CodeInternalError, []string{"boom"}},
		{FileNotFound("pkg/a.py"), CodeFileNotFound, []string{`"pkg/a.py"`}},
		{FileExists("pkg/a.py"), CodeFileExists, []string{`"pkg/a.py"`}},
		{NotDirectory("main.py"), CodeNotDirectory, []string{`"main.py"`}},
		{NotFile("pkg"), CodeNotFile, []string{`"pkg"`}},
		{CannotDecode("bin.dat", "invalid UTF-8 at byte 3"), CodeCannotDecode, []string{`"bin.dat"`, "byte 3"}},
		{PathOutsideRoot("../../etc/passwd"), CodePathOutsideRoot, []string{`"../../etc/passwd"`}},
		{StackItemNotFound(ctxA, 3), CodeStackItemNotFound, []string{string(ctxA), "depth 3"}},
		{ContextNotFound(ctxA), CodeContextNotFound, []string{string(ctxA)}},
		{EmptyStack(ctxA), CodeEmptyStack, []string{string(ctxA)}},
		{InvalidStackItem(ctxA, "LocalCall on an empty stack"), CodeInvalidStackItem, []string{string(ctxA), "LocalCall on an empty stack"}},
		{ModuleNotFound("shop.cart"), CodeModuleNotFound, []string{`"shop.cart"`}},
		{VisualizationNotFound(visA), CodeVisualizationNotFound, []string{string(visA)}},
		{VisualizationExpressionError(visA, "SyntaxError"), CodeVisualizationExpressionError, []string{string(visA), "SyntaxError"}},
		{ExpressionNotFound("main:main/q"), CodeExpressionNotFound, []string{`"main:main/q"`}},
		{FileNotOpened("main.py"), CodeFileNotOpened, []string{`"main.py"`}},
		{TextEditValidation("main.py", "line 9 past the end (5 lines)"), CodeTextEditValidation, []string{`"main.py"`, "line 9"}},
		{InvalidVersion("main.py", "aaa", "bbb"), CodeInvalidVersion, []string{`"main.py"`, "aaa", "bbb"}},
		{WriteDenied("main.py", "open with unsaved edits"), CodeWriteDenied, []string{`"main.py"`, "unsaved"}},
		{KernelUnavailable("all 2 kernels are restarting"), CodeKernelUnavailable, []string{"restarting"}},
		{SessionNotInitialised(MethodPush), CodeSessionNotInitialised, []string{MethodInitProtocolConnection, MethodPush}},
	}
	for _, tt := range tests {
		if tt.err.Code != tt.code {
			t.Errorf("%q: code %d, want %d", tt.err.Message, tt.err.Code, tt.code)
		}
		for _, h := range tt.has {
			if !strings.Contains(tt.err.Message, h) {
				t.Errorf("%s: message %q does not name %q", tt.code, tt.err.Message, h)
			}
		}
		if !strings.HasPrefix(tt.err.Error(), tt.code.String()+": ") {
			t.Errorf("Error() = %q, want the code name first", tt.err.Error())
		}
	}
}

func TestErrorIsAsAndWrapping(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("context not found")
	e := Errorf(CodeContextNotFound, "context %s: %w", ctxA, sentinel)
	wrapped := fmt.Errorf("push: %w", e)

	if !errors.Is(wrapped, &Error{Code: CodeContextNotFound}) {
		t.Error("errors.Is does not match by code")
	}
	if errors.Is(wrapped, &Error{Code: CodeEmptyStack}) {
		t.Error("errors.Is matches another code")
	}
	if !errors.Is(wrapped, sentinel) {
		t.Error("the %w cause is not reachable")
	}
	if got := AsError(wrapped); got != e {
		t.Errorf("AsError = %v, want the wrapped *Error", got)
	}
	internal := AsError(fs.ErrPermission)
	if internal.Code != CodeInternalError || !errors.Is(internal, fs.ErrPermission) {
		t.Errorf("AsError(plain) = %v, want an InternalError wrapping it", internal)
	}
	if AsError(nil) != nil {
		t.Error("AsError(nil) != nil")
	}
}

func TestErrorJSON(t *testing.T) {
	t.Parallel()
	e := &Error{Code: CodeInvalidVersion, Message: "m", Data: json.RawMessage(`{"current":"a"}`)}
	got := string(AppendError(nil, json.RawMessage(`7`), e))
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":3003,"message":"m","data":{"current":"a"}}}`
	if got != want {
		t.Errorf("AppendError\n got %s\nwant %s", got, want)
	}
	var back ServerMessage
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatal(err)
	}
	if back.Error == nil || back.Error.Code != e.Code || back.Error.Message != "m" || string(back.Error.Data) != `{"current":"a"}` {
		t.Errorf("decoded %+v", back.Error)
	}
}
