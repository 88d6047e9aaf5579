package servertest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/ripple-run/ripple/protocol"
)

// ExpectedReplies says what a server must answer to one frame: messages is
// 1 when it answers (one reply, or one array for a batch) and 0 when it
// must stay silent (notifications only); replies counts the JSON-RPC
// replies (one per request or invalid message).
func ExpectedReplies(data []byte) (messages, replies int) {
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

// CheckReply checks the reply to one frame (nil when nothing was sent)
// against JSON-RPC 2.0: silence for notifications only, else valid JSON
// with one well-formed reply per request or invalid message, in an array
// for a batch.
func CheckReply(data, reply []byte) error {
	messages, replies := ExpectedReplies(data)
	if messages == 0 {
		if reply != nil {
			return fmt.Errorf("frame %q: a reply %s to notifications only", data, reply)
		}
		return nil
	}
	if !json.Valid(reply) {
		return fmt.Errorf("frame %q: reply is not JSON: %q", data, reply)
	}
	var objs []protocol.ServerMessage
	if protocol.Decode(data).Batch {
		if err := json.Unmarshal(reply, &objs); err != nil {
			return fmt.Errorf("frame %q: batch reply %s: %w", data, reply, err)
		}
	} else {
		var one protocol.ServerMessage
		if err := json.Unmarshal(reply, &one); err != nil {
			return fmt.Errorf("frame %q: reply %s: %w", data, reply, err)
		}
		objs = append(objs, one)
	}
	if len(objs) != replies {
		return fmt.Errorf("frame %q: %d replies, want %d", data, len(objs), replies)
	}
	for _, o := range objs {
		if o.JSONRPC != "2.0" || (o.Error == nil) == (o.Result == nil) || o.ID == nil {
			return fmt.Errorf("frame %q: malformed reply %s", data, reply)
		}
		if o.Error != nil && o.Error.Message == "" {
			return fmt.Errorf("frame %q: error without a message: %s", data, reply)
		}
	}
	return nil
}

// BadMessage returns a malformed or random message for robustness tests,
// drawn from r; contextID is a context the messages may name. Mutations of
// valid requests (truncated, bytes flipped, fields of the wrong type, unknown
// methods and ids, wrong stack items) and plain noise.
func BadMessage(r *rand.Rand, ctxID string) []byte {
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
	ctxs := []string{ctxID, ctxID, string(protocol.NewContextID())}
	exprs := []string{"main:main/x", "main:main/y", "main:main/nope", "helper:foo/c", "nosuch:f/x"}
	// wellFormed is a request of the right shape whose values may name
	// things that do not exist or do not fit: it reaches the engine.
	wellFormed := func() string {
		ctx, expr, vis := pick(ctxs), pick(exprs), string(protocol.NewVisualizationID())
		var method, params string
		switch r.IntN(10) {
		case 0:
			method, params = protocol.MethodPop, `{"contextId":"`+ctx+`"}`
		case 1:
			method, params = protocol.MethodPush, `{"contextId":"`+ctx+`","stackItem":`+pick([]string{
				`{"type":"LocalCall","expressionId":"` + expr + `"}`,
				`{"type":"ExplicitCall","methodPointer":{"module":"` + pick([]string{"main", "nosuch"}) + `","definedOnType":"","name":"main"},"positionalArgumentsExpressions":[]}`,
			})+`}`
		case 2:
			method, params = protocol.MethodRecompute, `{"contextId":"`+ctx+`","invalidatedExpressions":`+pick([]string{`"all"`, `["` + expr + `"]`, `[]`})+`}`
		case 3:
			method, params = protocol.MethodAttachVisualization, `{"visualizationId":"`+vis+`","expressionId":"`+expr+
				`","visualizationConfig":{"executionContextId":"`+ctx+`","expression":"`+pick([]string{"lambda v: v", "lambda v: 1/0", "nosuch:f", "main:main", "(("})+`"}}`
		case 4:
			method, params = protocol.MethodDetachVisualization, `{"executionContextId":"`+ctx+`","visualizationId":"`+vis+`","expressionId":"`+expr+`"}`
		case 5:
			method, params = protocol.MethodExecuteExpression, `{"executionContextId":"`+ctx+`","visualizationId":"`+vis+`","expressionId":"`+expr+`","expression":"`+pick([]string{"x", "1/0", "(("})+`"}`
		case 6:
			method, params = pick([]string{protocol.MethodFileRead, protocol.MethodFileList, protocol.MethodTextOpenFile, protocol.MethodTextCloseFile}),
				`{"path":"`+pick([]string{"main.py", "nope.py", ".", "../x", "/etc/passwd", "main.py/x", ""})+`"}`
		case 7:
			method, params = protocol.MethodTextApplyEdit, `{"edit":{"path":"main.py","edits":[{"range":{"start":{"line":`+fmt.Sprint(r.IntN(20))+`,"character":0},"end":{"line":0,"character":0}},"text":"#"}],"oldVersion":"0","newVersion":"1"}}`
		case 8:
			method, params = pick([]string{protocol.MethodCreateContext, protocol.MethodDestroyContext, protocol.MethodInterrupt}), `{"contextId":"`+ctx+`"}`
		default:
			method, params = protocol.MethodModifyVisualization, `{"visualizationId":"`+vis+`","visualizationConfig":{"executionContextId":"`+ctx+`","expression":"str"}}`
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, r.IntN(1000), method, params)
	}
	switch r.IntN(8) {
	case 6, 7:
		return []byte(wellFormed())
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
