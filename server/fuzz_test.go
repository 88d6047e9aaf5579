package server

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

type discardClient struct{}

func (discardClient) Notify(string, any) {}

// newTestSession is a session on a fake engine, without a connection.
func newTestSession(eng *servertest.Engine) *session {
	return &session{
		api:      eng,
		registry: newRegistry(eng),
		client:   discardClient{},
		log:      slog.New(slog.DiscardHandler),
		takeover: func() {},
	}
}

// checkReply fails the test when reply is not what JSON-RPC 2.0 prescribes
// for data.
func checkReply(t *testing.T, data, reply []byte) {
	t.Helper()
	if err := servertest.CheckReply(data, reply); err != nil {
		t.Fatal(err)
	}
}

// FuzzDispatch drives a session with arbitrary frames, uninitialised and
// initialised: it never panics and answers exactly as JSON-RPC 2.0 says.
// Seeds: testdata/fuzz/FuzzDispatch.
func FuzzDispatch(f *testing.F) {
	id := string(protocol.NewContextID())
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"runtime/status"}`,
		`{"jsonrpc":"2.0","id":"a","method":"executionContext/create","params":{"contextId":"` + id + `"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"executionContext/pop","params":{"contextId":"` + id + `"}},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":2,"method":"executionContext/push","params":{"contextId":"` + id + `","stackItem":{"type":"LocalCall","expressionId":"main:main/x"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"text/applyEdit","params":{"edit":{"path":"a.py","edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"text":"y"}],"oldVersion":"a","newVersion":"b"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/initProtocolConnection","params":{"clientId":"again"}}`,
		`{"jsonrpc":"2.0","method":"executionContext/interrupt","params":{"contextId":"` + id + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"file/read","params":{"path":"../../etc/passwd"}}`,
		`[]`, `[1,2]`, `{`, `null`, `"x"`, `{"jsonrpc":"2.0","id":[],"method":"a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		eng := servertest.New()
		s := newTestSession(eng)
		ctx := context.Background()
		checkReply(t, data, s.handleFrame(ctx, data))
		if s.ID() != "" {
			return // the frame itself initialised the session
		}
		init := []byte(`{"jsonrpc":"2.0","id":0,"method":"session/initProtocolConnection","params":{"clientId":"fuzz"}}`)
		if r := s.handleFrame(ctx, init); !strings.Contains(string(r), `"result"`) {
			t.Fatalf("init failed: %s", r)
		}
		checkReply(t, data, s.handleFrame(ctx, data))
	})
}

func TestTenThousandBadMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{}, nil)
	c := b.connect(t, "c1")
	bystander := b.connect(t, "c2")
	ctxID := string(protocol.NewContextID())
	if err := c.Call(testCtx(t), protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: protocol.ContextID(ctxID)}, nil); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	const n = 10000
	sent := make([][]byte, 0, n)
	for range n {
		msg := servertest.BadMessage(r, ctxID)
		if len(msg) == 0 {
			msg = []byte(" ")
		}
		sent = append(sent, msg)
	}
	// Writer and reader run at once: 10,000 replies do not fit in socket
	// buffers if nobody reads them.
	writeErr := make(chan error, 1)
	go func() {
		for _, msg := range sent {
			if err := c.WriteRaw(msg); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	answered := 0
	for i, msg := range sent {
		messages, _ := servertest.ExpectedReplies(msg)
		if messages == 0 {
			continue
		}
		answered++
		got, err := c.Next(testCtx(t))
		if err != nil {
			t.Fatalf("message %d %q: %v", i, msg, err)
		}
		// Replies come in order, so this one answers msg.
		if got.IsNotification() {
			t.Fatalf("message %d: unexpected notification %s", i, got.Raw)
		}
		checkReply(t, msg, got.Raw)
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	if answered < n/2 {
		t.Fatalf("only %d of %d messages needed an answer: the generator is too tame", answered, n)
	}
	// Both clients are still served.
	for _, cl := range []*servertest.Client{c, bystander} {
		if err := cl.Call(testCtx(t), protocol.MethodRuntimeStatus, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if extra := c.Collect(func(servertest.Message) bool { return true }); len(extra) != 0 {
		t.Fatalf("%d replies too many, first %s", len(extra), extra[0].Raw)
	}
}
