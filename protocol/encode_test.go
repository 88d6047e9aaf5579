package protocol

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestAppendQuotedIsJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "tab\tnl\ncr\r", "\x00\x01\x1f\x7f",
		"<script>&amp;", "é中文🙂", "bad \xff\xfe utf8", "line\u2028sep\u2029", "trunc \xe4\xb8",
	} {
		got := appendQuoted(nil, s)
		if !json.Valid(got) {
			t.Errorf("appendQuoted(%q) = %s is not JSON", s, got)
			continue
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		// encoding/json is the reference: same decoded text, invalid
		// bytes each replaced by U+FFFD.
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if back != want {
			t.Errorf("appendQuoted(%q) decodes to %q, want %q", s, back, want)
		}
		if strings.ContainsAny(string(got), "\u2028\u2029") {
			t.Errorf("appendQuoted(%q) = %s leaves a JavaScript line separator raw", s, got)
		}
	}
}

func TestAppendResultAndNotification(t *testing.T) {
	t.Parallel()
	got, err := AppendResult([]byte("prefix:"), json.RawMessage(`"id-1"`), CreateContextResult{ContextID: ctxA})
	if err != nil {
		t.Fatal(err)
	}
	if want := `prefix:{"jsonrpc":"2.0","id":"id-1","result":{"contextId":"` + string(ctxA) + `"}}`; string(got) != want {
		t.Errorf("AppendResult\n got %s\nwant %s", got, want)
	}
	got, err = AppendResult(nil, json.RawMessage(`3`), nil)
	if err != nil || string(got) != `{"jsonrpc":"2.0","id":3,"result":null}` {
		t.Errorf("AppendResult(nil result) = %s, %v", got, err)
	}
	got, err = AppendResult(nil, json.RawMessage(`3`), json.RawMessage(`[1]`))
	if err != nil || string(got) != `{"jsonrpc":"2.0","id":3,"result":[1]}` {
		t.Errorf("AppendResult(raw) = %s, %v", got, err)
	}
	if out, err := AppendResult([]byte("keep"), json.RawMessage(`3`), math.NaN()); err == nil || string(out) != "keep" {
		t.Errorf("AppendResult(NaN) = %s, %v; want the buffer unchanged and an error", out, err)
	}

	got, err = AppendNotification(nil, NotifyExecutionComplete, ExecutionCompleteParams{ContextID: ctxA, KernelID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","method":"executionContext/executionComplete","params":{"contextId":"` + string(ctxA) + `","kernelId":1}}`; string(got) != want {
		t.Errorf("AppendNotification\n got %s\nwant %s", got, want)
	}
	var m ServerMessage
	if err := json.Unmarshal(got, &m); err != nil || !m.IsNotification() || m.Method != NotifyExecutionComplete {
		t.Errorf("notification reads back as %+v, %v", m, err)
	}
}

func TestAppendResponseAlwaysAnswers(t *testing.T) {
	t.Parallel()
	id := json.RawMessage(`"r"`)
	tests := []struct {
		name   string
		result any
		err    error
		want   string
	}{
		{"result", []int{1}, nil, `{"jsonrpc":"2.0","id":"r","result":[1]}`},
		{"protocol error", nil, ContextNotFound(ctxA),
			`{"jsonrpc":"2.0","id":"r","error":{"code":2002,"message":"context ` + string(ctxA) + ` not found"}}`},
		{"plain error", nil, errors.New("disk on fire"),
			`{"jsonrpc":"2.0","id":"r","error":{"code":-32603,"message":"internal error: disk on fire"}}`},
		{"unencodable result", math.Inf(1), nil,
			`{"jsonrpc":"2.0","id":"r","error":{"code":-32603,"message":"internal error: json: unsupported value: +Inf"}}`},
	}
	for _, tt := range tests {
		got := string(AppendResponse(nil, id, tt.result, tt.err))
		if got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

func TestAppendRequestRoundTripsThroughDecode(t *testing.T) {
	t.Parallel()
	params := PushParams{ContextID: ctxA, StackItem: NewLocalCall("main:main/y")}
	req, err := AppendRequest(nil, json.RawMessage(`17`), MethodPush, params)
	if err != nil {
		t.Fatal(err)
	}
	f := Decode(req)
	if f.Batch || len(f.Messages) != 1 {
		t.Fatalf("Decode(%s) = %+v", req, f)
	}
	m := f.Messages[0]
	if m.Kind != KindRequest || string(m.ID) != "17" || m.Method != MethodPush {
		t.Fatalf("Decode(%s) = %+v", req, m)
	}
	var back PushParams
	if err := DecodeParams(m.Params, &back); err != nil || back.ContextID != ctxA || back.StackItem.ExpressionID != "main:main/y" {
		t.Errorf("params read back as %+v, %v", back, err)
	}

	note, err := AppendRequest(nil, nil, MethodRuntimeStatus, nil)
	if err != nil || string(note) != `{"jsonrpc":"2.0","method":"runtime/status"}` {
		t.Errorf("AppendRequest(notification) = %s, %v", note, err)
	}
	if f := Decode(note); f.Messages[0].Kind != KindNotification {
		t.Errorf("notification decodes as %v", f.Messages[0].Kind)
	}
}

func TestJoinReplies(t *testing.T) {
	t.Parallel()
	a, b := []byte(`{"a":1}`), []byte(`{"b":2}`)
	if got := JoinReplies(true, nil); got != nil {
		t.Errorf("no replies = %s, want nil", got)
	}
	if got := JoinReplies(false, [][]byte{a}); string(got) != `{"a":1}` {
		t.Errorf("single = %s", got)
	}
	if got := JoinReplies(true, [][]byte{a}); string(got) != `[{"a":1}]` {
		t.Errorf("batch of one = %s", got)
	}
	if got := JoinReplies(true, [][]byte{a, b}); string(got) != `[{"a":1},{"b":2}]` {
		t.Errorf("batch = %s", got)
	}
}

// TestHandWrittenEncodersMatchEncodingJSON compares the hand-written
// expression update encoder with encoding/json's view of the same value.
func TestHandWrittenEncodersMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	updates := []ExpressionUpdate{
		{ExpressionID: "main:main/x", Type: "builtins.list", ProfilingInfo: []ProfilingInfo{ExecutionTime(7), ExecutionTime(8)},
			FromCache: true, Range: &sampleRange, Payload: ValuePayload("[<object at 0x1>, 'a&b', \"q\"\n]")},
		{ExpressionID: "main:main/y", MethodCall: &MethodCall{MethodPointer: MethodPointer{Module: "shop.cart", DefinedOnType: "Cart", Name: "total"}},
			Payload: PanicPayload("ZeroDivisionError: division by zero", "main:main/x", "main:main/y")},
		{ExpressionID: "main:main/#2", Payload: DataflowErrorPayload()},
		{ExpressionID: "main:main/return", Payload: PendingPayload("not reached")},
		{ExpressionID: "main:main/z\u2028", Payload: ValuePayload("\xff bad utf8")},
		{ExpressionID: "main:main/w", Payload: Payload{Type: PayloadValue, MimeTypes: []string{"text/html"}, Effects: []string{"open('<a>', 'w')"}}},
		{ExpressionID: "main:main/#3", Payload: HeldPayload("os.system('rm -rf \"x\"')", "os.system", "b'rm -rf \"x\"'")},
		{ExpressionID: "main:main/#4", Payload: NotReachedPayload(ReasonHeld, "main:main/#3")},
		{ExpressionID: "main:main/#5", Payload: PendingPayload(MessageRunning)},
	}
	updates[len(updates)-1].Payload.StartedAt = "2026-11-29T01:02:03.456Z"
	params := ExpressionUpdatesParams{ContextID: ctxA, KernelID: 3, Updates: updates}
	fast, err := AppendNotification(nil, NotifyExpressionUpdates, params)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: encoding/json on a mirror of the types without methods.
	type mirrorPayload struct {
		Type      PayloadType     `json:"type"`
		Preview   string          `json:"preview,omitempty"`
		Message   string          `json:"message,omitempty"`
		Trace     *[]ExpressionID `json:"trace,omitempty"`
		MimeTypes []string        `json:"mimeTypes,omitempty"`
		Effects   []string        `json:"effects,omitempty"`
		Reason    *PendingReason  `json:"reason,omitempty"`
		StartedAt string          `json:"startedAt,omitempty"`
	}
	type mirrorUpdate struct {
		ExpressionID  ExpressionID    `json:"expressionId"`
		Type          string          `json:"type,omitempty"`
		MethodCall    *MethodCall     `json:"methodCall,omitempty"`
		ProfilingInfo []ProfilingInfo `json:"profilingInfo"`
		FromCache     bool            `json:"fromCache"`
		Range         *Range          `json:"range,omitempty"`
		Payload       mirrorPayload   `json:"payload"`
	}
	mirror := make([]mirrorUpdate, len(updates))
	for i, u := range updates {
		pi := u.ProfilingInfo
		if pi == nil {
			pi = []ProfilingInfo{}
		}
		mp := mirrorPayload{Type: u.Payload.Type, Preview: u.Payload.Preview, Message: u.Payload.Message,
			MimeTypes: u.Payload.MimeTypes, Effects: u.Payload.Effects, Reason: u.Payload.Reason, StartedAt: u.Payload.StartedAt}
		if u.Payload.Type == PayloadPanic || u.Payload.Type == PayloadDataflowError {
			trace := u.Payload.Trace
			mp.Trace = &trace
		}
		mirror[i] = mirrorUpdate{u.ExpressionID, u.Type, u.MethodCall, pi, u.FromCache, u.Range, mp}
	}
	ref, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "method": NotifyExpressionUpdates,
		"params": map[string]any{"contextId": ctxA, "kernelId": 3, "updates": mirror},
	})
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(fast, &a); err != nil {
		t.Fatalf("fast encoding is not JSON: %v\n%s", err, fast)
	}
	if err := json.Unmarshal(ref, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("hand-written encoding differs from encoding/json\nfast %s\n ref %s", fast, ref)
	}

	// And the value survives a round trip through the strict decoder.
	var msg ServerMessage
	if err := json.Unmarshal(fast, &msg); err != nil {
		t.Fatal(err)
	}
	var back ExpressionUpdatesParams
	if err := json.Unmarshal(msg.Params, &back); err != nil {
		t.Fatal(err)
	}
	for i := range updates {
		if strings.Contains(updates[i].Payload.Preview, "\xff") {
			continue // invalid UTF-8 comes back as U+FFFD, as with encoding/json
		}
		if !reflect.DeepEqual(back.Updates[i].Payload, updates[i].Payload) {
			t.Errorf("round trip of %s lost data:\n got %#v\nwant %#v", updates[i].ExpressionID, back.Updates[i].Payload, updates[i].Payload)
		}
	}

	if _, err := AppendNotification(nil, NotifyExpressionUpdates, ExpressionUpdatesParams{Updates: []ExpressionUpdate{{Payload: Payload{Type: "Nope"}}}}); err == nil {
		t.Error("an update with an unknown payload type encoded without error")
	}
}
