package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Sentinel errors. Replies carry them as JSON-RPC errors whose message
// names the thing at fault.
var (
	// ErrNotInitialized: a request before initialize.
	ErrNotInitialized = errors.New("server not initialized")
	// ErrOutsideRoot: a document that is not a file below the project root.
	ErrOutsideRoot = errors.New("document outside the project root")
	// ErrNotOpen: a change, save or close of a document that is not open.
	ErrNotOpen = errors.New("document not open")
	// ErrUnknownCommand: workspace/executeCommand with a command ripple
	// does not offer.
	ErrUnknownCommand = errors.New("unknown command")
	// ErrCommandArguments: a command's arguments are missing or malformed.
	ErrCommandArguments = errors.New("bad command arguments")
	// ErrUnknownContext: a command names a context this session does not
	// show.
	ErrUnknownContext = errors.New("unknown execution context")
	// ErrInitializationOptions: initialize's initializationOptions has a
	// ripple setting ripple cannot use.
	ErrInitializationOptions = errors.New("bad initializationOptions")
	// ErrExitWithoutShutdown: the client sent exit before shutdown (LSP:
	// the server exits with status 1).
	ErrExitWithoutShutdown = errors.New("exit without shutdown")

	errPosition = errors.New("invalid position")
)

// DefaultClientID is the engine client id of an LSP session.
const DefaultClientID = "ripple-lsp"

// Config configures Serve.
type Config struct {
	// Logger receives the server's own logs (nil = discard). Never stdout:
	// that is the protocol.
	Logger *slog.Logger
	// ClientID is the session's engine client id ("" = DefaultClientID).
	ClientID string
	// Entries are the functions run when the project opens, as
	// module:qualname (nil = main:main when main.py defines main, else
	// main:__main__ when main.py exists).
	Entries []string
	// Version is reported as the server's version at initialize.
	Version string
}

// DefaultRunDelay is how long the editor's changes must pause before the
// edited buffers run (initializationOptions ripple.runDelayMs changes it):
// long enough that a half-typed name is not run at each key, short
// enough to feel live.
const DefaultRunDelay = 250 * time.Millisecond

// maxRunDelay bounds ripple.runDelayMs: past a minute, typing would look
// as if it ran nothing.
const maxRunDelay = time.Minute

