package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/server"
	"github.com/ripple-run/ripple/web"
	"github.com/ripple-run/ripple/workspace"
)

// shutdownTimeout bounds a graceful shutdown: connections closed, running
// jobs cancelled, kernels stopped.
const shutdownTimeout = 20 * time.Second

// serve runs `ripple serve [flags] [PROJECT_DIR]` until ctx is cancelled
// (SIGINT or SIGTERM, see main), then shuts down gracefully and returns 0.
// Flags may come before or after the directory.
//
// The phases, in order: the flags; the launcher (where kernels come
// from); the project directory and the token; the state log and the value
// journal of .ripple/ (moved aside first with --fresh); the engine, and
// what the state log restores into it; the server and its one line on
// stdout; then, once ctx ends, the shutdown. A phase that fails stops
// what the earlier ones started and decides the exit status (exitError).
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseServeFlags(args, stderr)
	if err != nil {
		return exitWith("serve", stderr, err)
	}
	s := &serveSession{
		flags:  f,
		stdout: stdout,
		stderr: stderr,
		log:    slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: f.level})),
	}
	defer s.close()
	if err := s.start(ctx); err != nil {
		return exitWith("serve", stderr, err)
	}
	s.announce(ctx)
	<-ctx.Done()
	s.shutDown(ctx)
	return 0
}

// serveFlags are ripple serve's parsed command line.
type serveFlags struct {
	dir        string
	addr       string
	token      string // empty: $RIPPLE_TOKEN, else a random one (openProject)
	origins    []string
	kernels    int
	kernelsSet bool // --kernels was given
	python     string
	level      slog.Level
	grace      time.Duration
	fresh      bool
	openPage   bool
	launcher   *launcherFlags
}

