package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The seed corpora live in testdata/fuzz/FuzzDecode and
// testdata/fuzz/FuzzDecodeParams; go test runs them as regression tests.
// To explore further:
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s ./protocol
//	go test -run '^$' -fuzz FuzzDecodeParams -fuzztime 60s ./protocol

// FuzzDecode checks that Decode never panics, always yields a reply shape
// JSON-RPC allows, and agrees with encoding/json on well-formed requests.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"executionContext/pop","params":{"contextId":"6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		frame := Decode(data)
		if len(frame.Messages) == 0 {
			t.Fatal("no messages")
		}
		if !frame.Batch && len(frame.Messages) != 1 {
			t.Fatalf("non-batch frame with %d messages", len(frame.Messages))
		}
		var replies [][]byte
		for i, m := range frame.Messages {
			switch m.Kind {
			case KindInvalid:
				if m.Err == nil || (m.Err.Code != CodeParseError && m.Err.Code != CodeInvalidRequest) {
					t.Fatalf("message %d: invalid with error %v", i, m.Err)
				}
				checkID(t, m.ID)
				replies = append(replies, AppendError(nil, m.ID, m.Err))
			case KindRequest:
				checkID(t, m.ID)
				checkParams(t, m)
				replies = append(replies, AppendResponse(nil, m.ID, nil, MethodNotFound(m.Method)))
			case KindNotification:
				if m.ID != nil {
					t.Fatalf("notification with id %q", m.ID)
				}
				checkParams(t, m)
			default:
				t.Fatalf("message %d: kind %v", i, m.Kind)
			}
		}
		if out := JoinReplies(frame.Batch, replies); out != nil && !json.Valid(out) {
			t.Fatalf("replies are not JSON: %s", out)
		}
		if !frame.Batch && frame.Messages[0].Kind != KindInvalid {
			compareWithStdlib(t, data, frame.Messages[0])
		}
	})
}

func checkID(t *testing.T, id json.RawMessage) {
	t.Helper()
	if !json.Valid(id) {
		t.Fatalf("id %q is not JSON", id)
	}
	switch jsonKind(id) {
	case "string", "number", "null":
	default:
		t.Fatalf("id %q is a %s", id, jsonKind(id))
	}
}

func checkParams(t *testing.T, m Message) {
	t.Helper()
	if m.Params != nil {
		if !json.Valid(m.Params) {
			t.Fatalf("params %q are not JSON", m.Params)
		}
		if k := jsonKind(m.Params); k != "object" && k != "array" {
			t.Fatalf("params are a %s", k)
		}
	}
	if p, ok := NewParams(m.Method); ok {
		err := DecodeParams(m.Params, p)
		var e *Error
		if err != nil && (!errors.As(err, &e) || e.Code != CodeInvalidParams) {
			t.Fatalf("DecodeParams error %v is not InvalidParams", err)
		}
	}
}

// compareWithStdlib decodes data with encoding/json (exact member names via
// a map) and checks that Decode classified the message the same way.
func compareWithStdlib(t *testing.T, data []byte, got Message) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatalf("Decode accepted %q, encoding/json says %v", data, err)
	}
	var version, method string
	if json.Unmarshal(obj["jsonrpc"], &version) != nil || version != "2.0" {
		t.Fatalf("Decode accepted jsonrpc %q", obj["jsonrpc"])
	}
	if json.Unmarshal(obj["method"], &method) != nil || method != got.Method {
		t.Fatalf("method %q, encoding/json reads %q", got.Method, obj["method"])
	}
	id, hasID := obj["id"]
	if hasID != (got.Kind == KindRequest) {
		t.Fatalf("kind %v but id present = %v", got.Kind, hasID)
	}
	if hasID && string(id) != string(got.ID) {
		t.Fatalf("id %q, encoding/json reads %q", got.ID, id)
	}
}

var fuzzMethods = []string{
	MethodInitProtocolConnection, MethodRuntimeStatus, MethodRestartKernel,
	MethodFileRead, MethodFileWrite, MethodFileList, MethodFileDelete,
	MethodTextOpenFile, MethodTextApplyEdit, MethodTextSave, MethodTextCloseFile,
	MethodCreateContext, MethodDestroyContext, MethodPush, MethodPop, MethodRecompute,
	MethodInterrupt, MethodAttachVisualization, MethodModifyVisualization,
	MethodDetachVisualization, MethodExecuteExpression,
}

// FuzzDecodeParams checks that strict params decoding never panics, fails
// only with InvalidParams, and that what it accepts survives an
// encode/decode round trip unchanged.
func FuzzDecodeParams(f *testing.F) {
	f.Add(uint8(13), []byte(`{"contextId":"6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c","stackItem":{"type":"LocalCall","expressionId":"main:main/y"}}`))
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		method := fuzzMethods[int(which)%len(fuzzMethods)]
		if !json.Valid(raw) {
			// The envelope only ever passes valid JSON; check that
			// invalid JSON is still refused cleanly.
			p, _ := NewParams(method)
			if err := DecodeParams(raw, p); err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeInvalidParams {
					t.Fatalf("error %v is not InvalidParams", err)
				}
			}
			return
		}
		p, _ := NewParams(method)
		err := DecodeParams(raw, p)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalidParams {
				t.Fatalf("error %v is not InvalidParams", err)
			}
			return
		}
		encoded, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("accepted params do not encode: %v", err)
		}
		again, _ := NewParams(method)
		if err := DecodeParams(encoded, again); err != nil {
			t.Fatalf("re-encoded params %s do not decode: %v", encoded, err)
		}
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("round trip changed params:\n %#v\n %#v", p, again)
		}
	})
}
