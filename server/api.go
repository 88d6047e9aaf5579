package server

import (
	"context"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// API is the engine as the server calls it: one method per client method of
// PROTOCOL.md section 3, plus Connect and Disconnect for the session.
// *engine.Engine implements it; servertest.Engine is a small fake for
// transport tests.
//
// The server calls a connection's methods one at a time, in the order the
// client sent them, each with its own context that is cancelled when the
// connection closes or the server stops. clientID is the id the client gave
// in session/initProtocolConnection. Errors are mapped to protocol errors as
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

	Status(ctx context.Context) (protocol.RuntimeStatusResult, error)
	RestartKernel(ctx context.Context, clientID string, id protocol.ContextID) error

	ReadFile(ctx context.Context, clientID, path string) (protocol.FileReadResult, error)
	WriteFile(ctx context.Context, clientID string, p protocol.FileWriteParams) error
	ListFiles(ctx context.Context, clientID, path string) (protocol.FileListResult, error)
	DeleteFile(ctx context.Context, clientID, path string) error

	OpenFile(ctx context.Context, clientID, path string) (protocol.OpenFileResult, error)
	ApplyEdit(ctx context.Context, clientID string, p protocol.ApplyEditParams) error
	SaveFile(ctx context.Context, clientID string, p protocol.SaveParams) error
	CloseFile(ctx context.Context, clientID, path string) error

	CreateContext(ctx context.Context, clientID string, p protocol.CreateContextParams) (protocol.CreateContextResult, error)
	DestroyContext(ctx context.Context, clientID string, id protocol.ContextID) error
	Push(ctx context.Context, clientID string, p protocol.PushParams) error
	Pop(ctx context.Context, clientID string, id protocol.ContextID) error
	Recompute(ctx context.Context, clientID string, p protocol.RecomputeParams) error
	Interrupt(ctx context.Context, clientID string, id protocol.ContextID) error
	AttachVisualization(ctx context.Context, clientID string, p protocol.AttachVisualizationParams) error
	ModifyVisualization(ctx context.Context, clientID string, p protocol.ModifyVisualizationParams) error
	DetachVisualization(ctx context.Context, clientID string, p protocol.DetachVisualizationParams) error
	ExecuteExpression(ctx context.Context, clientID string, p protocol.ExecuteExpressionParams) error
}

var _ API = (*engine.Engine)(nil)
