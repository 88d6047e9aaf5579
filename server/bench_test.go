package server

import (
	"fmt"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

func benchUpdates() protocol.ExpressionUpdatesParams {
	updates := make([]protocol.ExpressionUpdate, 3)
	for i := range updates {
		updates[i] = protocol.ExpressionUpdate{
			ExpressionID:  protocol.ExpressionID(fmt.Sprintf("main:main/v%d", i)),
			Type:          "builtins.int",
			ProfilingInfo: []protocol.ProfilingInfo{protocol.ExecutionTime(1500)},
			Payload:       protocol.ValuePayload("1000042"),
		}
	}
	return protocol.ExpressionUpdatesParams{ContextID: protocol.NewContextID(), Updates: updates}
}

// BenchmarkOutboxNotify is the engine's side of a notification: encode
// and queue, then the writer's take and accounting.
func BenchmarkOutboxNotify(b *testing.B) {
	o := newOutbox(64 << 20)
	var params any = benchUpdates()
	var spare []outMessage
	b.ReportAllocs()
	for b.Loop() {
		if err := o.notify(protocol.NotifyExpressionUpdates, params); err != nil {
			b.Fatal(err)
		}
		batch := o.take(spare)
		for _, m := range batch {
			o.sent(m)
			m.release()
		}
		clear(batch)
		spare = batch[:0]
	}
}

// BenchmarkNotifyOverWebSocket: a notification from Notify until a real
// WebSocket client has read it.
func BenchmarkNotifyOverWebSocket(b *testing.B) {
	eng := servertest.New()
	srv, err := New(eng, Config{Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	defer srv.Stop(b.Context())
	ws, _, err := websocket.DefaultDialer.DialContext(b.Context(), srv.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	init, _ := protocol.AppendRequest(nil, []byte("1"), protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "bench"})
	if err := ws.WriteMessage(websocket.TextMessage, init); err != nil {
		b.Fatal(err)
	}
	if _, _, err := ws.ReadMessage(); err != nil {
		b.Fatal(err)
	}
	client := eng.Client("bench")
	var params any = benchUpdates()
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		client.Notify(protocol.NotifyExpressionUpdates, params)
		_, r, err := ws.NextReader()
		if err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		for {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err != nil {
				break
			}
		}
	}
}
