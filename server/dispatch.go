package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// session is one connection's protocol state: whether it is initialised and
// as which client, and the translation of each JSON-RPC call into an API
// call. It knows nothing of WebSockets, so tests and the fuzzer drive it
// with handleFrame directly.
//
// Concurrency: the connection's dispatcher calls handleFrame for one frame
// at a time, in order, because edits and their versions depend on it; a
// frame that asks for a slow method (isAsync: restartKernel, which waits for
// a kernel) is handled on a goroutine of its own, as gopls's jsonrpc2
// handlers answer asynchronously, so the calls behind it are not kept
// waiting and its reply goes out when it is done, in any order. clientID is
// therefore read through ID by every call.
type session struct {
	api      API
	registry *registry
	client   engine.Client // receives this session's notifications
	log      *slog.Logger
	// takeover is called (from another connection's goroutine) when a new
	// connection initialises the same client id; it must close this one.
	takeover func()

	// clientID is "" until session/initProtocolConnection succeeds. Only
	// the dispatcher goroutine writes it (under idMu, in initialise, never
	// asynchronous); every other read goes through ID.
	idMu     sync.Mutex
	clientID string
}

// ID returns the session's client id ("" before initialisation); safe from
// any goroutine.
func (s *session) ID() string {
	s.idMu.Lock()
	defer s.idMu.Unlock()
	return s.clientID
}

// handleFrame handles one incoming WebSocket text message and returns the
// reply to send: nil for a notification or a batch of notifications.
// Each call runs with its own context derived from ctx; when ctx is
// cancelled the call is still answered (with the error its method returned).
func (s *session) handleFrame(ctx context.Context, data []byte) []byte {
	return s.handleDecoded(ctx, protocol.Decode(data))
}

// asyncMethods are the methods that may take long because they wait for a
// kernel: a frame holding one is answered asynchronously (see session).
var asyncMethods = map[string]bool{
	protocol.MethodRestartKernel: true,
}

// isAsync reports whether a decoded frame asks for a slow method.
func isAsync(frame protocol.Frame) bool {
	for _, m := range frame.Messages {
		if m.Kind != protocol.KindInvalid && asyncMethods[m.Method] {
			return true
		}
	}
	return false
}

// handleDecoded is handleFrame for a decoded frame.
func (s *session) handleDecoded(ctx context.Context, frame protocol.Frame) []byte {
	var replies [][]byte
	for _, m := range frame.Messages {
		switch m.Kind {
		case protocol.KindInvalid:
			replies = append(replies, protocol.AppendError(nil, m.ID, m.Err))
		case protocol.KindRequest:
			result, err := s.call(ctx, m.Method, m.Params)
			replies = append(replies, protocol.AppendResponse(nil, m.ID, result, err))
		case protocol.KindNotification:
			// JSON-RPC: a notification is executed but never answered.
			if _, err := s.call(ctx, m.Method, m.Params); err != nil && s.log.Enabled(ctx, slog.LevelDebug) {
				s.log.Debug("notification failed", "method", m.Method, "err", err)
			}
		}
	}
	return protocol.JoinReplies(frame.Batch, replies)
}

// call runs one method and returns its result or a *protocol.Error.
func (s *session) call(ctx context.Context, method string, raw []byte) (result any, err error) {
	params, ok := protocol.NewParams(method)
	if !ok {
		return nil, protocol.MethodNotFound(method)
	}
	id := s.ID()
	if id == "" && method != protocol.MethodInitProtocolConnection {
		return nil, protocol.SessionNotInitialised(method)
	}
	if err := protocol.DecodeParams(raw, params); err != nil {
		return nil, err
	}

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			// A bug in a handler must not take the server down with it.
			s.log.Error("panic in handler", "method", method, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, protocol.InternalError(fmt.Errorf("%s: panic: %v", method, p))
		}
		if err != nil {
			err = s.protocolError(callCtx, method, err)
		}
		if s.log.Enabled(ctx, slog.LevelDebug) {
			s.log.Debug("call", "client", id, "method", method, "took", time.Since(start), "err", err)
		}
	}()
	return s.dispatch(callCtx, id, method, params)
}

