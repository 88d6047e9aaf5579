package protocol

import "context"

// Handler serves the client methods of PROTOCOL.md section 3: one Go method
// per client method, except session/initProtocolConnection, which the
// server's session answers itself (HandledBySession). Methods() binds each
// client method to its Handler method, so a server dispatches a decoded
// call with Method.Call and keeps no list of its own. The engine
// implements it (the server's API adds Connect and Disconnect).
//
// clientID is the id the client gave in session/initProtocolConnection.
// Each call has its own context, cancelled when the connection closes or
// the server stops.
type Handler interface {
	Status(ctx context.Context) (RuntimeStatusResult, error)
	RestartKernel(ctx context.Context, clientID string, id ContextID) error
	// SetRunPolicy sets what automatic runs do with external effects, for
	// one context or (ContextID "") the client's default (PROTOCOL.md 8.2).
	SetRunPolicy(ctx context.Context, clientID string, p SetRunPolicyParams) error

	ReadFile(ctx context.Context, clientID, path string) (FileReadResult, error)
	WriteFile(ctx context.Context, clientID string, p FileWriteParams) error
	ListFiles(ctx context.Context, clientID, path string) (FileListResult, error)
	DeleteFile(ctx context.Context, clientID, path string) error

	OpenFile(ctx context.Context, clientID, path string) (OpenFileResult, error)
	ApplyEdit(ctx context.Context, clientID string, p ApplyEditParams) error
	SaveFile(ctx context.Context, clientID string, p SaveParams) error
	CloseFile(ctx context.Context, clientID, path string) error

	CreateContext(ctx context.Context, clientID string, p CreateContextParams) (CreateContextResult, error)
	DestroyContext(ctx context.Context, clientID string, id ContextID) error
	Push(ctx context.Context, clientID string, p PushParams) error
	Pop(ctx context.Context, clientID string, id ContextID) error
	Recompute(ctx context.Context, clientID string, p RecomputeParams) error
	Interrupt(ctx context.Context, clientID string, id ContextID) error
	AttachVisualization(ctx context.Context, clientID string, p AttachVisualizationParams) error
	ModifyVisualization(ctx context.Context, clientID string, p ModifyVisualizationParams) error
	DetachVisualization(ctx context.Context, clientID string, p DetachVisualizationParams) error
	ExecuteExpression(ctx context.Context, clientID string, p ExecuteExpressionParams) error
}
