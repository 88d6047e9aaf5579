package server

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// A client that answers pings stays connected through many liveness
// periods without sending anything else.
func TestPingsKeepAnIdleClient(t *testing.T) {
	t.Parallel()
	// The interval leaves room for a loaded machine: a pong later than two
	// intervals drops the client, which is what this test must not see.
	b := setup(t, Config{PingInterval: time.Second}, nil)
	ws, _, err := websocket.DefaultDialer.DialContext(testCtx(t), b.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var pings atomic.Int32
	ws.SetPingHandler(func(data string) error {
		pings.Add(1)
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	replies := make(chan []byte)
	go func() {
		defer close(replies)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			replies <- data
		}
	}()
	// 4 pings: twice the 2 s a silent client is given. (Shorter intervals
	// flaked when the whole suite, browser test included, loaded the
	// machine: a stall longer than the liveness period drops the client.)
	testenv.Eventually(t, "4 pings", func() bool { return pings.Load() >= 4 })
	msg, _ := protocol.AppendRequest(nil, json.RawMessage("1"), protocol.MethodRuntimeStatus, nil)
	if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
		t.Fatalf("the idle connection was closed: %v", err)
	}
	if reply, ok := <-replies; !ok {
		t.Fatal("the idle connection was closed")
	} else if !json.Valid(reply) {
		t.Fatalf("reply %q", reply)
	}
	ws.Close()
	for range replies {
	}
}

// A client that never answers (it reads nothing, so it never sees the
// pings) is dropped, and the engine is told.
func TestSilentClientIsDropped(t *testing.T) {
	t.Parallel()
	// The client must get through its init before it falls silent: a
	// liveness period of 2 x 20 ms was shorter than a stall of a loaded CI
	// machine (-race, the browser test), which dropped it during init.
	b := setup(t, Config{PingInterval: 250 * time.Millisecond}, nil)
	b.dialStalled(t, "silent")
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: true, ClientID: "silent"}) {
		t.Fatalf("event %+v", ev)
	}
	if ev := nextEvent(t, b.eng); ev != (servertest.Event{Connected: false, ClientID: "silent"}) {
		t.Fatalf("event %+v, want the silent client's disconnect", ev)
	}
}
