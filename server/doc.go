// Package server is ripple's WebSocket transport: authentication, origin
// checks, message limits, client sessions, dispatch of JSON-RPC methods to the
// engine, and fan-out of notifications to clients.
package server
