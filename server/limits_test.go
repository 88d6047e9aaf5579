package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// dialStalled connects and initialises a client with a bare gorilla
// connection that reads only when the test says so: a stalled client.
func (b *bundle) dialStalled(t *testing.T, clientID string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.DialContext(testCtx(t), b.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	init, _ := protocol.AppendRequest(nil, json.RawMessage("1"), protocol.MethodInitProtocolConnection,
		protocol.InitProtocolConnectionParams{ClientID: clientID})
	if err := ws.WriteMessage(websocket.TextMessage, init); err != nil {
		t.Fatal(err)
	}
	if _, reply, err := ws.ReadMessage(); err != nil || !strings.Contains(string(reply), `"result"`) {
		t.Fatalf("init: %s %v", reply, err)
	}
	return ws
}

// connOf finds the server side of a client.
func (b *bundle) connOf(t *testing.T, clientID string) *conn {
	t.Helper()
	var found *conn
	testenv.Eventually(t, "the connection of "+clientID, func() bool {
		for _, c := range b.srv.openConns() {
			if c.ses.ID() == clientID {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

func TestMessageOverTheReadLimitCloses1009(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	other := b.connect(t, "other")
	big := b.connect(t, "big")

	// Just under the limit is fine.
	contents := strings.Repeat("x", 16<<20-200)
	if err := big.Call(testCtx(t), protocol.MethodFileWrite, protocol.FileWriteParams{Path: "big.txt", Contents: contents}, nil); err != nil {
		t.Fatalf("a message under 16 MiB: %v", err)
	}
	// 20 MiB is not.
	msg, _ := protocol.AppendRequest(nil, json.RawMessage("2"), protocol.MethodFileWrite,
		protocol.FileWriteParams{Path: "big.txt", Contents: strings.Repeat("y", 20<<20)})
	// The write itself may fail: the server refuses the message as soon as
	// it reads its length, and the client's WebSocket then stops writing.
	_ = big.WriteRaw(msg)
	if code, err := big.CloseCode(testCtx(t)); err != nil || code != websocket.CloseMessageTooBig {
		t.Fatalf("close code %d (%v: %v), want 1009", code, err, big.Err())
	}
	if got, _ := b.eng.File("big.txt"); got != contents {
		t.Fatal("the oversized write reached the engine")
	}
	if err := other.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatalf("another client after the 1009: %v", err)
	}
}

func TestBinaryMessageCloses1003(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	if err := c.Conn().WriteMessage(websocket.BinaryMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"runtime/status"}`)); err != nil {
		t.Fatal(err)
	}
	if code, _ := c.CloseCode(testCtx(t)); code != websocket.CloseUnsupportedData {
		t.Fatalf("close code %d, want 1003", code)
	}
}

var markerRE = regexp.MustCompile(`^\[ripple: (\d+) bytes dropped\]\n$`)

// TestStalledClient: a client that reads nothing neither blocks the engine
// (Notify) nor other clients; output beyond its bound is replaced by a
// marker that counts it exactly, expression updates keep the latest per
// expression, and nothing of a context comes after its executionComplete.
func TestStalledClient(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	b := setup(t, Config{OutboundLimit: limit, SlowClientTimeout: 10 * time.Minute}, nil)
	ws := b.dialStalled(t, "slow")
	fast := b.connect(t, "fast")
	ctxID := protocol.NewContextID()

	slow := b.eng.Client("slow")
	chunk := strings.Repeat("o", 8<<10)
	const chunks = 4096 // 32 MiB: far more than socket buffers and the bound
	var total int64
	for range chunks {
		slow.Notify(protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, Stream: protocol.Stdout, Text: chunk})
		total += int64(len(chunk))
	}
	const exprs, rounds = 10, 500
	for i := range exprs * rounds {
		slow.Notify(protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{ContextID: ctxID, Updates: []protocol.ExpressionUpdate{{
			ExpressionID: protocol.ExpressionID(fmt.Sprintf("main:main/e%d", i%exprs)),
			Payload:      protocol.ValuePayload(strconv.Itoa(i)),
		}}})
	}
	slow.Notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: ctxID})

	// All of that returned (Notify did not block on the stalled client),
	// and the other client is served meanwhile.
	fastNote := b.eng.Client("fast")
	fastNote.Notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: ctxID})
	if _, err := fast.WaitFor(testCtx(t), servertest.Method(protocol.NotifyExecutionComplete)); err != nil {
		t.Fatal(err)
	}
	if err := fast.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatal(err)
	}
	if st := b.connOf(t, "slow").out.snapshotStats(); st.droppedOutputBytes == 0 || st.coalesced == 0 {
		t.Fatalf("stats %+v: the stalled client's bound never applied", st)
	}

	// Now the stalled client reads everything.
	var gotText, dropped int64
	last := map[string]int{}
	updates := 0
	for done := false; !done; {
		_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m protocol.ServerMessage
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		switch m.Method {
		case protocol.NotifyOutput:
			var p protocol.OutputParams
			_ = json.Unmarshal(m.Params, &p)
			if sm := markerRE.FindStringSubmatch(p.Text); sm != nil {
				n, _ := strconv.ParseInt(sm[1], 10, 64)
				dropped += n
				continue
			}
			if updates > 0 {
				t.Fatal("output after the updates that followed it")
			}
			gotText += int64(len(p.Text))
		case protocol.NotifyExpressionUpdates:
			var p protocol.ExpressionUpdatesParams
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatal(err)
			}
			seen := map[protocol.ExpressionID]bool{}
			for _, u := range p.Updates {
				if seen[u.ExpressionID] {
					t.Fatalf("one notification names %s twice", u.ExpressionID)
				}
				seen[u.ExpressionID] = true
				v, _ := strconv.Atoi(u.Payload.Preview)
				if v < last[string(u.ExpressionID)] {
					t.Fatalf("%s went back from %d to %d", u.ExpressionID, last[string(u.ExpressionID)], v)
				}
				last[string(u.ExpressionID)] = v
				updates++
			}
		case protocol.NotifyExecutionComplete:
			done = true
		default:
			t.Fatalf("unexpected %s", data)
		}
	}
	if gotText+dropped != total {
		t.Fatalf("received %d bytes of output and markers for %d dropped; sent %d", gotText, dropped, total)
	}
	if dropped == 0 {
		t.Fatal("nothing was dropped")
	}
	for i := range exprs {
		id := fmt.Sprintf("main:main/e%d", i)
		if want := exprs*(rounds-1) + i; last[id] != want {
			t.Fatalf("%s ended at %d, want its latest value %d", id, last[id], want)
		}
	}
	if updates >= exprs*rounds {
		t.Fatalf("got all %d updates: nothing coalesced", updates)
	}
	t.Logf("output: %d bytes received, %d dropped; updates: %d of %d sent", gotText, dropped, updates, exprs*rounds)
}

func TestClientOverTheBoundTooLongCloses1013(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	timeout := 300 * time.Millisecond
	b := setup(t, Config{OutboundLimit: limit, SlowClientTimeout: timeout, WriteTimeout: 10 * time.Minute}, nil)
	ws := b.dialStalled(t, "slow")
	other := b.connect(t, "other")
	server := b.connOf(t, "slow")
	slow := b.eng.Client("slow")
	// A context printing without pause, until the test ends.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		chunk := strings.Repeat("o", 8<<10)
		ctxID := protocol.NewContextID()
		for {
			select {
			case <-stop:
				return
			default:
				slow.Notify(protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, Stream: protocol.Stderr, Text: chunk})
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	// The server closes the connection while the client reads nothing,
	// even though its writer is blocked in a write to it.
	testenv.Eventually(t, "the server to close the slow client", server.isClosing)
	// The client catches up now, too late: it reads what was sent and
	// then the close.
	for {
		_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
				t.Fatalf("connection ended with %v, want close 1013", err)
			}
			break
		}
	}
	if ev := nextEvent(t, b.eng); !ev.Connected || ev.ClientID != "slow" {
		t.Fatalf("event %+v", ev)
	}
	nextEvent(t, b.eng) // other's connect
	if ev := nextEvent(t, b.eng); ev.Connected || ev.ClientID != "slow" {
		t.Fatalf("event %+v, want the slow client's disconnect", ev)
	}
	if err := other.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A client that sends requests but does not read the replies is not served
// more until it reads: the replies queued for it stay bounded.
func TestUnreadRepliesPushBack(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	b := setup(t, Config{OutboundLimit: limit}, nil)
	b.eng.SetFile("big.txt", strings.Repeat("z", 512<<10))
	ws := b.dialStalled(t, "greedy")
	server := b.connOf(t, "greedy")
	const requests = 100 // 50 MiB of replies
	for i := range requests {
		msg, _ := protocol.AppendRequest(nil, json.RawMessage(strconv.Itoa(i)), protocol.MethodFileRead, protocol.FileReadParams{Path: "big.txt"})
		if err := ws.WriteMessage(websocket.TextMessage, msg); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the dispatcher to wait for the client", func() bool {
		server.out.mu.Lock()
		defer server.out.mu.Unlock()
		return server.out.drained != nil
	})
	server.out.mu.Lock()
	replies := server.out.replies
	server.out.mu.Unlock()
	if replies > limit+600<<10 {
		t.Fatalf("%d bytes of replies queued, bound %d", replies, limit)
	}
	reads := 0
	for _, c := range b.eng.Calls() {
		if c.Method == protocol.MethodFileRead {
			reads++
		}
	}
	if reads >= requests {
		t.Fatalf("all %d requests were handled for a client that reads nothing", reads)
	}
	// Reading resumes the service, in order.
	for i := range requests {
		_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
		_, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"result"`) {
			t.Fatalf("reply %d: %.80s", i, data)
		}
	}
}

// A client that reads nothing at all, for longer than the write timeout,
// still finds the 1013 close after what was sent when it reads again: the
// server keeps room for the close frame in the socket's send queue instead
// of blocking in a write it would have to abandon.
func TestClientThatNeverReadsSees1013(t *testing.T) {
	t.Parallel()
	const limit = 64 << 10
	timeout := 300 * time.Millisecond
	// The default write timeout (twice the slow-client timeout): a writer
	// blocked in a write would give up before the client reads.
	b := setup(t, Config{OutboundLimit: limit, SlowClientTimeout: timeout}, nil)
	ws := b.dialStalled(t, "slow")
	slow := b.eng.Client("slow")
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		chunk := strings.Repeat("o", 8<<10)
		ctxID := protocol.NewContextID()
		for {
			select {
			case <-stop:
				return
			default:
				slow.Notify(protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, Stream: protocol.Stderr, Text: chunk})
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	// The server is done with the connection (the engine saw the client
	// go) before the client reads a byte.
	if ev := nextEvent(t, b.eng); !ev.Connected || ev.ClientID != "slow" {
		t.Fatalf("event %+v", ev)
	}
	if ev := nextEvent(t, b.eng); ev.Connected || ev.ClientID != "slow" {
		t.Fatalf("event %+v, want the slow client's disconnect", ev)
	}
	for {
		_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
		if _, _, err := ws.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.CloseTryAgainLater {
				t.Fatalf("connection ended with %v, want close 1013", err)
			}
			break
		}
	}
}
