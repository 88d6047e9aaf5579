package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

// wantMsg is what a test expects of one decoded message. id and params are
// compared byte for byte ("" = nil); code is the error code of an invalid
// message and errHas a substring of its message.
type wantMsg struct {
	kind   Kind
	id     string
	method string
	params string
	code   Code
	errHas string
}

func request(id, method, params string) wantMsg {
	return wantMsg{kind: KindRequest, id: id, method: method, params: params}
}

func notification(method, params string) wantMsg {
	return wantMsg{kind: KindNotification, method: method, params: params}
}

func invalid(id string, code Code, errHas string) wantMsg {
	return wantMsg{kind: KindInvalid, id: id, code: code, errHas: errHas}
}

func TestDecodeClassifiesMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		batch bool
		want  []wantMsg
	}{
		// Requests: the id is echoed byte for byte, whatever its spelling.
		{"request with number id", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`, false,
			[]wantMsg{request("1", "m", `{"a":1}`)}},
		{"request with string id", `{"jsonrpc":"2.0","id":"abc","method":"m"}`, false,
			[]wantMsg{request(`"abc"`, "m", "")}},
		{"string id with escapes kept as sent", `{"jsonrpc":"2.0","id":"a\u0062c\n","method":"m"}`, false,
			[]wantMsg{request(`"a\u0062c\n"`, "m", "")}},
		{"fractional id", `{"jsonrpc":"2.0","id":1.50,"method":"m"}`, false,
			[]wantMsg{request("1.50", "m", "")}},
		{"huge id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"m"}`, false,
			[]wantMsg{request("123456789012345678901234567890", "m", "")}},
		{"negative exponent id", `{"jsonrpc":"2.0","id":-1e3,"method":"m"}`, false,
			[]wantMsg{request("-1e3", "m", "")}},
		{"null id is a request answered with null", `{"jsonrpc":"2.0","id":null,"method":"m"}`, false,
			[]wantMsg{request("null", "m", "")}},
		{"members in any order, whitespace", " \n{ \"method\" : \"m\" ,\t\"params\" : [ 1 , 2 ] , \"id\" : 7 , \"jsonrpc\" : \"2.0\" }\n", false,
			[]wantMsg{request("7", "m", "[ 1 , 2 ]")}},
		{"params with tricky strings kept whole", `{"jsonrpc":"2.0","id":2,"method":"m","params":{"a":"}\"]{[","b":[{"c":"\\"}]}}`, false,
			[]wantMsg{request("2", "m", `{"a":"}\"]{[","b":[{"c":"\\"}]}`)}},
		{"null params are absent", `{"jsonrpc":"2.0","id":3,"method":"m","params":null}`, false,
			[]wantMsg{request("3", "m", "")}},
		{"unknown members ignored", `{"jsonrpc":"2.0","id":4,"method":"m","extra":{"x":[1]}}`, false,
			[]wantMsg{request("4", "m", "")}},
		{"escaped member name", `{"jsonrpc":"2.0","id":5,"\u006dethod":"m"}`, false,
			[]wantMsg{request("5", "m", "")}},
		{"duplicate member: last wins", `{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}`, false,
			[]wantMsg{request("2", "b", "")}},
		{"escaped method name", `{"jsonrpc":"2.0","id":6,"method":"file\/read"}`, false,
			[]wantMsg{request("6", "file/read", "")}},

		// Notifications.
		{"notification", `{"jsonrpc":"2.0","method":"n","params":[7]}`, false,
			[]wantMsg{notification("n", "[7]")}},
		{"notification without params", `{"jsonrpc":"2.0","method":"n"}`, false,
			[]wantMsg{notification("n", "")}},

		// Parse errors: one reply, id null, even for a broken batch.
		{"not JSON", `{"jsonrpc":"2.0","method":"foo","params":"bar","baz]`, false,
			[]wantMsg{invalid("null", CodeParseError, "parse error")}},
		{"broken batch", `[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method"]`, false,
			[]wantMsg{invalid("null", CodeParseError, "at byte")}},
		{"empty message", ``, false, []wantMsg{invalid("null", CodeParseError, "parse error")}},
		{"only whitespace", " \n ", false, []wantMsg{invalid("null", CodeParseError, "parse error")}},
		{"trailing garbage", `{"jsonrpc":"2.0","method":"m"} x`, false, []wantMsg{invalid("null", CodeParseError, "parse error")}},
		{"two objects", `{"jsonrpc":"2.0","method":"m"}{"jsonrpc":"2.0","method":"m"}`, false,
			[]wantMsg{invalid("null", CodeParseError, "parse error")}},

		// Invalid requests.
		{"empty batch", `[]`, false, []wantMsg{invalid("null", CodeInvalidRequest, "empty batch")}},
		{"number", `42`, false, []wantMsg{invalid("null", CodeInvalidRequest, "got number")}},
		{"string", `"hello"`, false, []wantMsg{invalid("null", CodeInvalidRequest, "got string")}},
		{"null", `null`, false, []wantMsg{invalid("null", CodeInvalidRequest, "got null")}},
		{"non-object batch element", `[1]`, true, []wantMsg{invalid("null", CodeInvalidRequest, "batch element 0 is a number")}},
		{"three non-object elements", `[1,"x",[]]`, true, []wantMsg{
			invalid("null", CodeInvalidRequest, "element 0"),
			invalid("null", CodeInvalidRequest, "element 1 is a string"),
			invalid("null", CodeInvalidRequest, "element 2 is a array"),
		}},
		{"method not a string (spec example)", `{"jsonrpc":"2.0","method":1,"params":"bar"}`, false,
			[]wantMsg{invalid("null", CodeInvalidRequest, "method must be a string, got number")}},
		{"method missing", `{"jsonrpc":"2.0","id":9}`, false,
			[]wantMsg{invalid("9", CodeInvalidRequest, `missing member "method"`)}},
		{"member names are case-sensitive", `{"jsonrpc":"2.0","id":9,"Method":"m"}`, false,
			[]wantMsg{invalid("9", CodeInvalidRequest, `missing member "method"`)}},
		{"wrong version keeps a usable id", `{"jsonrpc":"1.0","id":"x","method":"m"}`, false,
			[]wantMsg{invalid(`"x"`, CodeInvalidRequest, `jsonrpc must be "2.0"`)}},
		{"version as number", `{"jsonrpc":2.0,"id":1,"method":"m"}`, false,
			[]wantMsg{invalid("1", CodeInvalidRequest, `jsonrpc must be "2.0"`)}},
		{"version missing", `{"id":1,"method":"m"}`, false,
			[]wantMsg{invalid("1", CodeInvalidRequest, `missing member "jsonrpc"`)}},
		{"invalid notification is still answered", `{"jsonrpc":"2.1","method":"m"}`, false,
			[]wantMsg{invalid("null", CodeInvalidRequest, `jsonrpc must be "2.0"`)}},
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`, false,
			[]wantMsg{invalid("null", CodeInvalidRequest, "id must be a string, a number or null, got object")}},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"m"}`, false,
			[]wantMsg{invalid("null", CodeInvalidRequest, "got array")}},
		{"id boolean", `{"jsonrpc":"2.0","id":true,"method":"m"}`, false,
			[]wantMsg{invalid("null", CodeInvalidRequest, "got boolean")}},
		{"params string", `{"jsonrpc":"2.0","id":1,"method":"m","params":"bar"}`, false,
			[]wantMsg{invalid("1", CodeInvalidRequest, "params must be an object or an array, got string")}},
		{"params number", `{"jsonrpc":"2.0","id":1,"method":"m","params":3}`, false,
			[]wantMsg{invalid("1", CodeInvalidRequest, "got number")}},

		// Batches keep element order and mix kinds.
		{"mixed batch", `[
			{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
			{"jsonrpc":"2.0","method":"notify_hello","params":[7]},
			{"foo":"boo"},
			{"jsonrpc":"2.0","method":"get_data","id":"9"}]`, true, []wantMsg{
			request(`"1"`, "sum", "[1,2,4]"),
			notification("notify_hello", "[7]"),
			invalid("null", CodeInvalidRequest, "jsonrpc"),
			request(`"9"`, "get_data", ""),
		}},
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`, true,
			[]wantMsg{notification("a", ""), notification("b", "")}},
		{"nested batch is an invalid element", `[[{"jsonrpc":"2.0","method":"a","id":1}]]`, true,
			[]wantMsg{invalid("null", CodeInvalidRequest, "is a array")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := Decode([]byte(tt.in))
			if f.Batch != tt.batch {
				t.Errorf("Batch = %v, want %v", f.Batch, tt.batch)
			}
			if len(f.Messages) != len(tt.want) {
				t.Fatalf("got %d messages, want %d: %+v", len(f.Messages), len(tt.want), f.Messages)
			}
			for i, w := range tt.want {
				checkMessage(t, i, f.Messages[i], w)
			}
		})
	}
}

func checkMessage(t *testing.T, i int, got Message, w wantMsg) {
	t.Helper()
	if got.Kind != w.kind {
		t.Errorf("message %d: kind %v, want %v (err %v)", i, got.Kind, w.kind, got.Err)
		return
	}
	if string(got.ID) != w.id {
		t.Errorf("message %d: id %q, want %q", i, got.ID, w.id)
	}
	if w.id == "" && got.ID != nil {
		t.Errorf("message %d: id %q, want nil", i, got.ID)
	}
	if got.Method != w.method {
		t.Errorf("message %d: method %q, want %q", i, got.Method, w.method)
	}
	if string(got.Params) != w.params {
		t.Errorf("message %d: params %q, want %q", i, got.Params, w.params)
	}
	if w.kind == KindInvalid {
		if got.Err == nil {
			t.Fatalf("message %d: no error", i)
		}
		if got.Err.Code != w.code || !strings.Contains(got.Err.Message, w.errHas) {
			t.Errorf("message %d: error %d %q, want %d containing %q", i, got.Err.Code, got.Err.Message, w.code, w.errHas)
		}
	} else if got.Err != nil {
		t.Errorf("message %d: unexpected error %v", i, got.Err)
	}
}

// specServer answers a frame the way a JSON-RPC 2.0 server must, with the
// methods of the specification's examples; it is the reply half of the
// envelope exercised end to end.
func specServer(in string) string {
	f := Decode([]byte(in))
	var replies [][]byte
	for _, m := range f.Messages {
		switch m.Kind {
		case KindInvalid:
			replies = append(replies, AppendError(nil, m.ID, m.Err))
		case KindNotification:
			// never answered, whatever the method
		case KindRequest:
			var args []int
			_ = json.Unmarshal(m.Params, &args)
			switch m.Method {
			case "sum":
				total := 0
				for _, a := range args {
					total += a
				}
				replies = append(replies, AppendResponse(nil, m.ID, total, nil))
			case "subtract":
				replies = append(replies, AppendResponse(nil, m.ID, args[0]-args[1], nil))
			case "get_data":
				replies = append(replies, AppendResponse(nil, m.ID, []any{"hello", 5}, nil))
			default:
				replies = append(replies, AppendResponse(nil, m.ID, nil, MethodNotFound(m.Method)))
			}
		}
	}
	return string(JoinReplies(f.Batch, replies))
}

func TestRepliesFollowJSONRPC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string // exact bytes; "" = no reply at all
	}{
		{"positional params", `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`,
			`{"jsonrpc":"2.0","id":1,"result":19}`},
		{"string id echoed", `{"jsonrpc":"2.0","method":"subtract","params":[23,42],"id":"a\"b"}`,
			`{"jsonrpc":"2.0","id":"a\"b","result":-19}`},
		{"notification: no reply", `{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}`, ``},
		{"unknown notification: no reply", `{"jsonrpc":"2.0","method":"foobar"}`, ``},
		{"unknown method", `{"jsonrpc":"2.0","method":"foobar","id":"1"}`,
			`{"jsonrpc":"2.0","id":"1","error":{"code":-32601,"message":"method not found: \"foobar\""}}`},
		{"parse error", `{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'p' after object key:value pair at byte 36"}}`},
		{"invalid request", `{"jsonrpc":"2.0","method":1,"params":"bar"}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: method must be a string, got number"}}`},
		{"broken batch: one parse error", `[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method"]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character ']' after object key at byte 86"}}`},
		{"empty batch: one error, not an array", `[]`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: empty batch"}}`},
		{"one bad element: an array of one", `[1]`,
			`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batch element 0 is a number, not a request object"}}]`},
		{"three bad elements", `[1,2,3]`,
			`[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batch element 0 is a number, not a request object"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batch element 1 is a number, not a request object"}},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: batch element 2 is a number, not a request object"}}]`},
		{"mixed batch", `[
			{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
			{"jsonrpc":"2.0","method":"notify_hello","params":[7]},
			{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},
			{"foo":"boo"},
			{"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
			{"jsonrpc":"2.0","method":"get_data","id":"9"}]`,
			`[{"jsonrpc":"2.0","id":"1","result":7},` +
				`{"jsonrpc":"2.0","id":"2","result":19},` +
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: missing member \"jsonrpc\""}},` +
				`{"jsonrpc":"2.0","id":"5","error":{"code":-32601,"message":"method not found: \"foo.get\""}},` +
				`{"jsonrpc":"2.0","id":"9","result":["hello",5]}]`},
		{"batch of notifications: no reply", `[{"jsonrpc":"2.0","method":"notify_sum","params":[1,2,4]},{"jsonrpc":"2.0","method":"notify_hello","params":[7]}]`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := specServer(tt.in)
			if got != tt.want {
				t.Errorf("reply\n got %s\nwant %s", got, tt.want)
			}
			if got != "" && !json.Valid([]byte(got)) {
				t.Errorf("reply is not valid JSON: %s", got)
			}
		})
	}
}
