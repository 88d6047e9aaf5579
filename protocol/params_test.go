package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeParamsNamesTheField checks the -32602 message for wrong types,
// missing required fields and bad values, field by field.
func TestDecodeParamsNamesTheField(t *testing.T) {
	t.Parallel()
	const ctx = `"` + string(ctxA) + `"`
	const vis = `"` + string(visA) + `"`
	const rng = `{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}`
	tests := []struct {
		method  string
		params  string
		wantErr string // exact message; "" = decodes
	}{
		// The params value itself.
		{MethodPush, `[1,2]`, "params: expected object, got array"},
		{MethodPush, `"x"`, "params: expected object, got string"},
		{MethodPush, ``, "params.contextId: missing required field"},
		{MethodPush, `null`, "params.contextId: missing required field"},
		{MethodRuntimeStatus, ``, ""},
		{MethodRuntimeStatus, `{"anything":[1]}`, ""},
		{MethodRuntimeStatus, `[]`, "params: expected object, got array"},

		// Context ids.
		{MethodPush, `{"contextId":5}`, "params.contextId: expected string, got number"},
		{MethodPush, `{"contextId":null}`, "params.contextId: expected string, got null"},
		{MethodPush, `{"contextId":"abc"}`, `params.contextId: expected a UUID, got "abc"`},
		{MethodPop, `{"contextId":"` + strings.Repeat("x", 100) + `"}`, `params.contextId: expected a UUID, got "` + strings.Repeat("x", 60) + `..."`},
		{MethodPop, `{"contextId":` + ctx + `,"unknown":{"deep":[true]}}`, ""},
		{MethodDestroyContext, `{}`, "params.contextId: missing required field"},
		{MethodInterrupt, `{"contextId":[]}`, "params.contextId: expected string, got array"},
		{MethodRestartKernel, `{"contextId":true}`, "params.contextId: expected string, got boolean"},
		{MethodCreateContext, `{}`, ""},
		{MethodCreateContext, `{"contextId":null}`, ""},
		{MethodCreateContext, `{"contextId":"nope"}`, `params.contextId: expected a UUID, got "nope"`},

		// Run policy.
		{MethodSetRunPolicy, `{"effects":"hold"}`, ""},
		{MethodSetRunPolicy, `{"contextId":` + ctx + `,"effects":"allow"}`, ""},
		{MethodSetRunPolicy, `{}`, "params.effects: missing required field"},
		{MethodSetRunPolicy, `{"effects":"live"}`, `params.effects: expected "hold" or "allow", got "live"`},
		{MethodSetRunPolicy, `{"effects":true}`, "params.effects: expected string, got boolean"},
		{MethodSetRunPolicy, `{"contextId":"c1","effects":"hold"}`, `params.contextId: expected a UUID, got "c1"`},

		// Stack items.
		{MethodPush, `{"contextId":` + ctx + `}`, "params.stackItem: missing required field"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":[]}`, "params.stackItem: expected object, got array"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{}}`, "params.stackItem.type: missing required field"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"Call"}}`, `params.stackItem.type: expected "ExplicitCall" or "LocalCall", got "Call"`},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","positionalArgumentsExpressions":[]}}`,
			"params.stackItem.methodPointer: missing required field"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","methodPointer":{"module":1,"name":"f"},"positionalArgumentsExpressions":[]}}`,
			"params.stackItem.methodPointer.module: expected string, got number"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","methodPointer":{"module":"m"},"positionalArgumentsExpressions":[]}}`,
			"params.stackItem.methodPointer.name: missing required field"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","methodPointer":{"module":"m","name":"f"}}}`,
			"params.stackItem.positionalArgumentsExpressions: missing required field"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","methodPointer":{"module":"m","name":"f"},"positionalArgumentsExpressions":["1",2]}}`,
			"params.stackItem.positionalArgumentsExpressions[1]: expected string, got number"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","methodPointer":{"module":"m","name":"f"},"thisArgumentExpression":7,"positionalArgumentsExpressions":[]}}`,
			"params.stackItem.thisArgumentExpression: expected string, got number"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"ExplicitCall","methodPointer":{"module":"m","name":"f"},"positionalArgumentsExpressions":[]}}`, ""},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"LocalCall"}}`, "params.stackItem.expressionId: missing required field"},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"LocalCall","expressionId":"y"}}`,
			`params.stackItem.expressionId: expected an expression id module:qualname/label, got "y"`},
		{MethodPush, `{"contextId":` + ctx + `,"stackItem":{"type":"LocalCall","expressionId":"main:main/y"}}`, ""},

		// Recompute.
		{MethodRecompute, `{"contextId":` + ctx + `}`, ""},
		{MethodRecompute, `{"contextId":` + ctx + `,"invalidatedExpressions":"all"}`, ""},
		{MethodRecompute, `{"contextId":` + ctx + `,"invalidatedExpressions":"some"}`,
			`params.invalidatedExpressions: expected "all" or an array of expression ids, got "some"`},
		{MethodRecompute, `{"contextId":` + ctx + `,"invalidatedExpressions":{}}`,
			`params.invalidatedExpressions: expected "all" or an array of expression ids, got object`},
		{MethodRecompute, `{"contextId":` + ctx + `,"invalidatedExpressions":["main:main/x",3]}`,
			"params.invalidatedExpressions[1]: expected string, got number"},
		{MethodRecompute, `{"contextId":` + ctx + `,"invalidatedExpressions":["x"]}`,
			`params.invalidatedExpressions[0]: expected an expression id module:qualname/label, got "x"`},

		// Text edits.
		{MethodTextApplyEdit, `{}`, "params.edit: missing required field"},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[{"range":` + rng + `,"text":"x"}],"oldVersion":"a","newVersion":"b"}}`, ""},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":{},"oldVersion":"a","newVersion":"b"}}`,
			"params.edit.edits: expected array, got object"},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[{"range":` + rng + `,"text":"x"},{"range":` + rng + `}],"oldVersion":"a","newVersion":"b"}}`,
			"params.edit.edits[1].text: missing required field"},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[{"range":{"start":{"line":-1,"character":0},"end":{"line":0,"character":0}},"text":""}],"oldVersion":"a","newVersion":"b"}}`,
			`params.edit.edits[0].range.start.line: expected an integer >= 0, got "-1"`},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[{"range":{"start":{"line":0,"character":1.5},"end":{"line":0,"character":0}},"text":""}],"oldVersion":"a","newVersion":"b"}}`,
			`params.edit.edits[0].range.start.character: expected an integer, got "1.5"`},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":"0","character":0}},"text":""}],"oldVersion":"a","newVersion":"b"}}`,
			"params.edit.edits[0].range.end.line: expected integer, got string"},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[{"range":{"start":{"line":0},"end":{"line":0,"character":0}},"text":""}],"oldVersion":"a","newVersion":"b"}}`,
			"params.edit.edits[0].range.start.character: missing required field"},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[],"oldVersion":"a"}}`, "params.edit.newVersion: missing required field"},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[],"oldVersion":"a","newVersion":"b"},"execute":"yes"}`,
			"params.execute: expected boolean, got string"},
		{MethodTextSave, `{"path":"a.py"}`, "params.currentVersion: missing required field"},
		{MethodTextOpenFile, `{"path":1}`, "params.path: expected string, got number"},
		{MethodTextCloseFile, `{}`, "params.path: missing required field"},

		// Files.
		{MethodFileRead, `{"path":"a.py"}`, ""},
		{MethodFileWrite, `{"path":"a.py"}`, "params.contents: missing required field"},
		{MethodFileWrite, `{"path":"a.py","contents":null}`, "params.contents: expected string, got null"},
		{MethodFileList, `{"path":""}`, ""},
		{MethodFileDelete, `{"path":{}}`, "params.path: expected string, got object"},

		// Session.
		{MethodInitProtocolConnection, `{}`, "params.clientId: missing required field"},
		{MethodInitProtocolConnection, `{"clientId":""}`, `params.clientId: expected a non-empty string, got ""`},
		{MethodInitProtocolConnection, `{"clientId":"c"}`, ""},

		// Visualizations.
		{MethodAttachVisualization, `{"visualizationId":` + vis + `,"expressionId":"main:main/x"}`, "params.visualizationConfig: missing required field"},
		{MethodAttachVisualization, `{"visualizationId":` + vis + `,"expressionId":"main:main/x","visualizationConfig":{"expression":"lambda v: v"}}`,
			"params.visualizationConfig.executionContextId: missing required field"},
		{MethodAttachVisualization, `{"visualizationId":` + vis + `,"expressionId":"main:main/x","visualizationConfig":{"executionContextId":` + ctx + `,"expression":""}}`,
			`params.visualizationConfig.expression: expected a non-empty string, got ""`},
		{MethodAttachVisualization, `{"visualizationId":` + vis + `,"expressionId":"main:main/x","visualizationConfig":{"executionContextId":` + ctx + `,"expression":"f","positionalArgumentsExpressions":"1"}}`,
			"params.visualizationConfig.positionalArgumentsExpressions: expected array, got string"},
		{MethodAttachVisualization, `{"visualizationId":` + vis + `,"expressionId":"main:main/x","visualizationConfig":{"executionContextId":` + ctx + `,"expression":"f"}}`, ""},
		{MethodAttachVisualization, `{"visualizationId":1}`, "params.visualizationId: expected string, got number"},
		{MethodModifyVisualization, `{"visualizationId":` + vis + `}`, "params.visualizationConfig: missing required field"},
		{MethodDetachVisualization, `{"executionContextId":` + ctx + `,"visualizationId":` + vis + `}`, "params.expressionId: missing required field"},
		{MethodExecuteExpression, `{"executionContextId":` + ctx + `,"visualizationId":` + vis + `,"expressionId":"main:main/z"}`, "params.expression: missing required field"},
		{MethodExecuteExpression, `{"executionContextId":` + ctx + `,"visualizationId":` + vis + `,"expressionId":"main:main/z","expression":"x + y"}`, ""},
	}
	for _, tt := range tests {
		p, ok := NewParams(tt.method)
		if !ok {
			t.Fatalf("NewParams(%q) unknown", tt.method)
		}
		err := DecodeParams(json.RawMessage(tt.params), p)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s %s: %v", tt.method, tt.params, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s %s: error %v, want *Error %q", tt.method, tt.params, err, tt.wantErr)
			continue
		}
		if e.Code != CodeInvalidParams || e.Message != tt.wantErr {
			t.Errorf("%s %s:\n got %d %q\nwant %d %q", tt.method, tt.params, e.Code, e.Message, CodeInvalidParams, tt.wantErr)
		}
	}
}

// TestDecodeParamsValues checks the decoded values, defaults included.
func TestDecodeParamsValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method string
		params string
		want   Params
	}{
		{MethodTextApplyEdit, `{"edit":{"path":"a\u00e9.py","edits":[],"oldVersion":"a","newVersion":"b"}}`,
			&ApplyEditParams{Edit: FileEdit{Path: "aé.py", Edits: []TextEdit{}, OldVersion: "a", NewVersion: "b"}, Execute: true}},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[],"oldVersion":"a","newVersion":"b"},"execute":null}`,
			&ApplyEditParams{Edit: FileEdit{Path: "a.py", Edits: []TextEdit{}, OldVersion: "a", NewVersion: "b"}, Execute: true}},
		{MethodTextApplyEdit, `{"edit":{"path":"a.py","edits":[],"oldVersion":"a","newVersion":"b"},"execute":false}`,
			&ApplyEditParams{Edit: FileEdit{Path: "a.py", Edits: []TextEdit{}, OldVersion: "a", NewVersion: "b"}, Execute: false}},
		{MethodRecompute, `{"contextId":"` + string(ctxA) + `"}`, &RecomputeParams{ContextID: ctxA}},
		{MethodRecompute, `{"contextId":"` + string(ctxA) + `","invalidatedExpressions":[]}`,
			&RecomputeParams{ContextID: ctxA, InvalidatedExpressions: &InvalidatedExpressions{IDs: []ExpressionID{}}}},
		{MethodPush, `{"contextId":"` + string(ctxA) + `","stackItem":{"type":"ExplicitCall","methodPointer":{"module":"m","name":"f"},"positionalArgumentsExpressions":["1"]}}`,
			&PushParams{ContextID: ctxA, StackItem: NewExplicitCall(MethodPointer{Module: "m", Name: "f"}, "1")}},
		{MethodCreateContext, `{"contextId":null}`, &CreateContextParams{}},
	}
	for _, tt := range tests {
		p, _ := NewParams(tt.method)
		if err := DecodeParams(json.RawMessage(tt.params), p); err != nil {
			t.Errorf("%s %s: %v", tt.method, tt.params, err)
			continue
		}
		if !reflect.DeepEqual(p, tt.want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", tt.method, tt.params, p, tt.want)
		}
	}
}