// runDelayOption reads ripple.runDelayMs from initializationOptions
// (absent: DefaultRunDelay; 0: run at each change). Other keys, ripple's
// or not, are left to whoever defines them.
func runDelayOption(raw lsproto.LSPAny) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return DefaultRunDelay, nil
	}
	var opts struct {
		Ripple *struct {
			RunDelayMs *json.RawMessage `json:"runDelayMs"`
		} `json:"ripple"`
	}
	if err := json.Unmarshal(raw, &opts); err != nil {
		return 0, fmt.Errorf("%w: initializationOptions: want an object like {\"ripple\": {\"runDelayMs\": 250}}: %v", ErrInitializationOptions, err)
	}
	if opts.Ripple == nil || opts.Ripple.RunDelayMs == nil || string(*opts.Ripple.RunDelayMs) == "null" {
		return DefaultRunDelay, nil
	}
	var ms int64
	if err := json.Unmarshal(*opts.Ripple.RunDelayMs, &ms); err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > maxRunDelay {
		return 0, fmt.Errorf("%w: initializationOptions.ripple.runDelayMs: want a whole number of milliseconds from 0 to %d, got %s",
			ErrInitializationOptions, maxRunDelay.Milliseconds(), *opts.Ripple.RunDelayMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Serve speaks LSP on rwc (Content-Length framing) with eng as the engine
// until the client sends exit, rwc ends, or ctx is cancelled. It returns
// nil after shutdown+exit or the end of input, ErrExitWithoutShutdown when
// exit came first. The contexts it created are destroyed and its buffers
// closed before it returns; eng keeps running (its owner stops it).
//
// The project is eng's root: files outside it get a window/showMessage
// saying why they have no values. ServeProject lets the editor choose it.
func Serve(ctx context.Context, eng *engine.Engine, rwc io.ReadWriteCloser, cfg Config) error {
	return serve(ctx, newSession(eng, cfg), rwc)
}

// Opener starts the engine of the project at root (absolute) and returns
// it with what stops it.
type Opener func(ctx context.Context, root string) (*engine.Engine, func(), error)

// ServeProject is Serve on the project the editor names at initialize:
// its first workspace folder, else its rootUri (rootPath), else fallback.
// open starts that project's engine, which ServeProject stops before it
// returns. Files outside the project get a window/showMessage saying why
// they have no values.
func ServeProject(ctx context.Context, open Opener, fallback string, rwc io.ReadWriteCloser, cfg Config) error {
	s := newSession(nil, cfg)
	s.open, s.root = open, fallback
	return serve(ctx, s, rwc)
}

// serve runs the session s on rwc (see Serve).
func serve(ctx context.Context, s *session, rwc io.ReadWriteCloser) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Not lsproto.NewServer: it releases every message to run concurrently
	// (jsonrpc2.AsyncHandler), so a didChange could overtake the one before
	// it, or an inlayHint request the didChange it follows. LSP orders
	// them; so does ripple: every message is handled on the read
	// goroutine, in wire order (the handlers never wait for the client).
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(rwc), jsonrpc2.WithCodec(codec{}))
	s.client = lsproto.ClientDispatcher(conn)
	s.start(ctx)
	hctx := lsproto.WithClient(ctx, s.client)
	handle := lsproto.ServerHandler(s, jsonrpc2.MethodNotFoundHandler)
	conn.Go(hctx, func(rctx context.Context, req *jsonrpc2.Request) (any, error) {
		switch req.Method() {
		case lsproto.MethodCancelRequest:
			s.cancelRequest(req.Params())
			return nil, nil
		case lsproto.MethodTextDocumentInlayHint:
			// It may wait for a run (wait.go), until $/cancelRequest.
			return s.inlayHintRequest(rctx, hctx, req)
		}
		// The handlers get the connection's context, not the request's:
		// the library recycles a synchronous request (and its context)
		// as soon as the handler returns, and a context derived from it
		// would outlive it. Such a request ends when its handler does, so
		// $/cancelRequest has nothing to cancel.
		return handle(hctx, req)
	})

	var err error
	select {
	case <-conn.Done():
		err = conn.Err()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed) {
			err = nil
		}
	case <-s.exited:
		s.mu.Lock()
		if !s.shutdown {
			err = ErrExitWithoutShutdown
		}
		s.mu.Unlock()
	case <-ctx.Done():
	}
	// Our goroutines first (a refresh waiting for the client's answer is
	// cancelled), then the connection, then the engine state.
	cancel()
	s.wg.Wait()
	_ = conn.Close()
	s.detach()
	s.mu.Lock()
	stop := s.stopEngine
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	return err
}

// codec marshals LSP payloads with the protocol package's union-aware
// encoders (what lsproto.NewServer installs; its codec type is not
// exported). Raw messages pass through as they are.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case *jsonrpc2.RawMessage:
		if m == nil || *m == nil {
			return []byte("null"), nil
		}
		return *m, nil
	}
	return lsproto.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	if p, ok := v.(*jsonrpc2.RawMessage); ok {
		*p = append(jsonrpc2.RawMessage(nil), data...)
		return nil
	}
	return lsproto.Unmarshal(data, v)
}

