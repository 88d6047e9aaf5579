package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// Client is how the engine reaches one connected client (a WebSocket
// session, the watch terminal view, the batch runner). Notify must not
// block: the transport queues the notification and applies its own memory
// bound (dropping output, keeping the latest update per expression).
// params is one of the protocol package's notification params types.
type Client interface {
	Notify(method string, params any)
}

// Config configures an Engine.
type Config struct {
	// Root is the project directory.
	Root string
	// Python is the --python flag ("" = RIPPLE_PYTHON, .venv, python3).
	Python string
	// Kernels is the pool size (0 = number of CPUs).
	Kernels int
	// Logger receives structured logs (nil = discard).
	Logger *slog.Logger
	// FlushInterval is how often expression updates of a context are
	// flushed to clients (0 = 20 ms).
	FlushInterval time.Duration
	// DisconnectGrace is how long a disconnected client's contexts are kept
	// (0 = 5 min).
	DisconnectGrace time.Duration
	// InterruptTimeout is how long an interrupt may take before the kernel
	// is restarted (0 = 2 s).
	InterruptTimeout time.Duration
	// Watch starts a file watcher on Root: changes on disk become edits.
	Watch bool
	// WatchDebounce is the watcher's debounce (0 = 50 ms).
	WatchDebounce time.Duration
}

// ErrNotImplemented marks engine calls that are still being written.
var ErrNotImplemented = errors.New("engine: not implemented yet")

// The methods below are the engine's API, one per client protocol method
// (../shared/PROTOCOL.md section 3). clientID is the id the client gave in
// session/initProtocolConnection. Errors map to protocol codes with
// ProtocolError.

// Connect registers a client (session/initProtocolConnection). A client
// that reconnects with the same id within the grace period gets its
// contexts back and receives their current state (fromCache true).
func (e *Engine) Connect(ctx context.Context, clientID string, c Client) (protocol.InitProtocolConnectionResult, error) {
	return protocol.InitProtocolConnectionResult{}, ErrNotImplemented
}

// Disconnect starts the grace period of the client's contexts.
func (e *Engine) Disconnect(clientID string) {}

// Status answers runtime/status.
func (e *Engine) Status(ctx context.Context) (protocol.RuntimeStatusResult, error) {
	return protocol.RuntimeStatusResult{}, ErrNotImplemented
}

// RestartKernel restarts the kernel of a context (runtime/restartKernel):
// every context on it is recomputed from scratch.
func (e *Engine) RestartKernel(ctx context.Context, clientID string, id protocol.ContextID) error {
	return ErrNotImplemented
}

// ReadFile answers file/read.
func (e *Engine) ReadFile(ctx context.Context, clientID, path string) (protocol.FileReadResult, error) {
	return protocol.FileReadResult{}, ErrNotImplemented
}

// WriteFile answers file/write (an edit: modules it changes are recompiled
// and every context re-run).
func (e *Engine) WriteFile(ctx context.Context, clientID string, p protocol.FileWriteParams) error {
	return ErrNotImplemented
}

// ListFiles answers file/list.
func (e *Engine) ListFiles(ctx context.Context, clientID, path string) (protocol.FileListResult, error) {
	return protocol.FileListResult{}, ErrNotImplemented
}

// DeleteFile answers file/delete.
func (e *Engine) DeleteFile(ctx context.Context, clientID, path string) error {
	return ErrNotImplemented
}

// OpenFile answers text/openFile.
func (e *Engine) OpenFile(ctx context.Context, clientID, path string) (protocol.OpenFileResult, error) {
	return protocol.OpenFileResult{}, ErrNotImplemented
}

// ApplyEdit answers text/applyEdit; other clients with the file open get
// text/didChange.
func (e *Engine) ApplyEdit(ctx context.Context, clientID string, p protocol.ApplyEditParams) error {
	return ErrNotImplemented
}

// SaveFile answers text/save.
func (e *Engine) SaveFile(ctx context.Context, clientID string, p protocol.SaveParams) error {
	return ErrNotImplemented
}

// CloseFile answers text/closeFile.
func (e *Engine) CloseFile(ctx context.Context, clientID, path string) error {
	return ErrNotImplemented
}

// CreateContext answers executionContext/create.
func (e *Engine) CreateContext(ctx context.Context, clientID string, p protocol.CreateContextParams) (protocol.CreateContextResult, error) {
	return protocol.CreateContextResult{}, ErrNotImplemented
}

// DestroyContext answers executionContext/destroy.
func (e *Engine) DestroyContext(ctx context.Context, clientID string, id protocol.ContextID) error {
	return ErrNotImplemented
}

// Push answers executionContext/push.
func (e *Engine) Push(ctx context.Context, clientID string, p protocol.PushParams) error {
	return ErrNotImplemented
}

// Pop answers executionContext/pop.
func (e *Engine) Pop(ctx context.Context, clientID string, id protocol.ContextID) error {
	return ErrNotImplemented
}

// Recompute answers executionContext/recompute.
func (e *Engine) Recompute(ctx context.Context, clientID string, p protocol.RecomputeParams) error {
	return ErrNotImplemented
}

// Interrupt answers executionContext/interrupt.
func (e *Engine) Interrupt(ctx context.Context, clientID string, id protocol.ContextID) error {
	return ErrNotImplemented
}

// AttachVisualization answers executionContext/attachVisualization.
func (e *Engine) AttachVisualization(ctx context.Context, clientID string, p protocol.AttachVisualizationParams) error {
	return ErrNotImplemented
}

// ModifyVisualization answers executionContext/modifyVisualization.
func (e *Engine) ModifyVisualization(ctx context.Context, clientID string, p protocol.ModifyVisualizationParams) error {
	return ErrNotImplemented
}

// DetachVisualization answers executionContext/detachVisualization.
func (e *Engine) DetachVisualization(ctx context.Context, clientID string, p protocol.DetachVisualizationParams) error {
	return ErrNotImplemented
}

// ExecuteExpression answers executionContext/executeExpression.
func (e *Engine) ExecuteExpression(ctx context.Context, clientID string, p protocol.ExecuteExpressionParams) error {
	return ErrNotImplemented
}

// ProtocolError maps an error returned by the engine to the client
// protocol's error (code and message naming the thing at fault). Errors it
// does not know become -32603 internal errors.
func ProtocolError(err error) *protocol.Error {
	return protocol.InternalError(err)
}

// Engine is ripple's execution engine. Create it with New, then Start it;
// Stop shuts it down (running jobs cancelled, kernels stopped).
type Engine struct{}

// New returns an engine for cfg.Root.
func New(cfg Config) (*Engine, error) { return &Engine{}, ErrNotImplemented }

// Start starts the kernels, the queue and, if configured, the watcher.
func (e *Engine) Start(ctx context.Context) error { return ErrNotImplemented }

// Stop cancels running jobs, stops the kernels and the watcher and waits.
func (e *Engine) Stop(ctx context.Context) error { return ErrNotImplemented }
