package protocol

import (
	"encoding/json"
	"strconv"
	"testing"
)

// A keystroke: one text/applyEdit request, the hottest incoming message.
var applyEditRequest = []byte(`{"jsonrpc":"2.0","id":41,"method":"text/applyEdit","params":{"edit":{"path":"main.py","edits":[{"range":{"start":{"line":517,"character":8},"end":{"line":517,"character":9}},"text":"7"}],"oldVersion":"5795c3d628fd638c9835a4c79a55809f265068c88729a1a3fcdf8522","newVersion":"0f3c2b8f0e2a4d4fb6f4d9f0a1c7e6b5d4c3b2a1908f7e6d5c4b3a29"}}}`)

func BenchmarkDecodeRequest(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(applyEditRequest)))
	for b.Loop() {
		f := Decode(applyEditRequest)
		if f.Messages[0].Kind != KindRequest {
			b.Fatal(f.Messages[0].Err)
		}
	}
}

func BenchmarkDecodeApplyEditParams(b *testing.B) {
	params := Decode(applyEditRequest).Messages[0].Params
	b.ReportAllocs()
	b.SetBytes(int64(len(params)))
	for b.Loop() {
		var p ApplyEditParams
		if err := DecodeParams(params, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendResponse(b *testing.B) {
	id := json.RawMessage(`41`)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendResponse(buf[:0], id, nil, nil)
	}
}

// An expressionUpdates notification with 100 values, as a run of a
// 100-statement main produces.
func BenchmarkAppendExpressionUpdates(b *testing.B) {
	updates := make([]ExpressionUpdate, 100)
	for i := range updates {
		updates[i] = ExpressionUpdate{
			ExpressionID:  ExpressionID("main:main/x" + strconv.Itoa(i)),
			Type:          "builtins.int",
			ProfilingInfo: []ProfilingInfo{ExecutionTime(int64(1000 + i))},
			Range:         &Range{Start: Position{Line: i, Character: 4}, End: Position{Line: i, Character: 20}},
			Payload:       ValuePayload(strconv.Itoa(i * i)),
		}
	}
	params := ExpressionUpdatesParams{ContextID: ctxA, Updates: updates}
	buf := make([]byte, 0, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = AppendNotification(buf[:0], NotifyExpressionUpdates, params)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
