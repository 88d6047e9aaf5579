package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

const testToken = "s3cret-token"

// bundle is what setup returns: a started server on a fake engine.
type bundle struct {
	srv *Server
	eng *servertest.Engine
	url string // ws://127.0.0.1:PORT/ws?token=...
}

// setup starts a server on a fake engine with cfg (Token defaults to
// testToken) and stops it when the test ends.
func setup(t *testing.T, cfg Config, eng *servertest.Engine) *bundle {
	t.Helper()
	if eng == nil {
		eng = servertest.New()
	}
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	srv, err := New(eng, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return &bundle{srv: srv, eng: eng, url: srv.URL()}
}

// testCtx is a context for one step of a test: generous, because machines
// are shared; a deadline only turns a hang into a failure.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dial connects without initialising.
func (b *bundle) dial(t *testing.T) *servertest.Client {
	t.Helper()
	c, _, err := servertest.Dial(testCtx(t), b.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// connect dials and initialises as clientID.
func (b *bundle) connect(t *testing.T, clientID string) *servertest.Client {
	t.Helper()
	c := b.dial(t)
	var res protocol.InitProtocolConnectionResult
	if err := c.Call(testCtx(t), protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: clientID}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Version != protocol.Version {
		t.Fatalf("init: version %q, want %q", res.Version, protocol.Version)
	}
	return c
}

// httpURL is the server's base URL for plain HTTP requests.
func (b *bundle) httpURL() string {
	return "http://" + b.srv.Addr().String()
}

// wsURLWithoutToken is the WebSocket URL with no token.
func (b *bundle) wsURLWithoutToken() string {
	return "ws://" + b.srv.Addr().String() + "/ws"
}

// wantCode checks that err is a protocol error with code.
func wantCode(t *testing.T, err error, code protocol.Code, mentions ...string) {
	t.Helper()
	pe, ok := err.(*protocol.Error)
	if !ok {
		t.Fatalf("got error %v (%T), want a protocol error %d", err, err, code)
	}
	if pe.Code != code {
		t.Fatalf("got error %d %q, want code %d", pe.Code, pe.Message, code)
	}
	for _, m := range mentions {
		if !strings.Contains(pe.Message, m) {
			t.Fatalf("error message %q does not mention %q", pe.Message, m)
		}
	}
}

// nextEvent waits for the fake engine's next connect/disconnect.
func nextEvent(t *testing.T, eng *servertest.Engine) servertest.Event {
	t.Helper()
	select {
	case ev := <-eng.Events():
		return ev
	case <-testCtx(t).Done():
		t.Fatal("no connect/disconnect event")
		return servertest.Event{}
	}
}

// openConns returns the server's open connections.
func (s *Server) openConns() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

var _ http.Handler = (*Server)(nil)
