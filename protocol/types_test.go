package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	ctxA = ContextID("6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c")
	visA = VisualizationID("0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b")
)

func ptr[T any](v T) *T { return &v }

var sampleRange = Range{Start: Position{Line: 2, Character: 4}, End: Position{Line: 2, Character: 11}}

var sampleDiagnostic = Diagnostic{
	Kind:         DiagnosticError,
	Message:      "ZeroDivisionError: division by zero",
	Path:         "main.py",
	Location:     &sampleRange,
	ExpressionID: "main:main/x",
	Stack: []StackTraceElement{
		{FunctionName: "main", Path: "main.py", Location: &sampleRange},
		{FunctionName: "<builtin>"},
	},
}

// TestJSONRoundTrip encodes each value, compares the JSON with the exact
// text PROTOCOL.md prescribes, and decodes it back to an equal value.
func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value any // a pointer; decoding goes into a new value of its type
		json  string
	}{
		// Types of PROTOCOL.md section 2.
		{"Position", &Position{Line: 0, Character: 3}, `{"line":0,"character":3}`},
		{"Range", &sampleRange, `{"start":{"line":2,"character":4},"end":{"line":2,"character":11}}`},
		{"MethodPointer function", &MethodPointer{Module: "main", Name: "main"},
			`{"module":"main","definedOnType":"","name":"main"}`},
		{"MethodPointer method", &MethodPointer{Module: "shop.cart", DefinedOnType: "Cart", Name: "total"},
			`{"module":"shop.cart","definedOnType":"Cart","name":"total"}`},
		{"ExplicitCall", ptr(NewExplicitCall(MethodPointer{Module: "main", Name: "main"}, "1", "'a'")),
			`{"type":"ExplicitCall","methodPointer":{"module":"main","definedOnType":"","name":"main"},"positionalArgumentsExpressions":["1","'a'"]}`},
		{"ExplicitCall of a method", &StackItem{Type: ExplicitCall,
			MethodPointer:                  MethodPointer{Module: "shop.cart", DefinedOnType: "Cart", Name: "total"},
			ThisArgumentExpression:         "Cart()",
			PositionalArgumentsExpressions: []string{}},
			`{"type":"ExplicitCall","methodPointer":{"module":"shop.cart","definedOnType":"Cart","name":"total"},"thisArgumentExpression":"Cart()","positionalArgumentsExpressions":[]}`},
		{"LocalCall", ptr(NewLocalCall("main:main/y")), `{"type":"LocalCall","expressionId":"main:main/y"}`},
		{"Value payload", ptr(ValuePayload("[1, 2, 3]")), `{"type":"Value","preview":"[1, 2, 3]"}`},
		{"Value payload without preview", ptr(ValuePayload("")), `{"type":"Value"}`},
		{"Panic payload", ptr(PanicPayload("ZeroDivisionError: division by zero", "main:main/x", "main:main/y")),
			`{"type":"Panic","message":"ZeroDivisionError: division by zero","trace":["main:main/x","main:main/y"]}`},
		{"Panic payload, empty trace", ptr(PanicPayload("E: e")), `{"type":"Panic","message":"E: e","trace":[]}`},
		{"DataflowError payload", ptr(DataflowErrorPayload("main:main/x")), `{"type":"DataflowError","trace":["main:main/x"]}`},
		{"Pending payload", ptr(PendingPayload("")), `{"type":"Pending"}`},
		{"Pending not reached", ptr(PendingPayload("not reached")), `{"type":"Pending","message":"not reached"}`},
		{"Value payload with effects", &Payload{Type: PayloadValue, Preview: "3", MimeTypes: []string{"text/html"}, Effects: []string{"open('out.csv', 'w')", "os.remove('a')"}},
			`{"type":"Value","preview":"3","mimeTypes":["text/html"],"effects":["open('out.csv', 'w')","os.remove('a')"]}`},
		{"Pending running", ptr(RunningPayload(time.Date(2026, 11, 29, 2, 2, 3, 456_789_000, time.FixedZone("CET", 3600)))),
			`{"type":"Pending","message":"running","startedAt":"2026-11-29T01:02:03.456Z"}`},
		{"Pending not reached after an exception", ptr(NotReachedPayload(ReasonException, "main:main/x")),
			`{"type":"Pending","message":"not reached","reason":{"kind":"exception","expressionId":"main:main/x"}}`},
		{"Pending not reached after a kernel death", ptr(NotReachedPayload(ReasonKernelDied, "")),
			`{"type":"Pending","message":"not reached","reason":{"kind":"kernelDied"}}`},
		{"Pending held", ptr(HeldPayload("shutil.rmtree('out')", "shutil.rmtree", "'out'", "False", "None")),
			`{"type":"Pending","message":"held: shutil.rmtree('out')","reason":{"kind":"held","event":"shutil.rmtree","args":["'out'","False","None"]}}`},
		{"ExpressionUpdate full", &ExpressionUpdate{
			ExpressionID:  "main:main/y",
			Type:          "builtins.int",
			MethodCall:    &MethodCall{MethodPointer: MethodPointer{Module: "main", Name: "foo"}},
			ProfilingInfo: []ProfilingInfo{ExecutionTime(1234)},
			FromCache:     true,
			Range:         &sampleRange,
			Payload:       ValuePayload("30"),
		}, `{"expressionId":"main:main/y","type":"builtins.int","methodCall":{"methodPointer":{"module":"main","definedOnType":"","name":"foo"}},` +
			`"profilingInfo":[{"type":"ExecutionTime","nanoTime":1234}],"fromCache":true,` +
			`"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"payload":{"type":"Value","preview":"30"}}`},
		{"ExpressionUpdate with inner values", &ExpressionUpdate{
			ExpressionID:  "main:main/#1",
			Type:          "builtins.NoneType",
			ProfilingInfo: []ProfilingInfo{},
			Range:         &sampleRange,
			Payload:       ValuePayload("None"),
			Inner: []InnerValue{
				{Range: sampleRange, Type: "builtins.int", Preview: "81", Count: 10},
				{Range: sampleRange, Count: 0, Panic: "ZeroDivisionError: division by zero"},
			},
		}, `{"expressionId":"main:main/#1","type":"builtins.NoneType","profilingInfo":[],"fromCache":false,` +
			`"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"payload":{"type":"Value","preview":"None"},` +
			`"inner":[{"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"type":"builtins.int","preview":"81","count":10},` +
			`{"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"count":0,"panic":"ZeroDivisionError: division by zero"}]}`},
		{"ExpressionUpdate minimal", &ExpressionUpdate{ExpressionID: "main:main/#1", ProfilingInfo: []ProfilingInfo{}, Payload: PendingPayload("")},
			`{"expressionId":"main:main/#1","profilingInfo":[],"fromCache":false,"payload":{"type":"Pending"}}`},
		{"Diagnostic", &sampleDiagnostic,
			`{"kind":"Error","message":"ZeroDivisionError: division by zero","path":"main.py",` +
				`"location":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"expressionId":"main:main/x",` +
				`"stack":[{"functionName":"main","path":"main.py","location":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}}},{"functionName":"\u003cbuiltin\u003e"}]}`},
		{"Diagnostic minimal", &Diagnostic{Kind: DiagnosticWarning, Message: "w", Stack: []StackTraceElement{}},
			`{"kind":"Warning","message":"w","stack":[]}`},
		{"ExecutionResult", &ExecutionResult{Kind: ResultCompileError, Message: "main.py: line 3: invalid syntax", Diagnostic: &Diagnostic{Kind: DiagnosticError, Message: "invalid syntax", Stack: []StackTraceElement{}}},
			`{"kind":"compileError","message":"main.py: line 3: invalid syntax","diagnostic":{"kind":"Error","message":"invalid syntax","stack":[]}}`},
		{"VisualizationConfiguration", &VisualizationConfiguration{ExecutionContextID: ctxA, Expression: "lambda v, n: v[:n]", PositionalArgumentsExpressions: []string{"10"}},
			`{"executionContextId":"` + string(ctxA) + `","expression":"lambda v, n: v[:n]","positionalArgumentsExpressions":["10"]}`},
		{"TextEdit", &TextEdit{Range: sampleRange, Text: "x = 7"},
			`{"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"text":"x = 7"}`},
		{"FileEdit", &FileEdit{Path: "main.py", Edits: []TextEdit{{Range: sampleRange, Text: "é"}}, OldVersion: "aa", NewVersion: "bb"},
			`{"path":"main.py","edits":[{"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"text":"é"}],"oldVersion":"aa","newVersion":"bb"}`},
		{"InvalidatedExpressions all", InvalidateAll(), `"all"`},
		{"InvalidatedExpressions ids", &InvalidatedExpressions{IDs: []ExpressionID{"main:main/z"}}, `["main:main/z"]`},

		// Params and results of section 3.
		{"initProtocolConnection", &InitProtocolConnectionParams{ClientID: "c1"}, `{"clientId":"c1"}`},
		{"initProtocolConnection result", &InitProtocolConnectionResult{Version: Version, ProjectRoot: "/p", Modules: []string{"main", "pkg.util"}},
			`{"version":"1","projectRoot":"/p","modules":["main","pkg.util"]}`},
		{"runtime/status", &RuntimeStatusParams{}, `{}`},
		{"runtime/status result", &RuntimeStatusResult{Kernels: []KernelStatus{{ID: 0, PID: 42, State: "idle", Contexts: []ContextID{ctxA}, Launcher: LauncherLocal}}, Queue: QueueStatus{Pending: 1, Running: 2}, Agents: []AgentStatus{}},
			`{"kernels":[{"id":0,"pid":42,"state":"idle","contexts":["` + string(ctxA) + `"],"launcher":"local"}],"queue":{"pending":1,"running":2},"agents":[]}`},
		{"runtime/status result with an agent", &RuntimeStatusResult{Kernels: []KernelStatus{{ID: 3, PID: 7, State: "ready", Contexts: []ContextID{}, Launcher: "slurm", Agent: &AgentRef{ID: "a1", Host: "n1", Launcher: "slurm", JobID: "42"}}},
			Agents: []AgentStatus{{AgentRef: AgentRef{ID: "a1", Host: "n1", Launcher: "slurm", JobID: "42"}, Kernels: []int{3}, LeaseAgeMs: 150}}},
			`{"kernels":[{"id":3,"pid":7,"state":"ready","contexts":[],"launcher":"slurm","agent":{"id":"a1","host":"n1","launcher":"slurm","jobId":"42"}}],"queue":{"pending":0,"running":0},"agents":[{"id":"a1","host":"n1","launcher":"slurm","jobId":"42","kernels":[3],"leaseAgeMs":150}]}`},
		{"runtime/restartKernel", &RestartKernelParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"runtime/setRunPolicy", &SetRunPolicyParams{ContextID: ctxA, Effects: EffectsAllow}, `{"contextId":"` + string(ctxA) + `","effects":"allow"}`},
		{"runtime/setRunPolicy default", &SetRunPolicyParams{Effects: EffectsHold}, `{"effects":"hold"}`},
		{"file/read", &FileReadParams{Path: "pkg/util.py"}, `{"path":"pkg/util.py"}`},
		{"file/read result", &FileReadResult{Contents: "x = 1\n"}, `{"contents":"x = 1\n"}`},
		{"file/write", &FileWriteParams{Path: "a.py", Contents: ""}, `{"path":"a.py","contents":""}`},
		{"file/list", &FileListParams{Path: ""}, `{"path":""}`},
		{"file/list result", &FileListResult{Entries: []FileEntry{{Path: "pkg", Kind: KindDirectory}, {Path: "main.py", Kind: KindFile}}},
			`{"entries":[{"path":"pkg","kind":"directory"},{"path":"main.py","kind":"file"}]}`},
		{"file/delete", &FileDeleteParams{Path: "a.py"}, `{"path":"a.py"}`},
		{"text/openFile", &OpenFileParams{Path: "main.py"}, `{"path":"main.py"}`},
		{"text/openFile result", &OpenFileResult{Content: "123456789", CurrentVersion: "5795c3d628fd638c9835a4c79a55809f265068c88729a1a3fcdf8522"},
			`{"content":"123456789","currentVersion":"5795c3d628fd638c9835a4c79a55809f265068c88729a1a3fcdf8522"}`},
		{"text/applyEdit", &ApplyEditParams{Edit: FileEdit{Path: "main.py", Edits: []TextEdit{}, OldVersion: "a", NewVersion: "a"}, Execute: false},
			`{"edit":{"path":"main.py","edits":[],"oldVersion":"a","newVersion":"a"},"execute":false}`},
		{"text/save", &SaveParams{Path: "main.py", CurrentVersion: "v"}, `{"path":"main.py","currentVersion":"v"}`},
		{"text/closeFile", &CloseFileParams{Path: "main.py"}, `{"path":"main.py"}`},
		{"create", &CreateContextParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"create without id", &CreateContextParams{}, `{}`},
		{"create result", &CreateContextResult{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"destroy", &DestroyContextParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"push", &PushParams{ContextID: ctxA, StackItem: NewLocalCall("main:main/y")},
			`{"contextId":"` + string(ctxA) + `","stackItem":{"type":"LocalCall","expressionId":"main:main/y"}}`},
		{"pop", &PopParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"recompute", &RecomputeParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"recompute all", &RecomputeParams{ContextID: ctxA, InvalidatedExpressions: InvalidateAll()},
			`{"contextId":"` + string(ctxA) + `","invalidatedExpressions":"all"}`},
		{"recompute ids", &RecomputeParams{ContextID: ctxA, InvalidatedExpressions: &InvalidatedExpressions{IDs: []ExpressionID{"main:main/z", "main:main/x"}}},
			`{"contextId":"` + string(ctxA) + `","invalidatedExpressions":["main:main/z","main:main/x"]}`},
		{"interrupt", &InterruptParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `"}`},
		{"attachVisualization", &AttachVisualizationParams{VisualizationID: visA, ExpressionID: "main:main/x",
			VisualizationConfig: VisualizationConfiguration{ExecutionContextID: ctxA, Expression: "lambda v: v * 2"}},
			`{"visualizationId":"` + string(visA) + `","expressionId":"main:main/x","visualizationConfig":{"executionContextId":"` + string(ctxA) + `","expression":"lambda v: v * 2"}}`},
		{"modifyVisualization", &ModifyVisualizationParams{VisualizationID: visA,
			VisualizationConfig: VisualizationConfiguration{ExecutionContextID: ctxA, Expression: "main:double"}},
			`{"visualizationId":"` + string(visA) + `","visualizationConfig":{"executionContextId":"` + string(ctxA) + `","expression":"main:double"}}`},
		{"detachVisualization", &DetachVisualizationParams{ExecutionContextID: ctxA, VisualizationID: visA, ExpressionID: "main:main/x"},
			`{"executionContextId":"` + string(ctxA) + `","visualizationId":"` + string(visA) + `","expressionId":"main:main/x"}`},
		{"executeExpression", &ExecuteExpressionParams{ExecutionContextID: ctxA, VisualizationID: visA, ExpressionID: "main:main/z", Expression: "x + y"},
			`{"executionContextId":"` + string(ctxA) + `","visualizationId":"` + string(visA) + `","expressionId":"main:main/z","expression":"x + y"}`},

		// Notifications of section 4.
		{"expressionUpdates", &ExpressionUpdatesParams{ContextID: ctxA, KernelID: 2, Updates: []ExpressionUpdate{
			{ExpressionID: "main:main/x", Type: "builtins.int", ProfilingInfo: []ProfilingInfo{ExecutionTime(5)}, Payload: ValuePayload("6")}}},
			`{"contextId":"` + string(ctxA) + `","kernelId":2,"updates":[{"expressionId":"main:main/x","type":"builtins.int","profilingInfo":[{"type":"ExecutionTime","nanoTime":5}],"fromCache":false,"payload":{"type":"Value","preview":"6"}}]}`},
		{"expressionUpdates empty", &ExpressionUpdatesParams{ContextID: ctxA, Updates: []ExpressionUpdate{}},
			`{"contextId":"` + string(ctxA) + `","kernelId":0,"updates":[]}`},
		{"executionComplete", &ExecutionCompleteParams{ContextID: ctxA, KernelID: 1}, `{"contextId":"` + string(ctxA) + `","kernelId":1}`},
		{"executionFailed", &ExecutionFailedParams{ContextID: ctxA, KernelID: 1, Result: ExecutionResult{Kind: ResultKernelDied, Message: "kernel 0 killed by signal 9"}},
			`{"contextId":"` + string(ctxA) + `","kernelId":1,"result":{"kind":"kernelDied","message":"kernel 0 killed by signal 9"}}`},
		{"executionStatus", &ExecutionStatusParams{ContextID: ctxA, Diagnostics: []Diagnostic{{Kind: DiagnosticError, Message: "m", Stack: []StackTraceElement{}}}},
			`{"contextId":"` + string(ctxA) + `","diagnostics":[{"kind":"Error","message":"m","stack":[]}]}`},
		{"output", &OutputParams{ContextID: ctxA, KernelID: 1, Stream: Stderr, Text: "oops\n"},
			`{"contextId":"` + string(ctxA) + `","kernelId":1,"stream":"stderr","text":"oops\n"}`},
		{"visualizationUpdate", &VisualizationUpdateParams{
			VisualizationContext: VisualizationContext{VisualizationID: visA, ContextID: ctxA, ExpressionID: "main:main/x"},
			KernelID:             1,
			Data:                 json.RawMessage(`{"a":[1,2]}`)},
			`{"visualizationContext":{"visualizationId":"` + string(visA) + `","contextId":"` + string(ctxA) + `","expressionId":"main:main/x"},"kernelId":1,"data":{"a":[1,2]}}`},
		{"visualizationEvaluationFailed", &VisualizationEvaluationFailedParams{ContextID: ctxA, KernelID: 1, VisualizationID: visA, ExpressionID: "main:main/x", Message: "NameError: name 'q' is not defined"},
			`{"contextId":"` + string(ctxA) + `","kernelId":1,"visualizationId":"` + string(visA) + `","expressionId":"main:main/x","message":"NameError: name 'q' is not defined"}`},
		{"kernelRestarted", &KernelRestartedParams{KernelID: 1, ContextIDs: []ContextID{ctxA}, StatePreserved: false, Reason: "interrupt timed out"},
			`{"kernelId":1,"contextIds":["` + string(ctxA) + `"],"statePreserved":false,"reason":"interrupt timed out"}`},
		{"file/event", &FileEventParams{Path: "main.py", Kind: FileModified}, `{"path":"main.py","kind":"Modified"}`},
		{"text/didChange", &DidChangeParams{Edits: []FileEdit{{Path: "main.py", Edits: []TextEdit{{Range: sampleRange, Text: ""}}, OldVersion: "a", NewVersion: "b"}}},
			`{"edits":[{"path":"main.py","edits":[{"range":{"start":{"line":2,"character":4},"end":{"line":2,"character":11}},"text":""}],"oldVersion":"a","newVersion":"b"}]}`},
		{"text/fileModifiedOnDisk", &FileModifiedOnDiskParams{Path: "main.py"}, `{"path":"main.py"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.value)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if string(got) != tt.json {
				t.Errorf("Marshal\n got %s\nwant %s", got, tt.json)
			}
			back := reflect.New(reflect.TypeOf(tt.value).Elem())
			if err := json.Unmarshal([]byte(tt.json), back.Interface()); err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if !reflect.DeepEqual(back.Interface(), tt.value) {
				t.Errorf("round trip\n got %#v\nwant %#v", back.Elem().Interface(), reflect.ValueOf(tt.value).Elem().Interface())
			}
		})
	}
}

// TestEmptySlicesEncodeAsArrays checks that nil slices PROTOCOL.md types as
// arrays are written [] rather than null.
func TestEmptySlicesEncodeAsArrays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value any
		want  string
	}{
		{ExpressionUpdate{ExpressionID: "m:f/x", Payload: PanicPayload("E: e")},
			`{"expressionId":"m:f/x","profilingInfo":[],"fromCache":false,"payload":{"type":"Panic","message":"E: e","trace":[]}}`},
		{Payload{Type: PayloadDataflowError}, `{"type":"DataflowError","trace":[]}`},
		{Diagnostic{Kind: DiagnosticError, Message: "m"}, `{"kind":"Error","message":"m","stack":[]}`},
		{StackItem{Type: ExplicitCall, MethodPointer: MethodPointer{Module: "m", Name: "f"}},
			`{"type":"ExplicitCall","methodPointer":{"module":"m","definedOnType":"","name":"f"},"positionalArgumentsExpressions":[]}`},
		{ExpressionUpdatesParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `","kernelId":0,"updates":[]}`},
		{ExecutionStatusParams{ContextID: ctxA}, `{"contextId":"` + string(ctxA) + `","diagnostics":[]}`},
		{KernelRestartedParams{}, `{"kernelId":0,"contextIds":[],"statePreserved":false,"reason":""}`},
		{InvalidatedExpressions{}, `[]`},
		{VisualizationUpdateParams{}, `{"visualizationContext":{"visualizationId":"","contextId":"","expressionId":""},"kernelId":0,"data":null}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.value)
		if err != nil {
			t.Errorf("%T: %v", tt.value, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%T\n got %s\nwant %s", tt.value, got, tt.want)
		}
	}
}

func TestMarshalRejectsUnknownUnionTags(t *testing.T) {
	t.Parallel()
	if _, err := json.Marshal(Payload{Type: "Bogus"}); err == nil {
		t.Error("Payload with unknown type encoded without error")
	}
	if _, err := json.Marshal(StackItem{Type: "Bogus"}); err == nil {
		t.Error("StackItem with unknown type encoded without error")
	}
}

func TestMethodPointerText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text    string
		want    MethodPointer
		wantErr string
	}{
		{"main:main", MethodPointer{Module: "main", Name: "main"}, ""},
		{"shop.cart:Cart.total", MethodPointer{Module: "shop.cart", DefinedOnType: "Cart", Name: "total"}, ""},
		{"m:Outer.Inner.f", MethodPointer{Module: "m", DefinedOnType: "Outer.Inner", Name: "f"}, ""},
		{"pkg:_private", MethodPointer{Module: "pkg", Name: "_private"}, ""},
		{"données:calculer", MethodPointer{Module: "données", Name: "calculer"}, ""},
		{"main", MethodPointer{}, `invalid method pointer "main": want module:qualname`},
		{":main", MethodPointer{}, `module "" is not a dotted module name`},
		{"main:", MethodPointer{}, `name "" is not an identifier`},
		{"main:1f", MethodPointer{}, `name "1f" is not an identifier`},
		{"a..b:f", MethodPointer{}, `module "a..b"`},
		{"m:Cart.", MethodPointer{}, `name "" is not an identifier`},
		{"m:.f", MethodPointer{}, `qualname ".f" has an empty class name`},
		{"m:f:g", MethodPointer{}, `name "f:g" is not an identifier`},
		{"pkg/util:f", MethodPointer{}, `module "pkg/util"`},
	}
	for _, tt := range tests {
		got, err := ParseMethodPointer(tt.text)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseMethodPointer(%q) error = %v, want one containing %q", tt.text, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMethodPointer(%q): %v", tt.text, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseMethodPointer(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
		if s := got.String(); s != tt.text {
			t.Errorf("String() = %q, want %q", s, tt.text)
		}
	}
}

func TestExpressionIDSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id     ExpressionID
		fn     string
		label  string
		wantOK bool
	}{
		{"main:main/total", "main:main", "total", true},
		{"shop.cart:Cart.total/x#2", "shop.cart:Cart.total", "x#2", true},
		{"main:main/#3", "main:main", "#3", true},
		{"main:main/a,b", "main:main", "a,b", true},
		{"main:main/return", "main:main", "return", true},
		{"main:main", "", "", false},
		{"main:main/", "", "", false},
		{"main/x", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		fn, label, err := tt.id.Split()
		if tt.id.wellFormed() != (err == nil) {
			t.Errorf("%q.wellFormed() = %v, Split error %v", tt.id, tt.id.wellFormed(), err)
		}
		if (err == nil) != tt.wantOK {
			t.Errorf("%q.Split() error = %v, want ok=%v", tt.id, err, tt.wantOK)
			continue
		}
		if !tt.wantOK {
			continue
		}
		if fn.String() != tt.fn || label != tt.label {
			t.Errorf("%q.Split() = %s, %q; want %s, %q", tt.id, fn, label, tt.fn, tt.label)
		}
		if back := NewExpressionID(fn, label); back != tt.id {
			t.Errorf("NewExpressionID = %q, want %q", back, tt.id)
		}
	}
}

func TestStackItemValidate(t *testing.T) {
	t.Parallel()
	fn := MethodPointer{Module: "main", Name: "main"}
	method := MethodPointer{Module: "shop.cart", DefinedOnType: "Cart", Name: "total"}
	tests := []struct {
		name    string
		item    StackItem
		wantErr string
	}{
		{"explicit call", NewExplicitCall(fn), ""},
		{"explicit call with args", NewExplicitCall(fn, "1", "[2]"), ""},
		{"method with self", StackItem{Type: ExplicitCall, MethodPointer: method, ThisArgumentExpression: "Cart()"}, ""},
		{"local call", NewLocalCall("main:main/y"), ""},
		{"method without self", NewExplicitCall(method), "ExplicitCall of method shop.cart:Cart.total needs thisArgumentExpression"},
		{"bad pointer", NewExplicitCall(MethodPointer{Module: "main"}), `name "" is not an identifier`},
		{"empty argument", NewExplicitCall(fn, "1", ""), "positional argument 1 is empty"},
		{"explicit call with expression id", StackItem{Type: ExplicitCall, MethodPointer: fn, ExpressionID: "main:main/x"}, "ExplicitCall with an expressionId"},
		{"local call with pointer", StackItem{Type: LocalCall, ExpressionID: "main:main/x", MethodPointer: fn}, "LocalCall with ExplicitCall fields"},
		{"local call with bad id", NewLocalCall("y"), `invalid expression id "y"`},
		{"no type", StackItem{}, `unknown type ""`},
	}
	for _, tt := range tests {
		err := tt.item.Validate()
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: Validate() = %v", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestUUID(t *testing.T) {
	t.Parallel()
	seen := map[ContextID]bool{}
	for range 100 {
		id := NewContextID()
		if !IsUUID(string(id)) {
			t.Fatalf("NewContextID() = %q is not a UUID", id)
		}
		if id[14] != '4' || !strings.Contains("89ab", string(id[19])) {
			t.Fatalf("NewContextID() = %q is not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewContextID() repeated %q", id)
		}
		seen[id] = true
	}
	for _, s := range []string{"", "6f1c2a5e3b7d4c1e9a2b0d4e5f6a7b8c", "6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8", "6f1c2a5e-3b7d-4c1e-9a2b_0d4e5f6a7b8c", "gf1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c"} {
		if IsUUID(s) {
			t.Errorf("IsUUID(%q) = true", s)
		}
	}
	if !IsUUID("6F1C2A5E-3B7D-4C1E-9A2B-0D4E5F6A7B8C") {
		t.Error("IsUUID rejects upper case")
	}
}

func TestInvalidatedExpressionsMerge(t *testing.T) {
	t.Parallel()
	ids := func(s ...ExpressionID) InvalidatedExpressions { return InvalidatedExpressions{IDs: s} }
	all := InvalidatedExpressions{All: true}
	tests := []struct {
		a, b, want InvalidatedExpressions
	}{
		{ids(), ids(), ids()},
		{ids("m:f/a"), ids("m:f/b", "m:f/a"), ids("m:f/a", "m:f/b")},
		{all, ids("m:f/a"), all},
		{ids("m:f/a"), all, all},
	}
	for _, tt := range tests {
		got := tt.a.Merge(tt.b)
		if got.All != tt.want.All || len(got.IDs) != len(tt.want.IDs) {
			t.Errorf("%+v.Merge(%+v) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			continue
		}
		for i := range got.IDs {
			if got.IDs[i] != tt.want.IDs[i] {
				t.Errorf("%+v.Merge(%+v) = %+v, want %+v", tt.a, tt.b, got, tt.want)
			}
		}
	}
	a := ids("m:f/a")
	_ = a.Merge(ids("m:f/b"))
	if len(a.IDs) != 1 {
		t.Error("Merge modified its receiver")
	}
}

func TestClonesShareNothing(t *testing.T) {
	t.Parallel()
	u := ExpressionUpdate{
		ExpressionID:  "m:f/x",
		MethodCall:    &MethodCall{MethodPointer: MethodPointer{Module: "m", Name: "g"}},
		ProfilingInfo: []ProfilingInfo{ExecutionTime(1)},
		Range:         &Range{},
		Payload:       PanicPayload("E: e", "m:f/x"),
	}
	c := u.Clone()
	c.MethodCall.MethodPointer.Name = "changed"
	c.ProfilingInfo[0].NanoTime = 99
	c.Range.Start.Line = 99
	c.Payload.Trace[0] = "changed"
	if u.MethodCall.MethodPointer.Name != "g" || u.ProfilingInfo[0].NanoTime != 1 || u.Range.Start.Line != 0 || u.Payload.Trace[0] != "m:f/x" {
		t.Errorf("ExpressionUpdate.Clone shares memory: %+v", u)
	}
	held := HeldPayload("open('a', 'w')", "open", "'a'", "'w'")
	held.Effects, held.MimeTypes = []string{"e"}, []string{"m"}
	hc := held.Clone()
	hc.Reason.Args[0], hc.Reason.Kind, hc.Effects[0], hc.MimeTypes[0] = "changed", "changed", "changed", "changed"
	if held.Reason.Args[0] != "'a'" || held.Reason.Kind != ReasonHeld || held.Effects[0] != "e" || held.MimeTypes[0] != "m" {
		t.Errorf("Payload.Clone shares memory: %+v", held)
	}

	s := NewExplicitCall(MethodPointer{Module: "m", Name: "f"}, "1")
	sc := s.Clone()
	sc.PositionalArgumentsExpressions[0] = "2"
	if s.PositionalArgumentsExpressions[0] != "1" {
		t.Error("StackItem.Clone shares memory")
	}

	r := &ExecutionResult{Kind: ResultFailure, Diagnostic: ptr(sampleDiagnostic.Clone())}
	rc := r.Clone()
	rc.Diagnostic.Stack[0].Location.Start.Line = 99
	rc.Diagnostic.Location.End.Line = 99
	if r.Diagnostic.Stack[0].Location.Start.Line != 2 || r.Diagnostic.Location.End.Line != 2 {
		t.Error("ExecutionResult.Clone shares memory")
	}
	if (*ExecutionResult)(nil).Clone() != nil {
		t.Error("nil Clone is not nil")
	}
}

// TestPayloadStates checks the predicates clients use to tell a waiting,
// running, held and not-reached statement apart (PROTOCOL.md 8.4).
func TestPayloadStates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                               string
		p                                  Payload
		waiting, running, held, notReached bool
	}{
		{"pending", PendingPayload(""), true, false, false, false},
		{"pending with another message", PendingPayload("queued"), true, false, false, false},
		{"running", RunningPayload(time.Unix(0, 0)), false, true, false, false},
		{"held", HeldPayload("os.remove('a')", "os.remove", "'a'"), false, false, true, false},
		{"held message without its reason", PendingPayload("held: x"), true, false, false, false},
		{"not reached after a return", PendingPayload(MessageNotReached), false, false, false, true},
		{"not reached after an interrupt", NotReachedPayload(ReasonInterrupted, ""), false, false, false, true},
		{"not reached after a held statement", NotReachedPayload(ReasonHeld, "m:f/x"), false, false, false, true},
		{"value", ValuePayload("1"), false, false, false, false},
	}
	for _, tt := range tests {
		p := tt.p
		if p.IsWaiting() != tt.waiting || p.IsRunning() != tt.running || p.IsHeld() != tt.held || p.IsNotReached() != tt.notReached {
			t.Errorf("%s: waiting %v running %v held %v notReached %v, want %v %v %v %v", tt.name,
				p.IsWaiting(), p.IsRunning(), p.IsHeld(), p.IsNotReached(), tt.waiting, tt.running, tt.held, tt.notReached)
		}
	}
}
