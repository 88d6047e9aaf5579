package server

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

func TestConnectAndDisconnectReachTheEngine(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: true, ClientID: "c1"}) {
		t.Fatalf("event %+v", ev)
	}
	// A connection that never initialised ends without a Disconnect.
	anon := b.dial(t)
	anon.Close()
	c.Close()
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: false, ClientID: "c1"}) {
		t.Fatalf("event %+v, want the disconnect of c1", ev)
	}
	// Reconnect with the same id: a new Connect.
	b.connect(t, "c1")
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: true, ClientID: "c1"}) {
		t.Fatalf("event %+v, want the reconnect of c1", ev)
	}
}

func TestTakeOverClientID(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	old := b.connect(t, "c1")
	nextEvent(t, b.eng)
	// The same client id from a new connection (the client reconnected
	// before the server noticed the old one was gone).
	fresh := b.connect(t, "c1")
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: true, ClientID: "c1"}) {
		t.Fatalf("event %+v, want a connect and no disconnect", ev)
	}
	code, err := old.CloseCode(testCtx(t))
	if err != nil || code != CloseTakenOver {
		t.Fatalf("old connection closed with %d (%v), want %d", code, err, CloseTakenOver)
	}
	// The old connection's end did not disconnect the client, and
	// notifications reach the new connection.
	b.eng.Client("c1").Notify(protocol.NotifyFileEvent, protocol.FileEventParams{Path: "a.py", Kind: protocol.FileAdded})
	if _, err := fresh.WaitFor(testCtx(t), servertest.Method(protocol.NotifyFileEvent)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-b.eng.Events():
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
	fresh.Close()
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: false, ClientID: "c1"}) {
		t.Fatalf("event %+v, want the disconnect of c1", ev)
	}
}

// blockOn makes calls of method block until their context ends, telling
// the test when one has started and with which cause it ended.
func blockOn(eng *servertest.Engine, method string) (started chan struct{}, cause chan error) {
	started, cause = make(chan struct{}, 1), make(chan error, 1)
	eng.Hook = func(ctx context.Context, m, _ string) error {
		if m != method {
			return nil
		}
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	}
	return started, cause
}

func TestStopAnswersTheCallInProgress(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	started, cause := blockOn(eng, protocol.MethodInterrupt)
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	id := protocol.NewContextID()
	if err := c.WriteRaw([]byte(`{"jsonrpc":"2.0","id":9,"method":"executionContext/interrupt","params":{"contextId":"` + string(id) + `"}}`)); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := b.srv.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-cause; !errors.Is(err, ErrShuttingDown) {
		t.Fatalf("call cancelled with %v, want ErrShuttingDown", err)
	}
	// The cancelled call was answered before the close frame.
	m, err := c.Next(testCtx(t))
	if err != nil {
		t.Fatalf("no reply to the cancelled call: %v", err)
	}
	if string(m.ID) != "9" || m.Error == nil || m.Error.Code != protocol.CodeInternalError {
		t.Fatalf("reply %s, want an internal error for id 9", m.Raw)
	}
	wantCode(t, m.Error, protocol.CodeInternalError, protocol.MethodInterrupt, "server shutting down")
	if code, _ := c.CloseCode(testCtx(t)); code != websocket.CloseGoingAway {
		t.Fatalf("close code %d, want 1001", code)
	}
	if ev := nextEvent(t, eng); !ev.Connected {
		t.Fatalf("event %+v", ev)
	}
	if ev := nextEvent(t, eng); ev.Connected {
		t.Fatalf("event %+v, want the disconnect caused by Stop", ev)
	}
	// Stop is idempotent.
	if err := b.srv.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestClientCloseCancelsItsCall(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	started, cause := blockOn(eng, protocol.MethodRestartKernel)
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	other := b.connect(t, "c2")
	go func() {
		// Fails once the connection is gone; the test does not care.
		_ = c.Call(context.Background(), protocol.MethodRestartKernel, protocol.RestartKernelParams{ContextID: protocol.NewContextID()}, nil)
	}()
	<-started
	c.Close()
	if err := <-cause; !errors.Is(err, ErrConnectionClosed) {
		t.Fatalf("call cancelled with %v, want ErrConnectionClosed", err)
	}
	// Others are unaffected.
	if err := other.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestReplyPrecedesTheNotificationsItsCallCaused(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	id := protocol.NewContextID()
	// The fake "starts a job" inside the call: a notification sent before
	// the call returns.
	eng.Hook = func(ctx context.Context, m, clientID string) error {
		if m == protocol.MethodRecompute {
			eng.Client(clientID).Notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: id})
		}
		return nil
	}
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	if err := c.Call(testCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: id}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteRaw([]byte(`{"jsonrpc":"2.0","id":"r","method":"executionContext/recompute","params":{"contextId":"` + string(id) + `"}}`)); err != nil {
		t.Fatal(err)
	}
	first, err := c.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if string(first.ID) != `"r"` {
		t.Fatalf("first message %s, want the reply to the recompute", first.Raw)
	}
	second, err := c.Next(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if second.Method != protocol.NotifyExecutionComplete {
		t.Fatalf("second message %s, want executionComplete", second.Raw)
	}
}

func TestPanicInTheEngineIsAnInternalError(t *testing.T) {
	t.Parallel()
	eng := servertest.New()
	eng.Hook = func(ctx context.Context, m, _ string) error {
		if m == protocol.MethodFileList {
			panic("boom")
		}
		return nil
	}
	b := setup(t, Config{}, eng)
	c := b.connect(t, "c1")
	wantCode(t, c.Call(testCtx(t), protocol.MethodFileList, protocol.FileListParams{Path: "."}, nil), protocol.CodeInternalError, "boom")
	if err := c.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatalf("the connection did not survive: %v", err)
	}
}

func TestNotificationsReachTheirClient(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c1 := b.connect(t, "c1")
	c2 := b.connect(t, "c2")
	// text/didChange from the fake goes to every other client.
	edit := protocol.FileEdit{Path: "main.py", Edits: []protocol.TextEdit{{Text: "é"}}, OldVersion: "a", NewVersion: "b"}
	if err := c1.Call(testCtx(t), protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Edit: edit}, nil); err != nil {
		t.Fatal(err)
	}
	m, err := c2.WaitFor(testCtx(t), servertest.Method(protocol.NotifyTextDidChange))
	if err != nil {
		t.Fatal(err)
	}
	var got protocol.DidChangeParams
	if err := json.Unmarshal(m.Params, &got); err != nil || len(got.Edits) != 1 || got.Edits[0].Edits[0].Text != "é" {
		t.Fatalf("didChange %s (%v)", m.Params, err)
	}
	// A round trip: anything sent to c1 during the edit has arrived now.
	if err := c1.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(c1.Collect(servertest.Method(protocol.NotifyTextDidChange))); n != 0 {
		t.Fatalf("the editing client got %d didChange", n)
	}
}
