package server_test

import (
	"context"
	"fmt"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server"
	"github.com/ripple-run/ripple/server/servertest"
)

// A server on an engine (here the fake), and a client that connects with
// the URL it prints, initialises its session and makes a call.
func Example() {
	ctx := context.Background()
	srv, err := server.New(servertest.New(), server.Config{Token: "secret"})
	if err != nil {
		panic(err)
	}
	if err := srv.Start(ctx); err != nil {
		panic(err)
	}
	defer srv.Stop(ctx)

	c, _, err := servertest.Dial(ctx, srv.URL(), nil)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println(c.Call(ctx, protocol.MethodRuntimeStatus, nil, nil))

	var init protocol.InitProtocolConnectionResult
	if err := c.Call(ctx, protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "ide"}, &init); err != nil {
		panic(err)
	}
	fmt.Println("protocol version", init.Version)
	fmt.Println(c.Call(ctx, protocol.MethodPop, protocol.PopParams{ContextID: "6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c"}, nil))
	// Output:
	// SessionNotInitialised: session not initialised: call session/initProtocolConnection before runtime/status
	// protocol version 1
	// ContextNotFound: context 6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c not found
}
