package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// rawCall sends one raw message and returns the next message the client
// did not claim (the reply, since nothing else is going on).
func rawCall(t *testing.T, c *servertest.Client, msg string) servertest.Message {
	t.Helper()
	if err := c.WriteRaw([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCallsBeforeInitialisation(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.dial(t)
	ctxID := protocol.NewContextID()
	calls := []struct {
		method string
		params any
	}{
		{protocol.MethodRuntimeStatus, nil},
		{protocol.MethodCreateContext, protocol.CreateContextParams{}},
		{protocol.MethodPop, protocol.PopParams{ContextID: ctxID}},
		{protocol.MethodFileRead, protocol.FileReadParams{Path: "main.py"}},
		// Even malformed params: the session comes first.
		{protocol.MethodPush, map[string]any{"contextId": 7}},
	}
	for _, call := range calls {
		err := c.Call(testCtx(t), call.method, call.params, nil)
		wantCode(t, err, protocol.CodeSessionNotInitialised, call.method, protocol.MethodInitProtocolConnection)
	}
	// An unknown method is unknown, initialised or not.
	wantCode(t, c.Call(testCtx(t), "no/such", nil, nil), protocol.CodeMethodNotFound, "no/such")
	if n := len(b.eng.Calls()); n != 0 {
		t.Fatalf("the engine saw %d calls before initialisation", n)
	}

	// Initialisation: bad params, then good, then a second one.
	wantCode(t, c.Call(testCtx(t), protocol.MethodInitProtocolConnection, map[string]any{}, nil),
		protocol.CodeInvalidParams, "clientId")
	var res protocol.InitProtocolConnectionResult
	if err := c.Call(testCtx(t), protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "c1"}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Version != protocol.Version || res.ProjectRoot != "/fake" {
		t.Fatalf("init result %+v", res)
	}
	wantCode(t, c.Call(testCtx(t), protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "c2"}, nil),
		protocol.CodeInvalidRequest, `"c1"`)
	if err := c.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatalf("status after init: %v", err)
	}
}

func TestJSONRPCEnvelope(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	ctxID := protocol.NewContextID()
	tests := []struct {
		name, send string
		want       string // the exact reply
	}{
		{"number id echoed", `{"jsonrpc":"2.0","id":7,"method":"executionContext/pop","params":{"contextId":"` + string(ctxID) + `"}}`,
			`{"jsonrpc":"2.0","id":7,"error":{"code":2002,"message":"context ` + string(ctxID) + ` not found"}}`},
		{"string id echoed", `{"jsonrpc":"2.0","id":"abc","method":"runtime/status"}`,
			`{"jsonrpc":"2.0","id":"abc","result":{"kernels":[{"id":0,"pid":0,"state":"ready","contexts":[],"launcher":"local"}],"queue":{"pending":0,"running":0},"agents":[]}}`},
		{"big number id byte for byte", `{"jsonrpc":"2.0","id":12345678901234567890.5e3,"method":"no/such"}`,
			`{"jsonrpc":"2.0","id":12345678901234567890.5e3,"error":{"code":-32601,"message":"method not found: \"no/such\""}}`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"no/such"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"method not found: \"no/such\""}}`},
		{"parse error", `{"jsonrpc":"2.0","id":1,`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input at byte 24"}}`},
		{"not an object", `42`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: expected a request object or a batch array, got number"}}`},
		{"wrong version", `{"jsonrpc":"1.0","id":3,"method":"runtime/status"}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}`},
		{"wrong id type", `{"jsonrpc":"2.0","id":{},"method":"runtime/status"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: id must be a string, a number or null, got object"}}`},
		{"wrong param type", `{"jsonrpc":"2.0","id":4,"method":"executionContext/pop","params":{"contextId":7}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"params.contextId: expected string, got number"}}`},
		{"missing param", `{"jsonrpc":"2.0","id":5,"method":"executionContext/push","params":{"contextId":"` + string(ctxID) + `"}}`,
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"params.stackItem: missing required field"}}`},
		{"empty batch", `[]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"no/such"},{"jsonrpc":"2.0","method":"runtime/status"},5,{"jsonrpc":"2.0","id":"x","method":"executionContext/create","params":{"contextId":"` + string(ctxID) + `"}}]`,
			`[{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: \"no/such\""}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batch element 2 is a number, not a request object"}},` +
				`{"jsonrpc":"2.0","id":"x","result":{"contextId":"` + string(ctxID) + `"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rawCall(t, c, tt.send)
			if string(got.Raw) != tt.want {
				t.Fatalf("sent   %s\ngot    %s\nwant   %s", tt.send, got.Raw, tt.want)
			}
		})
	}
}

func TestNotificationsAreNeverAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	ctxID := protocol.NewContextID()
	// Notifications: valid, failing, unknown, a batch of them. None is
	// answered, but the valid ones are executed.
	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"executionContext/create","params":{"contextId":"` + string(ctxID) + `"}}`,
		`{"jsonrpc":"2.0","method":"executionContext/pop","params":{"contextId":"` + string(ctxID) + `"}}`,
		`{"jsonrpc":"2.0","method":"no/such"}`,
		`{"jsonrpc":"2.0","method":"executionContext/pop","params":{"contextId":1}}`,
		`[{"jsonrpc":"2.0","method":"runtime/status"},{"jsonrpc":"2.0","method":"no/such"}]`,
	} {
		if err := c.WriteRaw([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	// Requests are handled in order, so once this is answered every
	// notification above has been handled: had any been answered, its
	// reply would come first.
	got := rawCall(t, c, `{"jsonrpc":"2.0","id":"last","method":"executionContext/destroy","params":{"contextId":"`+string(ctxID)+`"}}`)
	if want := `{"jsonrpc":"2.0","id":"last","result":null}`; string(got.Raw) != want {
		t.Fatalf("got %s, want %s (the context created by a notification, destroyed)", got.Raw, want)
	}
}

func TestApplicationErrorsPassThrough(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	ctx := testCtx(t)
	var created protocol.CreateContextResult
	if err := c.Call(ctx, protocol.MethodCreateContext, protocol.CreateContextParams{}, &created); err != nil {
		t.Fatal(err)
	}
	if !protocol.IsUUID(string(created.ContextID)) {
		t.Fatalf("server-chosen context id %q is not a UUID", created.ContextID)
	}
	id := created.ContextID
	unknown := protocol.NewContextID()
	main := protocol.MethodPointer{Module: "main", Name: "main"}
	wantCode(t, c.Call(ctx, protocol.MethodPop, protocol.PopParams{ContextID: id}, nil), protocol.CodeEmptyStack, string(id))
	wantCode(t, c.Call(ctx, protocol.MethodPop, protocol.PopParams{ContextID: unknown}, nil), protocol.CodeContextNotFound, string(unknown))
	wantCode(t, c.Call(ctx, protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")}, nil),
		protocol.CodeInvalidStackItem, "LocalCall")
	if err := c.Call(ctx, protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(main)}, nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, c.Call(ctx, protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(main)}, nil),
		protocol.CodeInvalidStackItem, "ExplicitCall")
	wantCode(t, c.Call(ctx, protocol.MethodModifyVisualization, protocol.ModifyVisualizationParams{
		VisualizationID:     protocol.NewVisualizationID(),
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "str"},
	}, nil), protocol.CodeVisualizationNotFound)
	wantCode(t, c.Call(ctx, protocol.MethodFileRead, protocol.FileReadParams{Path: "../../etc/passwd"}, nil),
		protocol.CodePathOutsideRoot, "../../etc/passwd")
	// A stack item of an unknown kind never reaches the engine.
	err := c.Call(ctx, protocol.MethodPush, map[string]any{"contextId": id, "stackItem": map[string]any{"type": "Bogus"}}, nil)
	wantCode(t, err, protocol.CodeInvalidParams, "stackItem.type")
}

