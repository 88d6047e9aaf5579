package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Config configures a Server. Zero values take the defaults named on each
// field.
type Config struct {
	// Addr is where to listen ("" = "127.0.0.1:0", a random free port on
	// the loopback interface).
	Addr string
	// Token is the access token every connection presents (required).
	Token string
	// AllowOrigins are origins accepted besides the server's own
	// ("https://ide.example.com"); browser requests from any other origin
	// are refused with 403.
	AllowOrigins []string
	// Web serves every path but /ws (nil = 404). The built-in web client
	// plugs in here; it does its own authentication.
	Web http.Handler
	// Logger receives structured logs (nil = discard).
	Logger *slog.Logger

	// ReadLimit is the largest message a client may send (0 = 16 MiB); a
	// bigger one closes the connection with 1009.
	ReadLimit int64
	// OutboundLimit bounds the memory queued for one client (0 = 64 MiB);
	// see PROTOCOL.md 1 for what happens beyond it.
	OutboundLimit int
	// SlowClientTimeout is how long a client may stay over OutboundLimit
	// before it is disconnected with 1013 (0 = 30 s).
	SlowClientTimeout time.Duration
	// WriteTimeout is how long one write may block (0 = twice
	// SlowClientTimeout). A client that reads nothing at all cannot be sent
	// a close code: it is dropped when a write times out. One that catches
	// up before that reads its 1013.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; a client that sends
	// nothing, not even a pong, for twice as long is disconnected
	// (0 = 30 s).
	PingInterval time.Duration
	// CloseGrace is how long the server waits for a client to answer its
	// close frame (0 = 2 s).
	CloseGrace time.Duration
}

func (c *Config) setDefaults() {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.ReadLimit == 0 {
		c.ReadLimit = 16 << 20
	}
	if c.OutboundLimit == 0 {
		c.OutboundLimit = 64 << 20
	}
	if c.SlowClientTimeout == 0 {
		c.SlowClientTimeout = 30 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 2 * c.SlowClientTimeout
	}
	if c.PingInterval == 0 {
		c.PingInterval = 30 * time.Second
	}
	if c.CloseGrace == 0 {
		c.CloseGrace = 2 * time.Second
	}
}

// Server serves ripple's client protocol over WebSockets at /ws (and
// Config.Web at every other path). Create it with New, then Start it; Stop
// closes every connection and waits for them.
//
// Each connection is one session: its first call must be
// session/initProtocolConnection (other calls get 6001 until then), its
// calls are handled one at a time in order, each with its own context
// (cancelled when the connection closes or the server stops; the call is
// still answered). Errors from the API go on the wire as they are when they
// are *protocol.Error, else through engine.ProtocolError.
type Server struct {
	// Set by New and never changed: safe from any goroutine.
	api      API
	cfg      Config
	log      *slog.Logger
	token    tokenHash
	allowed  originSet // Config.AllowOrigins, normalised
	upgrader websocket.Upgrader
	registry *registry // its own locks

	mu      sync.Mutex
	state   serverState    // guarded by mu
	ln      net.Listener   // guarded by mu; set by Start
	origins originSet      // guarded by mu; own origins and allowed, set by Start
	httpSrv *http.Server   // guarded by mu
	conns   map[*conn]bool // guarded by mu: open connections
	stopped chan struct{}  // closed once, by the first Stop, when every goroutine is gone
	// wg counts the HTTP server goroutine and every conn.run; Add is only
	// called under mu while running, so Stop (which sets stateStopped under
	// mu first) waits for all of them.
	wg sync.WaitGroup
}

type serverState uint8

const (
	stateNew serverState = iota
	stateRunning
	stateStopped
)

// New returns a server that serves api. It does not listen yet.
func New(api API, cfg Config) (*Server, error) {
	if cfg.Token == "" {
		return nil, ErrNoToken
	}
	cfg.setDefaults()
	allowed := originSet{}
	for _, o := range cfg.AllowOrigins {
		n, ok := normalizeOrigin(o)
		if !ok {
			return nil, fmt.Errorf("server: allowed origin %q is not of the form scheme://host[:port]", o)
		}
		allowed[n] = true
	}
	s := &Server{
		api:      api,
		cfg:      cfg,
		log:      cfg.Logger,
		token:    hashToken(cfg.Token),
		allowed:  allowed,
		registry: newRegistry(api),
		conns:    make(map[*conn]bool),
		stopped:  make(chan struct{}),
	}
	s.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   4096,
		WriteBufferSize:  4096,
		// Idle connections hold no write buffer.
		WriteBufferPool: &sync.Pool{},
		// Origins are checked before the upgrade, with the 403 the
		// protocol wants (gorilla's check would answer 403 too, but
		// without our reason in the logs).
		CheckOrigin: func(*http.Request) bool { return true },
	}
	return s, nil
}