// parseServeFlags parses `ripple serve [flags] [PROJECT_DIR]` and checks
// the values that need no file system.
func parseServeFlags(args []string, stderr io.Writer) (*serveFlags, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ripple serve [flags] [PROJECT_DIR]\n\nServe PROJECT_DIR (default: the current directory) to IDE clients over a WebSocket.\n\nflags:")
		fs.PrintDefaults()
	}
	f := &serveFlags{}
	fs.StringVar(&f.addr, "addr", "127.0.0.1:0", "listen `address` (host:port; port 0 picks a free one)")
	fs.StringVar(&f.token, "token", "", "access `token` clients present (default: $RIPPLE_TOKEN, else 32 random bytes)")
	fs.Func("allow-origin", "also accept browser connections from `origin` (scheme://host[:port]; repeatable)", func(s string) error {
		f.origins = append(f.origins, s)
		return nil
	})
	fs.IntVar(&f.kernels, "kernels", 0, "number of kernel processes (default: the number of CPUs)")
	fs.StringVar(&f.python, "python", "", "Python `interpreter` (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	logLevel := fs.String("log-level", "info", "log `level` on stderr: debug, info, warn or error")
	fs.DurationVar(&f.grace, "grace", 5*time.Minute, "how long a disconnected client's contexts are kept")
	fs.BoolVar(&f.fresh, "fresh", false, "start without the state log and value journal of .ripple/ (moved aside to .ripple/state.db.fresh-TIME and values.db.fresh-TIME, not deleted)")
	fs.BoolVar(&f.openPage, "open", false, "open the web page in the browser ($BROWSER, else xdg-open or open)")
	f.launcher = addLauncherFlags(fs)

	dir, ok := parseInterspersed(fs, args, stderr)
	if !ok {
		return nil, errFlags
	}
	f.dir = dir
	if err := f.level.UnmarshalText([]byte(*logLevel)); err != nil {
		return nil, usageError("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	if f.kernels < 0 {
		return nil, usageError("--kernels %d: want a positive number (or 0 for the number of CPUs)", f.kernels)
	}
	if f.grace <= 0 {
		return nil, usageError("--grace %v: want a positive duration", f.grace)
	}
	fs.Visit(func(fl *flag.Flag) { f.kernelsSet = f.kernelsSet || fl.Name == "kernels" })
	return f, nil
}

// serveSession is one ripple serve: what its phases open, in the order
// they open it. It lives on serve's goroutine only.
type serveSession struct {
	flags          *serveFlags
	stdout, stderr io.Writer
	log            *slog.Logger

	coord    *agent.Coordinator // nil for local kernels
	launcher engine.Launcher    // coord, or nil (a nil interface) for local kernels
	kernels  int                // --kernels, or the coordinator's size
	root     string             // the project directory, absolute
	token    string

	stateLog engine.StateLog // nil when .ripple/ cannot hold one
	closeLog func() error    // closes stateLog; nil without one
	saved    durable.State   // what the state log restores
	logFound bool            // a state log was found or created in .ripple/ (maybe read-only)
	values   string          // the value journal's path; empty: values are not kept
	state    *stateReport    // what runtime/status says of .ripple/ (statereport.go)

	eng  *engine.Engine
	srv  *server.Server
	page string // the web page's URL
}

// start runs the phases up to a serving server. On an error, what it
// started is stopped again (close releases the rest).
func (s *serveSession) start(ctx context.Context) error {
	if err := s.openLauncher(); err != nil {
		return err
	}
	if err := s.openProject(); err != nil {
		return err
	}
	s.state = newStateReport(s.stateDir(), s.log)
	if s.flags.fresh {
		if err := s.moveStateAside(); err != nil {
			return err
		}
	}
	if err := s.openStateLog(); err != nil {
		return err
	}
	s.openValueJournal()
	if !s.logFound {
		// No .ripple/ of ours: nothing there to watch.
	} else if err := s.state.watch(); err != nil {
		s.log.Warn("damage found later in .ripple/ (by a kernel) is not reported", "err", err)
	}
	if err := s.startEngine(ctx); err != nil {
		return err
	}
	s.restore()
	return s.startServer(ctx)
}

// close releases what start opened and shutDown does not stop: the state
// log, then the launcher.
func (s *serveSession) close() {
	if s.state != nil {
		s.state.close()
	}
	if s.closeLog != nil {
		s.closeLog()
	}
	if s.coord != nil {
		s.coord.Close()
	}
}

// openLauncher opens the launcher --launcher names (local kernels: none).
func (s *serveSession) openLauncher() error {
	f := s.flags
	coord, msg := f.launcher.open(f.dir, f.python, f.kernels, f.kernelsSet, 0, nil, s.log)
	if msg != "" {
		return usageError("%s", msg)
	}
	s.kernels = f.kernels
	if coord != nil {
		s.coord, s.launcher, s.kernels = coord, coord, coord.Size()
		printAgentsAddr(s.stderr, coord)
	}
	return nil
}

// openProject checks the project directory and settles the token.
func (s *serveSession) openProject() error {
	root, err := projectDir(s.flags.dir)
	if err != nil {
		return usageError("project directory %s: %v", s.flags.dir, err)
	}
	s.root = root
	s.token = s.flags.token
	if s.token == "" {
		s.token = os.Getenv("RIPPLE_TOKEN")
	}
	if s.token == "" {
		s.token = randomToken()
	}
	return nil
}

// stateDir is where the state log and the value journal live.
func (s *serveSession) stateDir() string { return filepath.Join(s.root, ".ripple") }

// durableOptions are the state log's options.
func (s *serveSession) durableOptions() durable.Options {
	opt := durable.Options{Logger: s.log.With("component", "durable")}
	if s.state != nil {
		opt.OnDamage = s.state.addDamage
	}
	return opt
}

// moveStateAside is --fresh: the state log and the value journal are
// moved aside (kept, not deleted), unless another server holds them.
func (s *serveSession) moveStateAside() error {
	// Never move aside the log of a server that is running: opening it
	// first tells (ErrLocked); it is closed again before the rename.
	if l, _, err := durable.Open(s.stateDir(), s.durableOptions()); errors.Is(err, durable.ErrLocked) {
		return runError("--fresh: %v (is another ripple serve running on %s?)", err, s.root)
	} else if err == nil {
		l.Close()
	}
	aside, err := durable.MoveAside(s.stateDir(), "fresh")
	if err != nil {
		return runError("--fresh: moving the state log aside: %v", err)
	}
	if aside != "" {
		s.log.Info("starting fresh; the previous state log is kept", "in", aside)
	}
	aside, err = durable.MoveValuesAside(s.stateDir(), "fresh")
	if err != nil {
		return runError("--fresh: moving the value journal aside: %v", err)
	}
	if aside != "" {
		s.log.Info("starting fresh; the previous value journal is kept", "in", aside)
	}
	return nil
}

// openStateLog opens the state log: every acknowledged buffer change is
// in .ripple/state.db before its reply, and the buffers come back at
// start. Another server on the project would interleave its changes with
// ours: refused. A state directory that cannot be written (a read-only
// file system, file or project) refuses changes with 7001 (PROTOCOL.md
// 8.5) until it can: a durable.Late, which the first change after that
// opens for writing.
func (s *serveSession) openStateLog() error {
	l, _, err := durable.Open(s.stateDir(), s.durableOptions())
	switch {
	case errors.Is(err, durable.ErrLocked):
		return runError("%v (is another ripple serve running on %s?)", err, s.root)
	case err != nil:
		late := durable.NewLate(s.stateDir(), s.durableOptions(), nil, err)
		s.stateLog, s.closeLog = late, late.Close
		s.state.openedLog(s.stderr, late)
		return nil
	}
	s.logFound = true
	if s.saved, err = l.Load(); err != nil {
		l.Close()
		return runError("%v", err)
	}
	if ro := l.ReadOnly(); ro != nil {
		late := durable.NewLate(s.stateDir(), s.durableOptions(), l, ro)
		s.stateLog, s.closeLog = late, late.Close
		s.state.openedLog(s.stderr, late)
		return nil
	}
	s.closeLog = l.Close
	s.stateLog = l
	s.state.openedLog(s.stderr, l)
	return nil
}

// openValueJournal settles the value journal, which lives next to the
// state log, and only where the log could be opened: the directory is
// usable and ours alone.
func (s *serveSession) openValueJournal() {
	if !s.logFound {
		return
	}
	s.values = filepath.Join(s.stateDir(), durable.ValuesFileName)
	if aside, err := durable.CheckValues(s.stateDir()); aside != "" {
		s.log.Warn("value journal moved aside; values are computed again", "err", err)
		s.state.addDamage(s.values, aside, "not an SQLite database: its values are computed again")
	} else if err != nil {
		s.log.Warn("value journal unusable; values are not kept", "err", err)
		s.values = ""
		return
	}
	if aside, err := durable.CheckValuesWAL(s.stateDir()); aside != "" {
		s.log.Warn("value journal WAL moved aside; the values it held are computed again", "err", err)
		s.state.addDamage(s.values+"-wal", aside, "not an SQLite write-ahead log (SQLite would drop it silently): the values it held are computed again")
	} else if err != nil {
		s.log.Warn("value journal WAL unreadable", "err", err)
	}
}

// startEngine creates and starts the engine, and says on stderr which
// Python runs the project (stdout's first line is the URL line IDEs
// read).
func (s *serveSession) startEngine(ctx context.Context) error {
	eng, err := engine.New(ctx, engine.Config{
		Root:            s.root,
		Python:          s.flags.python,
		Kernels:         s.kernels,
		Launcher:        s.launcher,
		Logger:          s.log.With("component", "engine"),
		DisconnectGrace: s.flags.grace,
		Watch:           true,
		StateLog:        s.stateLog,
		StateStatus:     s.state.status,
		ValueJournal:    s.values,
	})
	if err != nil {
		return runError("%v", err)
	}
	s.eng = eng
	if err := eng.Start(ctx); err != nil {
		s.stopEngine(ctx)
		return runError("%v", err)
	}
	return nil
}

// restore brings back the buffers and contexts the state log kept (after
// a crash), each named in the log.
func (s *serveSession) restore() {
	restored, err := s.eng.RestoreBuffers(s.saved)
	for _, p := range restored {
		s.log.Info("unsaved buffer restored from the state log", "path", p)
	}
	if err != nil {
		s.log.Warn("state log: some buffers not restored", "err", err)
	}
	for p, change := range s.eng.ChangedWhileDown() {
		s.log.Warn("unsaved buffer restored, but its file was "+string(change)+" on disk while the server was down; its clients are told (text/fileModifiedOnDisk)", "path", p)
		s.state.addDamage(p, "", "file "+string(change)+" on disk while the server was down: the restored buffer keeps the unsaved edits, made on the earlier file")
	}
	ctxs, err := s.eng.RestoreContexts(s.saved)
	for _, id := range ctxs {
		s.log.Info("context restored from the state log", "context", id)
	}
	if err != nil {
		s.log.Warn("state log: some contexts not restored", "err", err)
	}
	py := s.eng.Python()
	fmt.Fprintf(s.stderr, "ripple: python %s at %s\n", py.Version, py.Path)
}

// startServer starts the WebSocket server and settles the web page's URL.
func (s *serveSession) startServer(ctx context.Context) error {
	srv, err := server.New(s.eng, server.Config{
		Addr:         s.flags.addr,
		Token:        s.token,
		AllowOrigins: s.flags.origins,
		Web:          web.Handler(),
		Logger:       s.log.With("component", "server"),
	})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		s.stopEngine(ctx)
		return runError("%v", err)
	}
	page, err := web.PageURL(srv.URL())
	if err != nil {
		sctx, cancel := shutdownContext(ctx)
		_ = srv.Stop(sctx)
		cancel()
		s.stopEngine(ctx)
		return runError("%v", err)
	}
	s.srv, s.page = srv, page
	return nil
}