// session is one LSP connection: the editor's documents, the execution
// contexts it shows (one per entry), and what was last reported for each.
//
// Goroutines: the connection's read goroutine runs the handlers (one at a
// time, in wire order, see Serve); the loop goroutine (notify.go) applies the engine's
// notifications; the refresher sends inlayHint/codeLens refresh requests;
// short-lived progress goroutines report long runs. mu guards every field
// below it; nothing sends to the client with mu held (a slow client must
// not stall the handlers or the engine's notifications).
type session struct {
	lsproto.UnimplementedServer

	// eng and root are set before initialize answers (ServeProject opens
	// the engine there) and never change after: the handlers, which run
	// after initialize on the read goroutine, and the goroutines the
	// engine's notifications and the handlers wake read them freely.
	eng  *engine.Engine
	log  *slog.Logger
	cfg  Config
	root string
	// open starts the engine of the editor's project (ServeProject; nil
	// with Serve), and stopEngine stops it when the session ends (guarded
	// by mu).
	open       Opener
	stopEngine func()
	// folders are the editor's workspace folders (absolute paths), set at
	// initialize: a file outside them all is not the editor's project.
	folders []string
	// toldOutside are the files outside the project the editor has been
	// told about (window/showMessage, once each). Guarded by mu.
	toldOutside map[string]bool
	clientID    string
	client      lsproto.Client // set before any goroutine that uses it starts

	inbox   inbox         // engine notifications, drained by the loop
	kick    chan struct{} // capacity 1: an edit waits for a run (debouncer)
	refresh chan struct{} // capacity 1: a refresh is wanted
	exited  chan struct{} // closed by the exit notification
	exitOne sync.Once
	wg      sync.WaitGroup // the loop, the refresher, progress goroutines
	// sendMu orders a run's work-done progress "begin" (a progress
	// goroutine) before its "end" (the loop): whoever sends a progress
	// notification holds it. Never held with mu.
	sendMu sync.Mutex

	mu          sync.Mutex
	initialized bool                          // guarded by mu: initialize answered
	connected   bool                          // guarded by mu: engine.Connect succeeded
	shutdown    bool                          // guarded by mu
	enc         encoding                      // guarded by mu (set once, at initialize)
	caps        clientCaps                    // guarded by mu (set once, at initialize)
	docs        map[string]*document          // guarded by mu: by path relative to root
	entries     []*entry                      // guarded by mu: in the order they started
	byID        map[protocol.ContextID]*entry // guarded by mu
	published   map[string]bool               // guarded by mu: paths with diagnostics shown
	pendingLens bool                          // guarded by mu: a codeLens refresh is wanted
	// runDelay is how long changes must pause before the edited buffers
	// run (set once, at initialize; initializationOptions
	// ripple.runDelayMs). Guarded by mu.
	runDelay time.Duration
	// unrun are the open documents changed since their last run was
	// asked (by path): the debouncer asks it once changes pause, didSave
	// at once. Guarded by mu.
	unrun map[string]bool
	// asking are the documents whose run is being asked (taken from unrun,
	// the engine's ApplyEdit not returned yet): their hints wait as for
	// unrun ones. Guarded by mu.
	asking map[string]bool
	// settle is closed (and replaced) when what waiting inlayHint requests
	// depend on changes (wait.go). Guarded by mu.
	settle chan struct{}
	// hintWait is how long an inlayHint request waits for a pending run
	// (initializationOptions ripple.hintWaitMs). Guarded by mu.
	hintWait time.Duration
	// output is the logMessage type of the program's output, 0 for none
	// (ripple.output). Guarded by mu.
	output lsproto.MessageType
	// tick counts statement updates (entry.order). Guarded by mu.
	tick uint64

	// waitMu guards waiting: the inlayHint requests waiting for a run,
	// by request id, with what cancels each ($/cancelRequest).
	waitMu  sync.Mutex
	waiting map[jsonrpc2.ID]context.CancelFunc
}

// clientCaps is what the client said it supports.
type clientCaps struct {
	inlayRefresh bool
	lensRefresh  bool
	progress     bool
	applyEdit    bool
}

// document is an open text document.
type document struct {
	uri     uri.URI
	path    string // relative to root, slash-separated
	text    string // the editor's text
	version string // the ripple buffer's version, which holds text
}

