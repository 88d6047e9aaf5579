package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/protocol"
)

// Close codes the server sends besides the standard ones gorilla/websocket
// names.
const (
	// CloseTakenOver: another connection initialised the same client id.
	CloseTakenOver = 4001
)

// conn is one WebSocket connection. It runs three goroutines:
//
//   - the reader reads messages (gorilla allows one reader) and hands them
//     to the dispatcher over inbound; it also processes pongs and close
//     frames, which is why it is not the dispatcher: a long call must not
//     stop the connection from noticing its client is gone.
//   - the dispatcher handles the messages one at a time, in order, through
//     the session, and queues each reply in the outbox; a frame asking for
//     a slow method (restartKernel) runs on a goroutine of its own, so the
//     requests behind it are answered meanwhile (see session).
//   - the writer owns every data write (gorilla allows one writer): it
//     drains the outbox, sends pings, and enforces the slow-client rule.
//
// Ownership: the conn owns its goroutines and the network connection; run
// returns after all three have exited, the network connection is closed,
// the engine has been told (Disconnect) and the server has forgotten it.
//
// Closing. Every way a connection ends goes through one of two doors:
//   - shutdown(code, reason, cause), for ends decided above the connection
//     (the server stops, the client id was taken over): the context is
//     cancelled with cause, the dispatcher finishes the call in progress
//     and queues its reply, the writer sends what is queued, then the close
//     frame.
//   - abort(code, reason), for ends forced by the connection itself (the
//     client closed, a read or write failed, the client was too slow): the
//     writer sends the close frame (if code is not 0) without flushing.
//
// After the close frame the writer waits up to CloseGrace for the client's
// close reply (the reader sees it) before closing the network connection, so
// the client reads the close code instead of a reset.
type conn struct {
	// Set by newConn and never changed.
	srv *Server
	// ws: the reader goroutine does every read (and readFailed its
	// draining), the writer every data write and ping (gorilla allows one
	// of each at a time); run closes it once all goroutines have exited.
	ws  *websocket.Conn
	out *outbox // safe from any goroutine (its own lock)
	ses *session
	log *slog.Logger

	// ctx is the connection's own context, the parent of every call's
	// context: cancelled (with a cause) when the connection starts closing.
	// Set by newConn; cancel is safe from any goroutine and only the first
	// cause counts.
	ctx    context.Context
	cancel context.CancelCauseFunc

	inbound    chan []byte   // reader -> dispatcher; closed by the reader when it exits
	readerDone chan struct{} // closed when the reader exits

	closeOnce sync.Once
	closing   chan struct{} // closed by abort or by the dispatcher after shutdown
	// Written before closing is closed, read by the writer after: the close
	// frame to send and whether to flush the queue first.
	closeCode  int
	closeText  string
	closeFlush bool

	shutdownMu   sync.Mutex
	shutdownCode int    // guarded by shutdownMu: the close frame after a shutdown
	shutdownText string // guarded by shutdownMu
}

func newConn(srv *Server, ws *websocket.Conn) *conn {
	c := &conn{
		srv:        srv,
		ws:         ws,
		out:        newOutbox(srv.cfg.OutboundLimit),
		log:        srv.log.With("remote", ws.RemoteAddr().String()),
		inbound:    make(chan []byte, 4),
		readerDone: make(chan struct{}),
		closing:    make(chan struct{}),
	}
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	c.ses = &session{
		api:      srv.api,
		registry: srv.registry,
		client:   c,
		log:      c.log,
		takeover: func() { c.shutdown(CloseTakenOver, "client id taken over by a new connection", ErrTakenOver) },
	}
	return c
}

// Notify queues a notification for the client; it never blocks (see
// outbox for what happens to a client that does not keep up).
func (c *conn) Notify(method string, params any) {
	if err := c.out.notify(method, params); err != nil {
		c.log.Error("dropping a notification that cannot be encoded", "method", method, "err", err)
	}
}

// run serves the connection until it ends; see conn.
func (c *conn) run() {
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); c.readLoop() }()
	go func() { defer wg.Done(); c.writeLoop() }()
	go func() { defer wg.Done(); c.dispatchLoop() }()
	go func() { defer wg.Done(); c.slowWatch() }()
	wg.Wait()
	c.ws.Close()
	c.out.close()
	c.cancel(ErrConnectionClosed)
	c.ses.end()
	c.log.Debug("connection closed", "client", c.ses.ID(), "code", c.closeCode, "dropped_output_bytes", c.out.snapshotStats().droppedOutputBytes)
}

// shutdown ends the connection after the call in progress, see conn.
func (c *conn) shutdown(code int, text string, cause error) {
	c.shutdownMu.Lock()
	if c.shutdownCode == 0 {
		c.shutdownCode, c.shutdownText = code, text
	}
	c.shutdownMu.Unlock()
	c.cancel(cause)
}

