package server

import (
	"context"
	"encoding/json"
	"fmt"
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

// expectedReplies says how many replies a frame must get: one per request
// or invalid message, in one array for a batch.
func expectedReplies(data []byte) (messages, replies int) {
	frame := protocol.Decode(data)
	for _, m := range frame.Messages {
		if m.Kind != protocol.KindNotification {
			replies++
		}
	}
	if replies == 0 {
		return 0, 0
	}
	return 1, replies
}

// checkReply checks the reply to one frame against the JSON-RPC rules.
func checkReply(t *testing.T, data, reply []byte) {
	t.Helper()
	messages, replies := expectedReplies(data)
	if messages == 0 {
		if reply != nil {
			t.Fatalf("frame %q: a reply %s to notifications only", data, reply)
		}
		return
	}
	if !json.Valid(reply) {
		t.Fatalf("frame %q: reply is not JSON: %q", data, reply)
	}
	var objs []protocol.ServerMessage
	if protocol.Decode(data).Batch {
		if err := json.Unmarshal(reply, &objs); err != nil {
			t.Fatalf("frame %q: batch reply %s: %v", data, reply, err)
		}
	} else {
		var one protocol.ServerMessage
		if err := json.Unmarshal(reply, &one); err != nil {
			t.Fatalf("frame %q: reply %s: %v", data, reply, err)
		}
		objs = append(objs, one)
	}
	if len(objs) != replies {
		t.Fatalf("frame %q: %d replies, want %d", data, len(objs), replies)
	}
	for _, o := range objs {
		if o.JSONRPC != "2.0" || (o.Error == nil) == (o.Result == nil) || o.ID == nil {
			t.Fatalf("frame %q: malformed reply %s", data, reply)
		}
		if o.Error != nil && o.Error.Message == "" {
			t.Fatalf("frame %q: error without a message: %s", data, reply)
		}
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

// randomMessage returns a malformed or random message: mutations of valid
// requests (truncated, bytes flipped, fields of the wrong type, unknown
// methods and ids, wrong stack items) and plain noise.
func randomMessage(r *rand.Rand, ctxID string) []byte {
	methods := []string{
		protocol.MethodRuntimeStatus, protocol.MethodPop, protocol.MethodPush, protocol.MethodRecompute,
		protocol.MethodCreateContext, protocol.MethodDestroyContext, protocol.MethodFileRead, protocol.MethodFileList,
		protocol.MethodTextApplyEdit, protocol.MethodAttachVisualization, protocol.MethodDetachVisualization,
		protocol.MethodExecuteExpression, protocol.MethodInterrupt, "no/such", "", "executionContext/POP",
	}
	values := []string{
		`"` + ctxID + `"`, `"` + string(protocol.NewContextID()) + `"`, `7`, `-1`, `1e309`, `null`, `true`, `[]`, `{}`,
		`"main:main/x"`, `"../../etc/passwd"`, `"/etc/passwd"`, `"all"`, `"\u0000"`, `"` + strings.Repeat("é", 50) + `"`,
		`{"type":"ExplicitCall","methodPointer":{"module":"main","definedOnType":"","name":"main"},"positionalArgumentsExpressions":[]}`,
		`{"type":"LocalCall","expressionId":"main:main/y"}`, `{"type":"LocalCall"}`, `{"type":"Nope"}`,
		`{"start":{"line":0,"character":0},"end":{"line":0,"character":-1}}`,
	}
	fields := []string{"contextId", "stackItem", "path", "invalidatedExpressions", "visualizationId", "expressionId",
		"executionContextId", "expression", "edit", "visualizationConfig", "contents"}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	request := func() string {
		var params strings.Builder
		params.WriteString("{")
		for i := range r.IntN(4) {
			if i > 0 {
				params.WriteString(",")
			}
			fmt.Fprintf(&params, "%q:%s", pick(fields), pick(values))
		}
		params.WriteString("}")
		id := pick([]string{`1`, `"s"`, `null`, `[1]`, `1.5`, ``})
		idPart := ""
		if id != "" {
			idPart = `"id":` + id + `,`
		}
		return fmt.Sprintf(`{"jsonrpc":%s,%s"method":%q,"params":%s}`,
			pick([]string{`"2.0"`, `"2.0"`, `"2.0"`, `"1.0"`, `2`}), idPart, pick(methods), params.String())
	}
	switch r.IntN(6) {
	case 0: // noise
		b := make([]byte, r.IntN(64))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	case 1: // truncated
		s := request()
		return []byte(s[:r.IntN(len(s))])
	case 2: // a byte flipped
		b := []byte(request())
		b[r.IntN(len(b))] = byte(r.IntN(256))
		return b
	case 3: // a batch
		parts := make([]string, r.IntN(4))
		for i := range parts {
			parts[i] = pick([]string{request(), `1`, `"x"`, `[]`})
		}
		return []byte("[" + strings.Join(parts, ",") + "]")
	default:
		return []byte(request())
	}
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
		msg := randomMessage(r, ctxID)
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
		messages, _ := expectedReplies(msg)
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