func newSession(eng *engine.Engine, cfg Config) *session {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientID == "" {
		cfg.ClientID = DefaultClientID
	}
	root := ""
	if eng != nil {
		root = eng.Root()
	}
	return &session{
		eng:         eng,
		log:         cfg.Logger,
		cfg:         cfg,
		root:        root,
		clientID:    cfg.ClientID,
		inbox:       inbox{wake: make(chan struct{}, 1)},
		refresh:     make(chan struct{}, 1),
		kick:        make(chan struct{}, 1),
		runDelay:    DefaultRunDelay,
		unrun:       make(map[string]bool),
		asking:      make(map[string]bool),
		toldOutside: make(map[string]bool),
		waiting:     make(map[jsonrpc2.ID]context.CancelFunc),
		settle:      make(chan struct{}),
		hintWait:    DefaultHintWait,
		output:      lsproto.MessageTypeInfo,
		exited:      make(chan struct{}),
		docs:        make(map[string]*document),
		byID:        make(map[protocol.ContextID]*entry),
		published:   make(map[string]bool),
	}
}

// start starts the loop, the refresher and the debouncer; they end when
// ctx does.
func (s *session) start(ctx context.Context) {
	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.loop(ctx) }()
	go func() { defer s.wg.Done(); s.refresher(ctx) }()
	go func() { defer s.wg.Done(); s.debouncer(ctx) }()
}

// detach ends the session's use of the engine: its contexts are destroyed,
// its buffers closed and the client disconnected.
func (s *session) detach() {
	s.mu.Lock()
	connected := s.connected
	s.connected = false
	ids := make([]protocol.ContextID, 0, len(s.entries))
	for _, e := range s.entries {
		ids = append(ids, e.id)
	}
	paths := make([]string, 0, len(s.docs))
	for p := range s.docs {
		paths = append(paths, p)
	}
	s.mu.Unlock()
	if !connected {
		return
	}
	ctx := context.Background()
	for _, id := range ids {
		if err := s.eng.DestroyContext(ctx, s.clientID, id); err != nil {
			s.log.Debug("destroy context", "context", id, "err", err)
		}
	}
	for _, p := range paths {
		if err := s.eng.CloseFile(ctx, s.clientID, p); err != nil {
			s.log.Debug("close buffer", "path", p, "err", err)
		}
	}
	s.eng.Disconnect(s.clientID, s)
}

// commands are the workspace/executeCommand commands (lenses.go).
var commands = []string{cmdRun, cmdEnter, cmdBack, cmdInterrupt, cmdRecompute, cmdRestartKernel, cmdStop}

// Initialize negotiates the position encoding and registers the session
// with the engine.
func (s *session) Initialize(ctx context.Context, p *lsproto.InitializeParams) (*lsproto.InitializeResult, error) {
	var offered []lsproto.PositionEncodingKind
	caps := clientCaps{}
	if g := p.Capabilities.General; g != nil {
		offered = g.PositionEncodings
	}
	if w := p.Capabilities.Workspace; w != nil {
		caps.inlayRefresh = w.InlayHint != nil && w.InlayHint.RefreshSupport != nil && *w.InlayHint.RefreshSupport
		caps.lensRefresh = w.CodeLens != nil && w.CodeLens.RefreshSupport != nil && *w.CodeLens.RefreshSupport
	}
	if w := p.Capabilities.Workspace; w != nil {
		caps.applyEdit = w.ApplyEdit != nil && *w.ApplyEdit
	}
	if w := p.Capabilities.Window; w != nil {
		caps.progress = w.WorkDoneProgress != nil && *w.WorkDoneProgress
	}
	enc := negotiate(offered)
	opts, err := parseOptions(p.InitializationOptions)
	if err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	if err := s.openProject(ctx, p); err != nil {
		return nil, err
	}
	if _, err := s.eng.Connect(ctx, s.clientID, s); err != nil {
		return nil, rpcError(err)
	}
	s.mu.Lock()
	s.enc, s.caps, s.initialized, s.connected = enc, caps, true, true
	s.runDelay, s.hintWait, s.output = opts.runDelay, opts.hintWait, opts.output
	s.mu.Unlock()

	t := true
	incremental := lsproto.TextDocumentSyncKindIncremental
	return &lsproto.InitializeResult{
		Capabilities: lsproto.ServerCapabilities{
			PositionEncoding: lsproto.PositionEncodingKind(enc),
			TextDocumentSync: &lsproto.TextDocumentSyncOptions{
				OpenClose: &t,
				Change:    &incremental,
				Save:      lsproto.Boolean(true),
			},
			HoverProvider:          lsproto.Boolean(true),
			CodeLensProvider:       &lsproto.CodeLensOptions{},
			InlayHintProvider:      lsproto.Boolean(true),
			ExecuteCommandProvider: lsproto.ExecuteCommandOptions{Commands: commands},
		},
		ServerInfo: lsproto.ServerInfo{Name: "ripple", Version: lsproto.NewOptional(s.cfg.Version)},
	}, nil
}