// abort ends the connection now, see conn. code 0 sends no close frame.
func (c *conn) abort(code int, text string, cause error) {
	c.close(code, text, false)
	c.cancel(cause)
}

func (c *conn) close(code int, text string, flush bool) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeText, c.closeFlush = code, text, flush
		close(c.closing)
	})
}

// readLoop reads messages until the connection fails or closes.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	defer close(c.inbound)
	liveness := 2 * c.srv.cfg.PingInterval
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(liveness))
	})
	for {
		// The deadline is set before each read, not once per pong: while
		// the dispatcher is busy the reader may not read for a long time,
		// and that must not count against the client.
		_ = c.ws.SetReadDeadline(time.Now().Add(liveness))
		typ, r, err := c.ws.NextReader()
		if err != nil {
			c.readFailed(err)
			return
		}
		if typ != websocket.TextMessage {
			c.abort(websocket.CloseUnsupportedData, "ripple speaks JSON-RPC in text messages", ErrConnectionClosed)
			return
		}
		data, err := io.ReadAll(r)
		if err != nil {
			c.readFailed(err)
			return
		}
		select {
		case c.inbound <- data:
		case <-c.closing:
			return
		}
	}
}

// readFailed ends the connection after a failed read.
func (c *conn) readFailed(err error) {
	switch {
	case errors.Is(err, websocket.ErrReadLimit):
		// gorilla has sent close 1009. The client may still be sending the
		// rest of its message: read and discard it for a while, because
		// closing a socket with unread input resets the connection, and the
		// client would get the reset instead of the close code.
		c.log.Warn("message over the read limit", "client", c.ses.ID(), "limit", c.srv.cfg.ReadLimit)
		c.abort(0, "", ErrConnectionClosed)
		nc := c.ws.UnderlyingConn()
		_ = nc.SetReadDeadline(time.Now().Add(c.srv.cfg.CloseGrace))
		_, _ = io.Copy(io.Discard, nc)
	default:
		var ce *websocket.CloseError
		if !errors.As(err, &ce) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			select {
			case <-c.closing: // we closed it
			default:
				c.log.Debug("read failed", "client", c.ses.ID(), "err", err)
			}
		}
		// gorilla has answered a client's close frame itself.
		c.abort(0, "", ErrConnectionClosed)
	}
}

// maxAsyncCalls bounds the asynchronous calls (see session) one connection
// may have in flight; the dispatcher waits for one to end before it starts
// another, which pushes back on the client through TCP.
const maxAsyncCalls = 16

// dispatchLoop handles messages in order until the connection closes. A
// frame asking for a slow method runs on a goroutine of its own (see
// session), which queues its reply when done; the dispatcher does not wait
// for it, but does wait for every such goroutine before it returns, so the
// connection's end comes after their replies are queued.
func (c *conn) dispatchLoop() {
	var async sync.WaitGroup
	sem := make(chan struct{}, maxAsyncCalls)
	defer func() {
		async.Wait()
		// A shutdown closes the connection once the calls in progress have
		// been answered (their replies are queued by now).
		c.shutdownMu.Lock()
		code, text := c.shutdownCode, c.shutdownText
		c.shutdownMu.Unlock()
		c.close(code, text, true)
	}()
	for {
		select {
		case data, ok := <-c.inbound:
			if !ok {
				return
			}
			if c.ctx.Err() != nil {
				return
			}
			frame := protocol.Decode(data)
			if isAsync(frame) {
				select {
				case sem <- struct{}{}:
				case <-c.ctx.Done():
					return
				}
				async.Add(1)
				go func() {
					defer async.Done()
					defer func() { <-sem }()
					// Each call has its own context (session.call); its
					// reply is written even when that context was
					// cancelled by the connection's end.
					c.out.reply(c.ses.handleDecoded(c.ctx, frame))
				}()
				continue
			}
			// Notifications wait for the reply, all of them: PROTOCOL.md
			// 8.6 puts a text/applyEdit's reply before any didChange
			// built on the edit and any expressionUpdates of its run, so
			// the call gets no early release.
			c.out.hold()
			reply := c.ses.handleDecoded(c.ctx, frame)
			c.out.release(reply)
			// Backpressure: a client that does not read its replies is not
			// served more until it does.
			if c.out.waitReplies(c.ctx) != nil {
				return
			}
		case <-c.ctx.Done():
			return
		}
	}
}

// writeLoop writes queued messages and pings until the connection closes.
func (c *conn) writeLoop() {
	cfg := &c.srv.cfg
	ping := time.NewTicker(cfg.PingInterval)
	defer ping.Stop()
	var spare []outMessage
	for {
		select {
		case <-c.closing:
			c.finish(nil)
			return
		case <-c.out.wake:
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(cfg.WriteTimeout)); err != nil {
				c.abort(0, "", ErrConnectionClosed)
			}
			continue
		}
		c.tooSlow()
		batch := c.out.take(spare)
		for i := range batch {
			if c.isClosing() {
				c.finish(batch[i:])
				return
			}
			// write and tooSlow abort the connection on failure; the
			// check above then ends the loop.
			if c.write(batch[i]) {
				c.tooSlow()
			}
		}
		clear(batch)
		spare = batch[:0]
	}
}

