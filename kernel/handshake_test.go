package kernel

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// dial connects to the acceptor and sends data (nothing if empty).
func dial(t *testing.T, port int, data string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if data != "" {
		if _, err := io.WriteString(c, data); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// closedByPeer reports whether the peer closed c (a read sees EOF or a reset).
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testDeadline))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

func TestAcceptorKeepsOnlyTheRightToken(t *testing.T) {
	t.Parallel()
	token := "0123456789abcdef"
	// A long per-connection timeout: a bad connection that is closed now
	// was dropped for its content, not by the timeout.
	a, err := listen([]byte(token), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()

	silent := dial(t, a.port(), "")                                   // says nothing
	partial := dial(t, a.port(), "auth 0 16\n0123")                   // token cut short
	wrong := dial(t, a.port(), "auth 0 16\nfedcba9876543210")         // wrong token
	short := dial(t, a.port(), "auth 0 3\n012")                       // wrong length
	notAuth := dial(t, a.port(), "ready 0 16\n0123456789abcdef")      // wrong kind
	garbage := dial(t, a.port(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // not a frame
	huge := dial(t, a.port(), "auth 0 99999999999\n")                 // absurd length
	for name, c := range map[string]net.Conn{"wrong": wrong, "short": short, "not auth": notAuth, "garbage": garbage, "huge": huge} {
		if !closedByPeer(t, c) {
			t.Errorf("%s connection was not dropped", name)
		}
	}

	// The real kernel is accepted while the silent ones still wait.
	good := dial(t, a.port(), "auth 0 16\n"+token+"ready 0 2\n{}")
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	got, err := a.wait(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.conn.RemoteAddr().String() != good.LocalAddr().String() {
		t.Fatalf("accepted %v, want the authenticated %v", got.conn.RemoteAddr(), good.LocalAddr())
	}
	// What followed the auth frame is kept for the reader.
	if f, err := got.fr.next(); err != nil || f.kind != kindReady || string(f.payload) != "{}" {
		t.Errorf("frame after auth: %v %v", f, err)
	}

	a.close()
	for name, c := range map[string]net.Conn{"silent": silent, "partial": partial} {
		if !closedByPeer(t, c) {
			t.Errorf("%s connection outlived the handshake", name)
		}
	}
	// The kept connection is untouched by close.
	if _, err := got.conn.Write([]byte("x")); err != nil {
		t.Errorf("accepted connection was closed: %v", err)
	}
	got.conn.Close()
	// The listener is gone: nobody else can connect.
	if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(a.port())); err == nil {
		c.Close()
		t.Error("listener still accepts after the handshake")
	}
}

func TestStartIgnoresIntruders(t *testing.T) {
	t.Parallel()
	var intruders []net.Conn
	k := startKernel(t, func(c *Config) {
		c.HandshakeTimeout = time.Hour
		c.onListen = func(port int) {
			// Before the kernel process even exists: a silent connection
			// and one with a wrong token.
			intruders = append(intruders, dial(t, port, ""), dial(t, port, "auth 0 64\n"+randomHex(32)))
		}
	})
	evalOK(t, k, "x = 1")
	for i, c := range intruders {
		if !closedByPeer(t, c) {
			t.Errorf("intruder %d still connected after Start", i)
		}
	}
}
