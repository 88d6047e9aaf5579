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
// frame that asks for a slow method (protocol.HandledAsync: restartKernel,
// which waits for a kernel) is handled on a goroutine of its own, as
// gopls's jsonrpc2 handlers answer asynchronously, so the calls behind it
// are not kept waiting and its reply goes out when it is done, in any
// order. clientID is therefore read through ID by every call.
type session struct {
	// Set by newConn and never changed: safe from any goroutine.
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

// isAsync reports whether a decoded frame asks for a method
// protocol.HandledAsync (see session).
func isAsync(frame protocol.Frame) bool {
	for _, m := range frame.Messages {
		if m.Kind == protocol.KindInvalid {
			continue
		}
		if method, ok := protocol.LookupMethod(m.Method); ok && method.Handling == protocol.HandledAsync {
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
func (s *session) call(ctx context.Context, name string, raw []byte) (result any, err error) {
	method, ok := protocol.LookupMethod(name)
	if !ok {
		return nil, protocol.MethodNotFound(name)
	}
	id := s.ID()
	if id == "" && method.Handling != protocol.HandledBySession {
		return nil, protocol.SessionNotInitialised(name)
	}
	params := method.NewParams()
	if err := protocol.DecodeParams(raw, params); err != nil {
		return nil, err
	}

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			// A bug in a handler must not take the server down with it.
			s.log.Error("panic in handler", "method", name, "panic", p, "stack", string(debug.Stack()))
			result, err = nil, protocol.InternalError(fmt.Errorf("%s: panic: %v", name, p))
		}
		if err != nil {
			err = s.protocolError(callCtx, name, err)
		}
		if s.log.Enabled(ctx, slog.LevelDebug) {
			s.log.Debug("call", "client", id, "method", name, "took", time.Since(start), "err", err)
		}
	}()
	if method.Handling == protocol.HandledBySession {
		return s.initialise(callCtx, params.(*protocol.InitProtocolConnectionParams).ClientID)
	}
	return method.Call(callCtx, s.api, id, params)
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
