package protocol_test

import (
	"context"
	"fmt"

	"github.com/ripple-run/ripple/protocol"
)

// stackless serves pop as if every stack were empty and interrupt as if
// nothing ran; the other methods are left to the embedded nil Handler,
// which this example never calls.
type stackless struct{ protocol.Handler }

func (stackless) Pop(_ context.Context, _ string, id protocol.ContextID) error {
	return protocol.EmptyStack(id)
}

func (stackless) Interrupt(context.Context, string, protocol.ContextID) error { return nil }

// A server's read loop: classify a frame, look each call's method up,
// decode its params strictly, call the Handler, answer requests and
// invalid messages, never notifications.
func Example() {
	frame := protocol.Decode([]byte(`[
		{"jsonrpc":"2.0","id":1,"method":"executionContext/pop","params":{"contextId":"6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c"}},
		{"jsonrpc":"2.0","id":"two","method":"executionContext/pop","params":{"contextId":7}},
		{"jsonrpc":"2.0","method":"executionContext/interrupt","params":{"contextId":"6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c"}},
		{"jsonrpc":"2.0","id":3,"method":"no/such"},
		{"jsonrpc":"1.0","id":4,"method":"executionContext/pop"}
	]`))

	var replies [][]byte
	for _, m := range frame.Messages {
		if m.Kind == protocol.KindInvalid {
			replies = append(replies, protocol.AppendError(nil, m.ID, m.Err))
			continue
		}
		var result any
		method, ok := protocol.LookupMethod(m.Method)
		err := error(protocol.MethodNotFound(m.Method))
		if ok {
			params := method.NewParams()
			if err = protocol.DecodeParams(m.Params, params); err == nil {
				result, err = method.Call(context.Background(), stackless{}, "client-1", params)
			}
		}
		if m.Kind == protocol.KindRequest {
			replies = append(replies, protocol.AppendResponse(nil, m.ID, result, err))
		}
	}
	fmt.Printf("%s\n", protocol.JoinReplies(frame.Batch, replies))
	// Output:
	// [{"jsonrpc":"2.0","id":1,"error":{"code":2003,"message":"context 6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c: stack is empty"}},{"jsonrpc":"2.0","id":"two","error":{"code":-32602,"message":"params.contextId: expected string, got number"}},{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method not found: \"no/such\""}},{"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request: jsonrpc must be \"2.0\""}}]
}

func ExampleParseMethodPointer() {
	mp, err := protocol.ParseMethodPointer("shop.cart:Cart.total")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s | module=%s type=%s name=%s\n", mp, mp.Module, mp.DefinedOnType, mp.Name)
	// Output: shop.cart:Cart.total | module=shop.cart type=Cart name=total
}

func ExampleAppendNotification() {
	msg, err := protocol.AppendNotification(nil, protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{
		ContextID: "6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c",
		KernelID:  1,
		Updates: []protocol.ExpressionUpdate{{
			ExpressionID:  "main:main/x",
			Type:          "builtins.int",
			ProfilingInfo: []protocol.ProfilingInfo{protocol.ExecutionTime(1500)},
			Payload:       protocol.ValuePayload("6"),
		}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s\n", msg)
	// Output: {"jsonrpc":"2.0","method":"executionContext/expressionUpdates","params":{"contextId":"6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c","kernelId":1,"updates":[{"expressionId":"main:main/x","type":"builtins.int","profilingInfo":[{"type":"ExecutionTime","nanoTime":1500}],"fromCache":false,"payload":{"type":"Value","preview":"6"}}]}}
}
