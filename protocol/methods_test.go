package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// recorder is a Handler that records which of its methods was called, by
// which client and with what.
type recorder struct {
	called, client string
	arg            any
}

func (r *recorder) rec(name, client string, arg any) {
	r.called, r.client, r.arg = name, client, arg
}

func (r *recorder) Status(context.Context) (RuntimeStatusResult, error) {
	r.rec("Status", "", nil)
	return RuntimeStatusResult{Queue: QueueStatus{Pending: 1}}, nil
}
func (r *recorder) RestartKernel(_ context.Context, c string, id ContextID) error {
	r.rec("RestartKernel", c, id)
	return nil
}
func (r *recorder) SetRunPolicy(_ context.Context, c string, p SetRunPolicyParams) error {
	r.rec("SetRunPolicy", c, p)
	return nil
}
func (r *recorder) ReadFile(_ context.Context, c, path string) (FileReadResult, error) {
	r.rec("ReadFile", c, path)
	return FileReadResult{Contents: "x"}, nil
}
func (r *recorder) WriteFile(_ context.Context, c string, p FileWriteParams) error {
	r.rec("WriteFile", c, p)
	return nil
}
func (r *recorder) ListFiles(_ context.Context, c, path string) (FileListResult, error) {
	r.rec("ListFiles", c, path)
	return FileListResult{}, nil
}
func (r *recorder) DeleteFile(_ context.Context, c, path string) error {
	r.rec("DeleteFile", c, path)
	return nil
}
func (r *recorder) OpenFile(_ context.Context, c, path string) (OpenFileResult, error) {
	r.rec("OpenFile", c, path)
	return OpenFileResult{Content: "x"}, nil
}
func (r *recorder) ApplyEdit(_ context.Context, c string, p ApplyEditParams) error {
	r.rec("ApplyEdit", c, p)
	return nil
}
func (r *recorder) SaveFile(_ context.Context, c string, p SaveParams) error {
	r.rec("SaveFile", c, p)
	return nil
}
func (r *recorder) CloseFile(_ context.Context, c, path string) error {
	r.rec("CloseFile", c, path)
	return nil
}
func (r *recorder) CreateContext(_ context.Context, c string, p CreateContextParams) (CreateContextResult, error) {
	r.rec("CreateContext", c, p)
	return CreateContextResult{ContextID: ctxA}, nil
}
func (r *recorder) DestroyContext(_ context.Context, c string, id ContextID) error {
	r.rec("DestroyContext", c, id)
	return nil
}
func (r *recorder) Push(_ context.Context, c string, p PushParams) error {
	r.rec("Push", c, p)
	return nil
}
func (r *recorder) Pop(_ context.Context, c string, id ContextID) error {
	r.rec("Pop", c, id)
	return nil
}
func (r *recorder) Recompute(_ context.Context, c string, p RecomputeParams) error {
	r.rec("Recompute", c, p)
	return nil
}
func (r *recorder) Interrupt(_ context.Context, c string, id ContextID) error {
	r.rec("Interrupt", c, id)
	return nil
}
func (r *recorder) AttachVisualization(_ context.Context, c string, p AttachVisualizationParams) error {
	r.rec("AttachVisualization", c, p)
	return nil
}
func (r *recorder) ModifyVisualization(_ context.Context, c string, p ModifyVisualizationParams) error {
	r.rec("ModifyVisualization", c, p)
	return nil
}
func (r *recorder) DetachVisualization(_ context.Context, c string, p DetachVisualizationParams) error {
	r.rec("DetachVisualization", c, p)
	return nil
}
func (r *recorder) ExecuteExpression(_ context.Context, c string, p ExecuteExpressionParams) error {
	r.rec("ExecuteExpression", c, p)
	return nil
}
func (r *recorder) CompleteAt(_ context.Context, c string, p CompleteParams) (CompleteResult, error) {
	r.rec("CompleteAt", c, p)
	return CompleteResult{}, nil
}
func (r *recorder) InspectAt(_ context.Context, c string, p InspectParams) (InspectResult, error) {
	r.rec("InspectAt", c, p)
	return InspectResult{}, nil
}

