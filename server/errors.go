package server

import "errors"

// Causes of a cancelled request context (context.Cause tells them apart)
// and of a refused start.
var (
	// ErrShuttingDown: the server is stopping.
	ErrShuttingDown = errors.New("server shutting down")
	// ErrConnectionClosed: the client's connection ended.
	ErrConnectionClosed = errors.New("connection closed")
	// ErrTakenOver: another connection initialised the same client id.
	ErrTakenOver = errors.New("client id taken over by a new connection")
	// ErrClientTooSlow: the client stayed over its outbound memory bound
	// for longer than Config.SlowClientTimeout.
	ErrClientTooSlow = errors.New("client too slow: outbound queue over its memory bound")
	// ErrNoToken: Config.Token is empty.
	ErrNoToken = errors.New("server: an access token is required")
	// ErrStarted: Start was called twice, or after Stop.
	ErrStarted = errors.New("server: already started or stopped")
)