// Start listens on Config.Addr and serves until Stop. ctx is only for the
// start itself.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateNew {
		return ErrStarted
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.origins = ownOrigins(ln.Addr())
	for o := range s.allowed {
		s.origins[o] = true
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.state = stateRunning
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server failed", "err", err)
		}
	}()
	s.log.Info("listening", "addr", ln.Addr().String())
	return nil
}

// Addr returns the address the server listens on (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// URL returns the WebSocket URL clients connect to, token included
// (ws://127.0.0.1:PORT/ws?token=TOKEN); "" before Start.
func (s *Server) URL() string {
	addr, ok := s.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	u := url.URL{
		Scheme:   "ws",
		Host:     net.JoinHostPort(host, fmt.Sprint(addr.Port)),
		Path:     "/ws",
		RawQuery: url.Values{"token": {s.cfg.Token}}.Encode(),
	}
	return u.String()
}

// Stop stops listening, closes every connection (close code 1001 after the
// call in progress is answered) and waits until they are all gone and the
// engine has been told of each disconnect, or ctx is done. It is idempotent:
// a second call waits too.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	first := s.state != stateStopped
	prev := s.state
	s.state = stateStopped
	httpSrv := s.httpSrv
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	if first {
		for _, c := range conns {
			c.shutdown(websocket.CloseGoingAway, "server shutting down", ErrShuttingDown)
		}
		if prev == stateRunning {
			// Stops accepting; active requests of Config.Web get until ctx
			// is done, then are closed.
			if err := httpSrv.Shutdown(ctx); err != nil {
				httpSrv.Close()
			}
		}
		go func() {
			s.wg.Wait()
			close(s.stopped)
		}()
	}
	select {
	case <-s.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server: stop: %w", context.Cause(ctx))
	}
}

// ServeHTTP serves /ws (the client protocol) and hands every other path to
// Config.Web.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == OriginCheckPath && r.Method == http.MethodPost {
		s.serveOriginCheck(w, r)
		return
	}
	if r.URL.Path != "/ws" {
		if s.cfg.Web != nil {
			s.cfg.Web.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
		return
	}
	s.serveWebSocket(w, r)
}

// serveOriginCheck answers OriginCheckPath (no token needed: it only says
// whether the request's own origin would be let in).
func (s *Server) serveOriginCheck(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	origins := s.origins
	s.mu.Unlock()
	origin := r.Header.Get("Origin")
	res := struct {
		Allowed bool   `json:"allowed"`
		Origin  string `json:"origin"`
		Message string `json:"message,omitempty"`
	}{Allowed: origins.allows(r), Origin: origin}
	if !res.Allowed {
		res.Message = fmt.Sprintf("ripple refuses WebSocket connections from pages at %s: open the page at the address ripple printed, "+
			"or start ripple serve with --allow-origin %s", origin, origin)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(res)
}

func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	log := s.log.With("remote", r.RemoteAddr)
	s.mu.Lock()
	running, origins := s.state == stateRunning, s.origins
	s.mu.Unlock()
	if !running {
		http.Error(w, "ripple: server not running", http.StatusServiceUnavailable)
		return
	}
	// The origin first: a page of a foreign site gets no answer about the
	// token it guessed.
	if !origins.allows(r) {
		log.Warn("refused a foreign origin", "origin", r.Header.Get("Origin"))
		http.Error(w, "ripple: origin not allowed", http.StatusForbidden)
		return
	}
	token, ok := presentedToken(r)
	if !ok || !s.token.matches(token) {
		log.Warn("refused a connection without a valid token", "token_present", ok)
		w.Header().Set("WWW-Authenticate", `Bearer realm="ripple"`)
		http.Error(w, "ripple: missing or wrong token", http.StatusUnauthorized)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		log.Debug("websocket upgrade failed", "err", err) // gorilla has answered
		return
	}
	ws.SetReadLimit(s.cfg.ReadLimit)
	c := newConn(s, ws)

	s.mu.Lock()
	if s.state != stateRunning {
		s.mu.Unlock()
		_ = ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"),
			time.Now().Add(s.cfg.CloseGrace))
		ws.Close()
		return
	}
	s.conns[c] = true
	s.wg.Add(1)
	s.mu.Unlock()

	log.Debug("connection opened")
	go func() {
		defer s.wg.Done()
		c.run()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}