// TestMethodsCallTheirHandlerMethod checks every entry of the method table:
// who handles it, the Handler method its Call reaches with the decoded
// params, and the type of its result.
func TestMethodsCallTheirHandlerMethod(t *testing.T) {
	t.Parallel()
	const ctx = `{"contextId":"` + string(ctxA) + `"}`
	const path = `{"path":"a.py"}`
	const vis = `"visualizationId":"` + string(visA) + `"`
	const config = `"visualizationConfig":{"executionContextId":"` + string(ctxA) + `","expression":"f"}`
	decoded := func(method, params string) any {
		p, _ := NewParams(method)
		if err := DecodeParams(json.RawMessage(params), p); err != nil {
			t.Fatalf("%s %s: %v", method, params, err)
		}
		return reflect.ValueOf(p).Elem().Interface()
	}
	tests := []struct {
		method   string
		handling Handling
		params   string
		called   string // the Handler method; "" for HandledBySession
		arg      any    // what it receives besides the client; nil: the decoded params
	}{
		{MethodInitProtocolConnection, HandledBySession, `{"clientId":"c"}`, "", nil},
		{MethodRuntimeStatus, HandledInOrder, `{}`, "Status", nil},
		{MethodRestartKernel, HandledAsync, ctx, "RestartKernel", ctxA},
		{MethodSetRunPolicy, HandledInOrder, `{"effects":"allow"}`, "SetRunPolicy", nil},
		{MethodFileRead, HandledInOrder, path, "ReadFile", "a.py"},
		{MethodFileWrite, HandledInOrder, `{"path":"a.py","contents":"x"}`, "WriteFile", nil},
		{MethodFileList, HandledInOrder, path, "ListFiles", "a.py"},
		{MethodFileDelete, HandledInOrder, path, "DeleteFile", "a.py"},
		{MethodTextOpenFile, HandledInOrder, path, "OpenFile", "a.py"},
		{MethodTextApplyEdit, HandledInOrder, `{"edit":{"path":"a.py","edits":[],"oldVersion":"a","newVersion":"b"}}`, "ApplyEdit", nil},
		{MethodTextSave, HandledInOrder, `{"path":"a.py","currentVersion":"v"}`, "SaveFile", nil},
		{MethodTextCloseFile, HandledInOrder, path, "CloseFile", "a.py"},
		{MethodCreateContext, HandledInOrder, ctx, "CreateContext", nil},
		{MethodDestroyContext, HandledInOrder, ctx, "DestroyContext", ctxA},
		{MethodPush, HandledInOrder, `{"contextId":"` + string(ctxA) + `","stackItem":{"type":"LocalCall","expressionId":"m:f/x"}}`, "Push", nil},
		{MethodPop, HandledInOrder, ctx, "Pop", ctxA},
		{MethodRecompute, HandledInOrder, `{"contextId":"` + string(ctxA) + `","invalidatedExpressions":"all"}`, "Recompute", nil},
		{MethodInterrupt, HandledInOrder, ctx, "Interrupt", ctxA},
		{MethodAttachVisualization, HandledInOrder, `{` + vis + `,"expressionId":"m:f/x",` + config + `}`, "AttachVisualization", nil},
		{MethodModifyVisualization, HandledInOrder, `{` + vis + `,` + config + `}`, "ModifyVisualization", nil},
		{MethodDetachVisualization, HandledInOrder, `{"executionContextId":"` + string(ctxA) + `",` + vis + `,"expressionId":"m:f/x"}`, "DetachVisualization", nil},
		{MethodExecuteExpression, HandledInOrder, `{"executionContextId":"` + string(ctxA) + `",` + vis + `,"expressionId":"m:f/x","expression":"x"}`, "ExecuteExpression", nil},
		{MethodComplete, HandledAsync, `{"contextId":"` + string(ctxA) + `","code":"df[","cursor":3}`, "CompleteAt", nil},
		{MethodInspect, HandledAsync, `{"code":"len","cursor":3,"detailLevel":1}`, "InspectAt", nil},
	}
	all := Methods()
	if len(all) != len(tests) {
		t.Fatalf("Methods() lists %d methods, this test %d", len(all), len(tests))
	}
	for i, tt := range tests {
		m, ok := LookupMethod(tt.method)
		if !ok {
			t.Fatalf("LookupMethod(%q) not found", tt.method)
		}
		if all[i].Name != tt.method {
			t.Errorf("Methods()[%d] is %q, want %q (PROTOCOL.md's order)", i, all[i].Name, tt.method)
		}
		if m.Handling != tt.handling {
			t.Errorf("%s: handling %d, want %d", tt.method, m.Handling, tt.handling)
		}
		if reflect.TypeOf(m.NewParams()) != reflect.PointerTo(m.Params) {
			t.Errorf("%s: NewParams is %T, Params %v", tt.method, m.NewParams(), m.Params)
		}
		p := m.NewParams()
		if err := DecodeParams(json.RawMessage(tt.params), p); err != nil {
			t.Fatalf("%s %s: %v", tt.method, tt.params, err)
		}
		var r recorder
		result, err := m.Call(context.Background(), &r, "client-1", p)
		if tt.called == "" {
			if !errors.Is(err, &Error{Code: CodeInternalError}) || r.called != "" {
				t.Errorf("%s: Call = %v, %v (reached %q), want an internal error", tt.method, result, err, r.called)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.method, err)
		}
		want := tt.arg
		if want == nil && tt.called != "Status" {
			want = decoded(tt.method, tt.params)
		}
		if r.called != tt.called || !reflect.DeepEqual(r.arg, want) {
			t.Errorf("%s: called %s(%#v), want %s(%#v)", tt.method, r.called, r.arg, tt.called, want)
		}
		if tt.called != "Status" && r.client != "client-1" {
			t.Errorf("%s: client %q", tt.method, r.client)
		}
		switch {
		case m.Result == nil && result != nil:
			t.Errorf("%s: null result method returned %#v", tt.method, result)
		case m.Result != nil && reflect.TypeOf(result) != m.Result:
			t.Errorf("%s: result %T, want %v", tt.method, result, m.Result)
		}
	}
}

