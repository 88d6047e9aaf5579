package server

import (
	"context"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// API is the engine as the server calls it: protocol.Handler (one method
// per client method of PROTOCOL.md section 3, bound to the method names by
// protocol.Methods), plus Connect and Disconnect for the session.
// *engine.Engine implements it; servertest.Engine is a small fake for
// transport tests.
//
// The server calls a connection's methods one at a time, in the order the
// client sent them, except those protocol.HandledAsync (restartKernel),
// each with its own context that is cancelled when the connection closes
// or the server stops. clientID is the id the client gave in
// session/initProtocolConnection. Errors are mapped to protocol errors as
// Server's doc says.
type API interface {
	// Connect registers the client (session/initProtocolConnection); c
	// receives its notifications. A client id that is already connected is
	// taken over: the server has closed the old connection and will not call
	// Disconnect for it.
	Connect(ctx context.Context, clientID string, c engine.Client) (protocol.InitProtocolConnectionResult, error)
	// Disconnect is called once when the connection of a connected client
	// ends; c is the Client that connection registered.
	Disconnect(clientID string, c engine.Client)

	protocol.Handler
}

var _ API = (*engine.Engine)(nil)
