// Package server is ripple's WebSocket transport: authentication, origin
// checks, message limits, client sessions, dispatch of JSON-RPC methods to
// the engine, and fan-out of notifications to clients with a memory bound
// per client (PROTOCOL.md sections 1, 3, 4 and 6).
//
// Start one on an engine (anything implementing API):
//
//	srv, err := server.New(eng, server.Config{Token: token})
//	if err := srv.Start(ctx); err != nil { ... }
//	fmt.Println(srv.URL()) // ws://127.0.0.1:PORT/ws?token=...
//	...
//	srv.Stop(ctx) // closes every connection (1001) and waits
//
// The files: server.go (Config, Server, the HTTP side), auth.go (token and
// origin checks), conn.go (one connection's reader, dispatcher and writer
// goroutines and how a connection closes), outbox.go (the outbound queue
// and its memory bound), dispatch.go (a session: each JSON-RPC call looked
// up in protocol.Methods and handed to the API), registry.go (which
// connection holds a client id), api.go (the API the server calls).
// servertest has a fake engine for transport tests.
package server