// Initialized starts the entries: the configured ones, else the default.
func (s *session) Initialized(ctx context.Context, _ *lsproto.InitializedParams) error {
	entries := s.cfg.Entries
	if entries == nil {
		if e := defaultEntry(s.root); e != "" {
			entries = []string{e}
		}
	}
	for _, e := range entries {
		if err := s.run(ctx, e); err != nil {
			s.log.Warn("start entry", "entry", e, "err", err)
			s.enqueueMessage(lsproto.MessageTypeError, fmt.Sprintf("ripple: %s: %v", e, err))
		}
	}
	return nil
}

// defaultEntry is main:main when root/main.py defines a main() without
// arguments, else main:__main__ (the module as a script) when main.py
// exists, else "".
func defaultEntry(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "main.py"))
	if err != nil {
		return ""
	}
	for _, r := range runnables(string(b)) {
		if r.name == "main" {
			return "main:main"
		}
	}
	return "main:__main__"
}

// Shutdown answers shutdown; exit follows.
func (s *session) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	return nil
}

// Exit ends Serve.
func (s *session) Exit(ctx context.Context) error {
	s.exitOne.Do(func() { close(s.exited) })
	return nil
}

// checkInitialized refuses requests before initialize.
func (s *session) checkInitialized() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return jsonrpc2.NewError(jsonrpc2.ServerNotInitialized, ErrNotInitialized.Error())
	}
	return nil
}

// relPath returns the slash-separated path of a file URI relative to the
// project root, or ErrOutsideRoot.
func (s *session) relPath(u uri.URI) (string, error) {
	if !u.IsFile() {
		return "", fmt.Errorf("%w: %s is not a file URI", ErrOutsideRoot, u)
	}
	abs := filepath.Clean(u.FsPath())
	rel, err := filepath.Rel(s.root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %s is not below %s", ErrOutsideRoot, abs, s.root)
	}
	return filepath.ToSlash(rel), nil
}

// fileURI returns the URI of a path relative to the root.
func (s *session) fileURI(rel string) uri.URI {
	return uri.File(filepath.Join(s.root, filepath.FromSlash(rel)))
}

// textOf returns the text of a project file: the editor's when it is open,
// else the disk's. The caller holds mu.
func (s *session) textOf(rel string) (string, bool) {
	if d, ok := s.docs[rel]; ok {
		return d.text, true
	}
	b, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// modulePath returns the file of a dotted module name relative to the root
// (pkg.mod -> pkg/mod.py or pkg/mod/__init__.py), "" when neither exists.
// The caller holds mu.
func (s *session) modulePath(module string) string {
	base := strings.ReplaceAll(module, ".", "/")
	for _, p := range []string{base + ".py", base + "/__init__.py"} {
		if _, ok := s.docs[p]; ok {
			return p
		}
		if st, err := os.Stat(filepath.Join(s.root, filepath.FromSlash(p))); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// rpcError turns an engine error into a JSON-RPC error with ripple's code
// (PROTOCOL.md 6) and a message naming the thing at fault.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		return err
	}
	switch {
	case errors.Is(err, ErrUnknownCommand), errors.Is(err, ErrCommandArguments), errors.Is(err, ErrOutsideRoot),
		errors.Is(err, ErrNotOpen), errors.Is(err, errPosition), errors.Is(err, ErrUnknownContext):
		return jsonrpc2.NewError(jsonrpc2.InvalidParams, err.Error())
	}
	pe := engine.ProtocolError(err)
	return jsonrpc2.NewError(jsonrpc2.Code(pe.Code), pe.Message)
}
