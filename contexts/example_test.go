package contexts_test

import (
	"context"
	"errors"
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/protocol"
)

// The life of a context as the server and engine drive it.
func Example() {
	store, err := contexts.NewStore()
	if err != nil {
		panic(err)
	}
	id := protocol.ContextID("6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c")

	// executionContext/create and push.
	if _, _, err := store.CreateContext(id, "client-1"); err != nil {
		panic(err)
	}
	frame, err := store.Push(id, protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"}))
	if err != nil {
		panic(err)
	}
	slot, _ := store.AssignSlot(id, 2)

	// A notifier watches the frame's updates.
	ws := memdb.NewWatchSet()
	if _, err := store.FrameUpdates(ws, id, frame.Depth, 0); err != nil {
		panic(err)
	}

	// The engine records a run's updates against the frame it ran.
	err = store.RecordUpdates(frame, []protocol.ExpressionUpdate{{
		ExpressionID: "main:main/x",
		Type:         "builtins.int",
		Payload:      protocol.ValuePayload("6"),
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("slot", slot)
	// Returns at once: the write above closed the watch channel.
	fmt.Println("watch fired:", ws.WatchCtx(context.Background()) == nil)

	// A second ExplicitCall is refused; the server maps the error to 2004.
	_, err = store.Push(id, protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "other"}))
	fmt.Println(errors.Is(err, contexts.ErrInvalidStackItem), int(contexts.ProtocolError(err).Code))

	// Output:
	// slot 0
	// watch fired: true
	// true 2004
}