func (c *conn) isClosing() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

// closeReserve is the room kept free in the socket's send queue for the
// close frame (at most 2 + 4 + 125 bytes; the rest is slack for Linux's
// accounting), so a client that stops reading still gets its close code
// when it reads again (1013 for a slow client).
const closeReserve = 16 << 10

// roomPoll is how often a writer held back by a full send queue looks
// again.
const roomPoll = 5 * time.Millisecond

// waitRoom holds a write of n bytes back while the socket's send queue
// cannot take it and still keep closeReserve free: a writer blocked in a
// write could not send the close frame when the connection is cut. A
// message larger than the queue goes out once the queue is empty (the
// client is reading then). It returns false when the connection closes
// meanwhile. Where the queue cannot be read (not Linux), it does not wait.
func (c *conn) waitRoom(n int) bool {
	nc := c.ws.UnderlyingConn()
	var t *time.Timer
	for {
		queued, room, ok := sendQueue(nc)
		if !ok || queued == 0 || queued+n+closeReserve <= room {
			return true
		}
		if t == nil {
			t = time.NewTimer(roomPoll)
			defer t.Stop()
		} else {
			t.Reset(roomPoll)
		}
		select {
		case <-c.closing:
			return false
		case <-t.C:
		}
	}
}

// write sends one message; false when the connection failed.
func (c *conn) write(m outMessage) bool {
	if !c.waitRoom(len(m.data)) && !c.closeFlush {
		// Cut while held back; a shutdown (closeFlush) still sends it.
		c.out.sent(m)
		m.release()
		return false
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.srv.cfg.WriteTimeout))
	err := c.ws.WriteMessage(websocket.TextMessage, m.data)
	c.out.sent(m)
	m.release()
	if err != nil {
		select {
		case <-c.closing:
		default:
			c.log.Debug("write failed", "client", c.ses.ID(), "err", err)
		}
		c.abort(0, "", ErrConnectionClosed)
		return false
	}
	return true
}

// slowWatch applies the slow-client rule on a clock of its own until the
// connection closes: the writer checks it between writes, but a writer
// blocked in a write to a client that reads nothing checks nothing, and a
// client that starts reading again after the timeout must still be closed
// rather than slip back under the bound.
//
// It wakes at the exact moment a client over the bound runs out of time,
// not up to a quarter of the timeout late as a plain ticker would: while
// the client is not over, it looks every quarter of the timeout, and an
// over state that began since is then still under the timeout.
func (c *conn) slowWatch() {
	timeout := c.srv.cfg.SlowClientTimeout
	t := time.NewTimer(max(timeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-c.closing:
			return
		case <-t.C:
			if c.tooSlow() {
				return
			}
			next := max(timeout/4, 10*time.Millisecond)
			if over := c.out.overFor(time.Now()); over > 0 {
				next = max(timeout-over, time.Millisecond)
			}
			t.Reset(next)
		}
	}
}

// tooSlow applies the slow-client rule: over the outbound bound for longer
// than SlowClientTimeout closes the connection with 1013.
func (c *conn) tooSlow() bool {
	over := c.out.overFor(time.Now())
	if over < c.srv.cfg.SlowClientTimeout {
		return false
	}
	c.log.Warn("disconnecting a slow client", "client", c.ses.ID(), "over_bound_for", over,
		"dropped_output_bytes", c.out.snapshotStats().droppedOutputBytes)
	c.abort(websocket.CloseTryAgainLater, "client too slow", ErrClientTooSlow)
	return true
}

// finish sends the close frame and closes the network connection once the
// client has answered it (or CloseGrace has passed). rest is what the
// writer had taken from the outbox but not written.
func (c *conn) finish(rest []outMessage) {
	cfg := &c.srv.cfg
	if c.closeFlush {
		// A shutdown: send what is queued, replies to the cancelled calls
		// included, within the close grace.
		_ = c.ws.SetWriteDeadline(time.Now().Add(cfg.CloseGrace))
		ok := true
		for _, batch := range [][]outMessage{rest, c.out.take(nil)} {
			for _, m := range batch {
				if ok {
					ok = c.ws.WriteMessage(websocket.TextMessage, m.data) == nil
				}
			}
		}
	}
	if c.closeCode != 0 {
		msg := websocket.FormatCloseMessage(c.closeCode, c.closeText)
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(cfg.CloseGrace))
	}
	// Wait for the reader: it ends on the client's close reply, on the
	// client's close after a read-limit error, or on a failure. Closing
	// before that would reset a connection the client is still reading.
	select {
	case <-c.readerDone:
	case <-time.After(cfg.CloseGrace):
	}
	c.ws.Close()
}