func TestEveryMethodReachesTheEngine(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	ctx := testCtx(t)
	id := protocol.NewContextID()
	vis := protocol.NewVisualizationID()
	b.eng.SetFile("main.py", "x = 1\n")
	cfg := protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}
	edit := protocol.FileEdit{Path: "main.py", Edits: []protocol.TextEdit{}, OldVersion: "a", NewVersion: "b"}
	calls := []struct {
		method string
		params any
	}{
		{protocol.MethodRuntimeStatus, nil},
		{protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: id}},
		{protocol.MethodRestartKernel, protocol.RestartKernelParams{ContextID: id}},
		{protocol.MethodFileWrite, protocol.FileWriteParams{Path: "util.py", Contents: "y = 2\n"}},
		{protocol.MethodFileRead, protocol.FileReadParams{Path: "util.py"}},
		{protocol.MethodFileList, protocol.FileListParams{Path: "."}},
		{protocol.MethodFileDelete, protocol.FileDeleteParams{Path: "util.py"}},
		{protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}},
		{protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: edit}},
		{protocol.MethodTextSave, protocol.SaveParams{Path: "main.py", CurrentVersion: "b"}},
		{protocol.MethodTextCloseFile, protocol.CloseFileParams{Path: "main.py"}},
		{protocol.MethodPush, protocol.PushParams{ContextID: id, StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}},
		{protocol.MethodRecompute, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}},
		{protocol.MethodInterrupt, protocol.InterruptParams{ContextID: id}},
		{protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: vis, ExpressionID: "main:main/x", VisualizationConfig: cfg}},
		{protocol.MethodModifyVisualization, protocol.ModifyVisualizationParams{VisualizationID: vis, VisualizationConfig: cfg}},
		{protocol.MethodDetachVisualization, protocol.DetachVisualizationParams{ExecutionContextID: id, VisualizationID: vis, ExpressionID: "main:main/x"}},
		{protocol.MethodExecuteExpression, protocol.ExecuteExpressionParams{ExecutionContextID: id, VisualizationID: vis, ExpressionID: "main:main/x", Expression: "x"}},
		{protocol.MethodPop, protocol.PopParams{ContextID: id}},
		{protocol.MethodDestroyContext, protocol.DestroyContextParams{ContextID: id}},
	}
	for _, call := range calls {
		if err := c.Call(ctx, call.method, call.params, nil); err != nil {
			t.Fatalf("%s: %v", call.method, err)
		}
	}
	var seen []string
	for _, call := range b.eng.Calls() {
		if call.ClientID != "c1" && call.Method != protocol.MethodRuntimeStatus {
			t.Errorf("%s called as client %q, want c1", call.Method, call.ClientID)
		}
		seen = append(seen, call.Method)
	}
	var want []string
	want = append(want, protocol.MethodInitProtocolConnection)
	for _, call := range calls {
		want = append(want, call.method)
	}
	if strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("engine calls\n%v\nwant\n%v", seen, want)
	}
	var res protocol.FileReadResult
	if err := c.Call(ctx, protocol.MethodFileRead, protocol.FileReadParams{Path: "util.py"}, &res); err == nil {
		t.Fatal("util.py still exists after file/delete")
	}
}

func TestRequestsAreHandledInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	// Pipelined: all sent before any reply is read. Each write depends on
	// the previous one (a read of the file sees the last write).
	const n = 200
	var batch strings.Builder
	for i := range n {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"file/write","params":{"path":"f.txt","contents":"%d"}}`, 2*i, i)
		if err := c.WriteRaw([]byte(batch.String())); err != nil {
			t.Fatal(err)
		}
		batch.Reset()
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"file/read","params":{"path":"f.txt"}}`, 2*i+1)
		if err := c.WriteRaw([]byte(batch.String())); err != nil {
			t.Fatal(err)
		}
		batch.Reset()
	}
	for i := range 2 * n {
		m, err := c.Next(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if string(m.ID) != fmt.Sprint(i) {
			t.Fatalf("reply %d has id %s", i, m.ID)
		}
		if i%2 == 1 {
			var res protocol.FileReadResult
			if err := json.Unmarshal(m.Result, &res); err != nil || res.Contents != fmt.Sprint(i/2) {
				t.Fatalf("read %d: %s (%v), want contents %d", i, m.Raw, err, i/2)
			}
		}
	}
}

// A restartKernel that waits for its kernel does not hold up the requests
// behind it: they are answered first, and its reply follows when it ends.
// Cancelling it (the connection closing) still answers it.
func TestSlowCallDoesNotBlockLaterRequests(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	eng.Hook = func(ctx context.Context, method, clientID string) error {
		if method != protocol.MethodRestartKernel {
			return nil
		}
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	var created protocol.CreateContextResult
	if err := c.Call(testCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{}, &created); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteRaw([]byte(`{"jsonrpc":"2.0","id":"slow","method":"runtime/restartKernel","params":{"contextId":"` + string(created.ContextID) + `"}}`)); err != nil {
		t.Fatal(err)
	}
	<-entered
	eng.SetFile("f.txt", "fast")
	if err := c.WriteRaw([]byte(`{"jsonrpc":"2.0","id":"fast","method":"file/read","params":{"path":"f.txt"}}`)); err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != `"fast"` || !strings.Contains(string(m.Result), "fast") {
		t.Fatalf("first reply %s, want the file/read sent after the slow call", m.Raw)
	}
	close(release)
	m, err = c.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != `"slow"` || m.Error != nil {
		t.Fatalf("second reply %s, want the restartKernel's success", m.Raw)
	}
}

// A slow call still running when the server stops is answered before the
// connection closes (its context is cancelled, its reply written).
func TestSlowCallAnsweredAtShutdown(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	entered := make(chan struct{}, 1)
	eng.Hook = func(ctx context.Context, method, clientID string) error {
		if method != protocol.MethodRestartKernel {
			return nil
		}
		entered <- struct{}{}
		<-ctx.Done()
		return context.Cause(ctx)
	}
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	var created protocol.CreateContextResult
	if err := c.Call(testCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{}, &created); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- c.Call(testCtx(t), protocol.MethodRestartKernel, protocol.RestartKernelParams(created), nil)
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodeInternalError {
		t.Fatalf("restartKernel at shutdown: %v, want an internal error reply naming the cancel", err)
	}
}