func TestUnmarshalIntoUsedValueResets(t *testing.T) {
	t.Parallel()
	p := &RecomputeParams{}
	if err := json.Unmarshal([]byte(`{"contextId":"`+string(ctxA)+`","invalidatedExpressions":"all"}`), p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"contextId":"`+string(ctxA)+`"}`), p); err != nil {
		t.Fatal(err)
	}
	if p.InvalidatedExpressions != nil {
		t.Errorf("second decode kept the first one's invalidatedExpressions: %+v", p.InvalidatedExpressions)
	}
}

func TestUnmarshalJSONReportsFieldError(t *testing.T) {
	t.Parallel()
	var item StackItem
	err := json.Unmarshal([]byte(`{"type":"LocalCall","expressionId":3}`), &item)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Path != "expressionId" || fe.Problem != "expected string, got number" {
		t.Errorf("Unmarshal error = %#v, want FieldError at expressionId", err)
	}
}

func TestNewParamsKnowsEveryMethod(t *testing.T) {
	t.Parallel()
	methods := []string{
		MethodInitProtocolConnection, MethodRuntimeStatus, MethodRestartKernel,
		MethodFileRead, MethodFileWrite, MethodFileList, MethodFileDelete,
		MethodTextOpenFile, MethodTextApplyEdit, MethodTextSave, MethodTextCloseFile,
		MethodCreateContext, MethodDestroyContext, MethodPush, MethodPop, MethodRecompute,
		MethodInterrupt, MethodAttachVisualization, MethodModifyVisualization,
		MethodDetachVisualization, MethodExecuteExpression,
	}
	for _, m := range methods {
		p, ok := NewParams(m)
		if !ok {
			t.Errorf("NewParams(%q) not found", m)
			continue
		}
		if p == nil || reflect.ValueOf(p).IsNil() {
			t.Errorf("NewParams(%q) = nil", m)
		}
	}
	if p, _ := NewParams(MethodPop); reflect.TypeOf(p) != reflect.TypeOf(&ContextParams{}) {
		t.Errorf("pop params are %T, want *ContextParams", p)
	}
	for _, m := range []string{"", "executionContext/Create", NotifyExpressionUpdates, "file/read "} {
		if _, ok := NewParams(m); ok {
			t.Errorf("NewParams(%q) found", m)
		}
	}
}
