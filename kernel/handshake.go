package kernel

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"sync"
	"time"
)

// acceptor is the listening side of the handshake (kernel/PROTOCOL.md,
// "Process and connection"): it listens on 127.0.0.1, checks the token of
// each connection on its own goroutine, keeps the first good one and then
// stops listening. Any local user can connect, so a bad or silent
// connection must neither be kept nor delay the real kernel.
type acceptor struct {
	ln      net.Listener
	token   []byte
	timeout time.Duration // per connection: how long to wait for its auth frame

	good chan authed // capacity 1: the first authenticated connection

	mu      sync.Mutex
	closed  bool                  // guarded by mu
	pending map[net.Conn]struct{} // guarded by mu: connections being checked

	wg sync.WaitGroup // the accept loop and every check goroutine
}

// authed is a connection that proved the token, with the reader that
// already buffered whatever followed the auth frame.
type authed struct {
	conn net.Conn
	fr   *frameReader
}

func listen(token []byte, timeout time.Duration) (*acceptor, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("kernel: listen on 127.0.0.1: %w", err)
	}
	a := &acceptor{
		ln:      ln,
		token:   token,
		timeout: timeout,
		good:    make(chan authed, 1),
		pending: make(map[net.Conn]struct{}),
	}
	a.wg.Add(1)
	go a.acceptLoop()
	return a, nil
}

func (a *acceptor) port() int { return a.ln.Addr().(*net.TCPAddr).Port }

func (a *acceptor) acceptLoop() {
	defer a.wg.Done()
	for {
		conn, err := a.ln.Accept()
		if err != nil {
			return // listener closed
		}
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			conn.Close()
			return
		}
		a.pending[conn] = struct{}{}
		a.wg.Add(1)
		a.mu.Unlock()
		go a.check(conn)
	}
}

// check reads the first frame of conn and keeps conn only if it is the
// auth frame with the right token.
func (a *acceptor) check(conn net.Conn) {
	defer a.wg.Done()
	keep := false
	defer func() {
		a.mu.Lock()
		delete(a.pending, conn)
		a.mu.Unlock()
		if !keep {
			conn.Close()
		}
	}()
	conn.SetReadDeadline(time.Now().Add(a.timeout))
	fr := newFrameReader(conn)
	fr.limit = len(a.token) // a stranger cannot make us read more
	f, err := fr.next()
	fr.limit = maxPayload
	if err != nil || f.kind != kindAuth || f.id != 0 ||
		subtle.ConstantTimeCompare(f.payload, a.token) != 1 {
		return
	}
	conn.SetReadDeadline(time.Time{})
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true) // Go's default, stated: small frames must not wait
	}
	// Out of pending before it is handed over: close must not touch a
	// connection that wait may already have returned.
	a.mu.Lock()
	delete(a.pending, conn)
	a.mu.Unlock()
	select {
	case a.good <- authed{conn, fr}:
		keep = true
	default: // a kernel already authenticated: the token is single use
	}
}

// wait returns the first authenticated connection. It gives up when ctx
// ends or when died is closed (the kernel process exited).
func (a *acceptor) wait(ctx context.Context, died <-chan struct{}) (authed, error) {
	select {
	case c := <-a.good:
		return c, nil
	case <-ctx.Done():
		return authed{}, context.Cause(ctx)
	case <-died:
		return authed{}, errDiedDuringStart
	}
}

// close stops listening, drops every connection still being checked and
// waits for the acceptor's goroutines. A connection already handed out by
// wait is not touched; one that authenticated but was never taken is closed.
func (a *acceptor) close() {
	a.mu.Lock()
	a.closed = true
	for c := range a.pending {
		c.Close()
	}
	a.mu.Unlock()
	a.ln.Close()
	a.wg.Wait()
	select {
	case c := <-a.good:
		c.conn.Close()
	default:
	}
}
