package tests

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// 10,000 malformed or random messages at the real engine: each answered as
// JSON-RPC says, none with an internal error (the engine names what is at
// fault), and another client's context keeps running.
func TestWireTenThousandBadMessages(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper}, engine.Config{})
	bystander, _ := connect(t, s.url, "bystander")
	bid, _ := bystander.newContext("main:main")
	fuzzer, _ := connect(t, s.url, "fuzzer")
	fid, _ := fuzzer.newContext("main:main")

	r := rand.New(rand.NewPCG(10, 10000))
	const n = 10000
	sent := make([][]byte, n)
	for i := range sent {
		if sent[i] = servertest.BadMessage(r, string(fid)); len(sent[i]) == 0 {
			sent[i] = []byte(" ")
		}
	}
	writeErr := make(chan error, 1)
	go func() {
		for _, msg := range sent {
			if err := fuzzer.c.WriteRaw(msg); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	codes := map[protocol.Code]int{}
	for i, msg := range sent {
		if expect, _ := servertest.ExpectedReplies(msg); expect == 0 {
			continue
		}
		// Skip the notifications of the runs the messages cause.
		m, err := fuzzer.c.WaitFor(stepCtx(t), func(m servertest.Message) bool { return !m.IsNotification() })
		if err != nil {
			t.Fatalf("message %d %q: %v", i, msg, err)
		}
		if err := servertest.CheckReply(msg, m.Raw); err != nil {
			t.Fatal(err)
		}
		var replies []protocol.ServerMessage
		if m.Raw[0] == '[' {
			mustDecode(t, m.Raw, &replies)
		} else {
			replies = append(replies, m.ServerMessage)
		}
		for _, rep := range replies {
			if rep.Error == nil {
				continue
			}
			codes[rep.Error.Code]++
			if rep.Error.Code == protocol.CodeInternalError {
				t.Errorf("message %d %q: internal error %q", i, msg, rep.Error.Message)
			}
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	t.Logf("error codes: %v", codes)
	bystander.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: bid, InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	expect(t, "bystander z", bystander.waitRun(bid).updates.Values()["main:main/z"], "35")
	var st json.RawMessage
	fuzzer.call(protocol.MethodRuntimeStatus, nil, &st)
}