// protocolError maps an error from a call to what goes on the wire: a
// *protocol.Error as it is, a call cut short by the connection closing or
// the server stopping as an internal error naming why, anything else
// through engine.ProtocolError.
func (s *session) protocolError(ctx context.Context, method string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return protocol.Errorf(protocol.CodeInternalError, "%s cancelled: %w", method, context.Cause(ctx))
	}
	return engine.ProtocolError(err)
}

// dispatch calls the API method of a decoded call.
func (s *session) dispatch(ctx context.Context, id, method string, params protocol.Params) (any, error) {
	switch method {
	case protocol.MethodInitProtocolConnection:
		return s.initialise(ctx, params.(*protocol.InitProtocolConnectionParams).ClientID)
	case protocol.MethodRuntimeStatus:
		return s.api.Status(ctx)
	case protocol.MethodRestartKernel:
		return nil, s.api.RestartKernel(ctx, id, params.(*protocol.RestartKernelParams).ContextID)

	case protocol.MethodFileRead:
		return s.api.ReadFile(ctx, id, params.(*protocol.FileReadParams).Path)
	case protocol.MethodFileWrite:
		return nil, s.api.WriteFile(ctx, id, *params.(*protocol.FileWriteParams))
	case protocol.MethodFileList:
		return s.api.ListFiles(ctx, id, params.(*protocol.FileListParams).Path)
	case protocol.MethodFileDelete:
		return nil, s.api.DeleteFile(ctx, id, params.(*protocol.FileDeleteParams).Path)

	case protocol.MethodTextOpenFile:
		return s.api.OpenFile(ctx, id, params.(*protocol.OpenFileParams).Path)
	case protocol.MethodTextApplyEdit:
		return nil, s.api.ApplyEdit(ctx, id, *params.(*protocol.ApplyEditParams))
	case protocol.MethodTextSave:
		return nil, s.api.SaveFile(ctx, id, *params.(*protocol.SaveParams))
	case protocol.MethodTextCloseFile:
		return nil, s.api.CloseFile(ctx, id, params.(*protocol.CloseFileParams).Path)

	case protocol.MethodCreateContext:
		return s.api.CreateContext(ctx, id, *params.(*protocol.CreateContextParams))
	case protocol.MethodDestroyContext:
		return nil, s.api.DestroyContext(ctx, id, params.(*protocol.DestroyContextParams).ContextID)
	case protocol.MethodPush:
		return nil, s.api.Push(ctx, id, *params.(*protocol.PushParams))
	case protocol.MethodPop:
		return nil, s.api.Pop(ctx, id, params.(*protocol.PopParams).ContextID)
	case protocol.MethodRecompute:
		return nil, s.api.Recompute(ctx, id, *params.(*protocol.RecomputeParams))
	case protocol.MethodInterrupt:
		return nil, s.api.Interrupt(ctx, id, params.(*protocol.InterruptParams).ContextID)
	case protocol.MethodAttachVisualization:
		return nil, s.api.AttachVisualization(ctx, id, *params.(*protocol.AttachVisualizationParams))
	case protocol.MethodModifyVisualization:
		return nil, s.api.ModifyVisualization(ctx, id, *params.(*protocol.ModifyVisualizationParams))
	case protocol.MethodDetachVisualization:
		return nil, s.api.DetachVisualization(ctx, id, *params.(*protocol.DetachVisualizationParams))
	case protocol.MethodExecuteExpression:
		return nil, s.api.ExecuteExpression(ctx, id, *params.(*protocol.ExecuteExpressionParams))
	}
	// NewParams knows the method but this switch does not: a bug.
	return nil, protocol.InternalError(fmt.Errorf("method %q has no handler", method))
}

// initialise answers session/initProtocolConnection. A session initialises
// once; a second call is refused (the client id of a connection never
// changes, so its notifications and Disconnect stay consistent).
func (s *session) initialise(ctx context.Context, clientID string) (any, error) {
	if id := s.ID(); id != "" {
		return nil, protocol.Errorf(protocol.CodeInvalidRequest,
			"session already initialised as client %q", id)
	}
	res, err := s.registry.connect(ctx, s, clientID)
	if err != nil {
		return nil, err
	}
	s.idMu.Lock()
	s.clientID = clientID
	s.idMu.Unlock()
	return res, nil
}

// end disconnects the session's client from the engine, unless another
// connection has taken its client id over. Called once, when the
// connection is gone.
func (s *session) end() {
	if id := s.ID(); id != "" {
		s.registry.disconnect(s, id)
	}
}