// announce prints the line IDEs read (PROTOCOL.md 1): the WebSocket URL,
// then the page for a browser, both ending at a space or the line's end;
// then the page's URL again on a line of its own, for terminals that make
// a URL clickable only when nothing is glued to it. With --open, the page
// opens in the browser.
func (s *serveSession) announce(ctx context.Context) {
	fmt.Fprintf(s.stdout, "ripple: serving %s at %s and the web page at %s\n", s.root, s.srv.URL(), s.page)
	fmt.Fprintln(s.stdout, s.page)
	if s.flags.openPage {
		if err := openBrowser(ctx, s.page); err != nil {
			s.log.Warn("could not open the web page", "url", s.page, "err", err)
		}
	}
}

// shutDown stops the clients first (their calls are answered, they get
// 1001), keeps the unsaved buffers for recovery, then stops the engine
// (running jobs cancelled, kernels stopped).
func (s *serveSession) shutDown(ctx context.Context) {
	s.log.Info("shutting down", "cause", context.Cause(ctx))
	sctx, cancel := shutdownContext(ctx)
	defer cancel()
	if err := s.srv.Stop(sctx); err != nil {
		s.log.Error("server stop", "err", err)
	}
	// Unsaved buffers are kept, not dropped (PROTOCOL.md 7.4): one warning
	// line per file, and text/openFile offers them back next time.
	kept, err := s.eng.KeepUnsaved()
	for _, p := range kept {
		s.log.Warn("unsaved changes kept for recovery", "path", p, "in", filepath.Join(workspace.RecoveryDir, p+".json"))
	}
	if err != nil {
		s.log.Error("keeping unsaved changes", "err", err)
	}
	// Those kept are offered back by 7.4 now, not restored by the state
	// log (which restores buffers as they were only after a crash).
	if err := s.eng.ForgetBuffers(sctx, kept); err != nil {
		s.log.Error("state log", "err", err)
	}
	s.stopEngine(ctx)
	s.log.Info("stopped")
}

// stopEngine stops the engine gracefully, within shutdownTimeout.
func (s *serveSession) stopEngine(ctx context.Context) {
	sctx, cancel := shutdownContext(ctx)
	defer cancel()
	if err := s.eng.Stop(sctx); err != nil {
		s.log.Error("engine stop", "err", err)
	}
}

// shutdownContext bounds a stop by shutdownTimeout. It does not end with
// ctx: by the time serve stops anything, ctx is usually cancelled.
func shutdownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
}

// parseInterspersed parses flags that may come before and after the one
// positional argument, and returns that argument ("." when absent).
func parseInterspersed(fs *flag.FlagSet, args []string, stderr io.Writer) (string, bool) {
	if err := fs.Parse(args); err != nil {
		return "", false
	}
	dir := "."
	if fs.NArg() > 0 {
		dir = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return "", false
		}
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "ripple %s: want at most one project directory, got %q and %q\n",
				fs.Name(), dir, strings.Join(fs.Args(), " "))
			return "", false
		}
	}
	return dir, true
}

// projectDir returns dir as an absolute path to an existing directory.
func projectDir(dir string) (string, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(root)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("not a directory")
	}
	return root, nil
}

// randomToken returns 32 random bytes, hex-encoded.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