func TestMethodCallRefusesOtherParams(t *testing.T) {
	t.Parallel()
	m, _ := LookupMethod(MethodPop)
	var r recorder
	_, err := m.Call(context.Background(), &r, "c", &PushParams{})
	if e := AsError(err); e == nil || e.Code != CodeInternalError || r.called != "" {
		t.Errorf("Call with push params = %v (reached %q), want an internal error", err, r.called)
	}
}

func TestMethodsAreACopy(t *testing.T) {
	t.Parallel()
	ms := Methods()
	ms[0].Name = "changed"
	if m, ok := LookupMethod(MethodInitProtocolConnection); !ok || m.Name != MethodInitProtocolConnection {
		t.Errorf("changing Methods()' result changed the table: %+v", m)
	}
	if Methods()[0].Name != MethodInitProtocolConnection {
		t.Error("changing Methods()' result changed the next one")
	}
}

// Completion params that cannot be answered are refused naming the field;
// a Handler that is not a Completer answers MethodNotFound.
func TestCompleteParams(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ method, params, field string }{
		{MethodComplete, `{"code":"ab","cursor":3}`, "cursor"},
		{MethodComplete, `{"code":"😀","cursor":2}`, "cursor"},
		{MethodComplete, `{"code":"ab","cursor":-1}`, "cursor"},
		{MethodComplete, `{"cursor":0}`, "code"},
		{MethodInspect, `{"code":"ab","cursor":1,"detailLevel":2}`, "detailLevel"},
	} {
		p, _ := NewParams(tt.method)
		err := DecodeParams(json.RawMessage(tt.params), p)
		if err == nil {
			m, _ := LookupMethod(tt.method)
			var r recorder
			_, err = m.Call(context.Background(), &r, "c", p)
			if r.called != "" {
				t.Errorf("%s %s reached the handler", tt.method, tt.params)
			}
		}
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s %s: %v, want an error naming %s", tt.method, tt.params, err, tt.field)
		}
	}
	p, _ := NewParams(MethodComplete)
	if err := DecodeParams(json.RawMessage(`{"code":"😀x","cursor":2}`), p); err != nil {
		t.Errorf("a cursor in code points after an emoji: %v", err)
	}
	m, _ := LookupMethod(MethodComplete)
	if _, err := m.Call(context.Background(), stackless{}, "c", p); !errors.Is(err, &Error{Code: CodeMethodNotFound}) {
		t.Errorf("a Handler without completion: %v, want MethodNotFound", err)
	}
}

type stackless struct{ Handler }
