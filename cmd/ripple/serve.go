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
func serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ripple serve [flags] [PROJECT_DIR]\n\nServe PROJECT_DIR (default: the current directory) to IDE clients over a WebSocket.\n\nflags:")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:0", "listen `address` (host:port; port 0 picks a free one)")
	token := fs.String("token", "", "access `token` clients present (default: $RIPPLE_TOKEN, else 32 random bytes)")
	var origins []string
	fs.Func("allow-origin", "also accept browser connections from `origin` (scheme://host[:port]; repeatable)", func(s string) error {
		origins = append(origins, s)
		return nil
	})
	kernels := fs.Int("kernels", 0, "number of kernel processes (default: the number of CPUs)")
	python := fs.String("python", "", "Python `interpreter` (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	logLevel := fs.String("log-level", "info", "log `level` on stderr: debug, info, warn or error")
	grace := fs.Duration("grace", 5*time.Minute, "how long a disconnected client's contexts are kept")
	fresh := fs.Bool("fresh", false, "start without the state log and value journal of .ripple/ (moved aside to .ripple/state.db.fresh-TIME and values.db.fresh-TIME, not deleted)")
	openPage := fs.Bool("open", false, "open the web page in the browser ($BROWSER, else xdg-open or open)")
	lf := addLauncherFlags(fs)

	dir, ok := parseInterspersed(fs, args, stderr)
	if !ok {
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "ripple serve: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	if *kernels < 0 {
		fmt.Fprintf(stderr, "ripple serve: --kernels %d: want a positive number (or 0 for the number of CPUs)\n", *kernels)
		return 2
	}
	if *grace <= 0 {
		fmt.Fprintf(stderr, "ripple serve: --grace %v: want a positive duration\n", *grace)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	kernelsSet := false
	fs.Visit(func(f *flag.Flag) { kernelsSet = kernelsSet || f.Name == "kernels" })
	coord, msg := lf.open(dir, *python, *kernels, kernelsSet, 0, nil, log)
	if msg != "" {
		fmt.Fprintf(stderr, "ripple serve: %s\n", msg)
		return exitUsage
	}
	var launcher engine.Launcher
	if coord != nil {
		defer coord.Close()
		launcher, *kernels = coord, coord.Size()
		printAgentsAddr(stderr, coord)
	}

	root, err := projectDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "ripple serve: project directory %s: %v\n", dir, err)
		return exitUsage
	}
	if *token == "" {
		*token = os.Getenv("RIPPLE_TOKEN")
	}
	if *token == "" {
		*token = randomToken()
	}

	// The state log (issue 16): every acknowledged buffer change is in
	// .ripple/state.db before its reply; the buffers come back at start.
	stateDir := filepath.Join(root, ".ripple")
	if *fresh {
		// Never move aside the log of a server that is running: opening it
		// first tells (ErrLocked); it is closed again before the rename.
		if l, _, err := durable.Open(stateDir, durable.Options{Logger: log.With("component", "durable")}); errors.Is(err, durable.ErrLocked) {
			fmt.Fprintf(stderr, "ripple serve: --fresh: %v (is another ripple serve running on %s?)\n", err, root)
			return 1
		} else if err == nil {
			l.Close()
		}
		aside, err := durable.MoveAside(stateDir, "fresh")
		if err != nil {
			fmt.Fprintf(stderr, "ripple serve: --fresh: moving the state log aside: %v\n", err)
			return 1
		}
		if aside != "" {
			log.Info("starting fresh; the previous state log is kept", "in", aside)
		}
		aside, err = durable.MoveValuesAside(stateDir, "fresh")
		if err != nil {
			fmt.Fprintf(stderr, "ripple serve: --fresh: moving the value journal aside: %v\n", err)
			return 1
		}
		if aside != "" {
			log.Info("starting fresh; the previous value journal is kept", "in", aside)
		}
	}
	// Another server on the project would interleave its changes with
	// ours: refused. A state directory that cannot be used at all (a
	// read-only project) costs durability, not the server: one warning.
	var stateLog engine.StateLog
	var saved durable.State
	switch l, _, err := durable.Open(stateDir, durable.Options{Logger: log.With("component", "durable")}); {
	case errors.Is(err, durable.ErrLocked):
		fmt.Fprintf(stderr, "ripple serve: %v (is another ripple serve running on %s?)\n", err, root)
		return 1
	case err != nil:
		log.Warn("no state log: unsaved buffers and contexts will not survive a crash", "err", err)
	default:
		defer l.Close()
		if saved, err = l.Load(); err != nil {
			fmt.Fprintf(stderr, "ripple serve: %v\n", err)
			return 1
		}
		stateLog = l
	}
	// The value journal (issue 16) lives next to the log, and only where
	// the log could be opened: the directory is usable and ours alone.
	var values string
	if stateLog != nil {
		values = filepath.Join(stateDir, durable.ValuesFileName)
		if aside, err := durable.CheckValues(stateDir); aside != "" {
			log.Warn("value journal moved aside; values are computed again", "err", err)
		} else if err != nil {
			log.Warn("value journal unusable; values are not kept", "err", err)
			values = ""
		}
	}

	eng, err := engine.New(ctx, engine.Config{
		Root:            root,
		Python:          *python,
		Kernels:         *kernels,
		Launcher:        launcher,
		Logger:          log.With("component", "engine"),
		DisconnectGrace: *grace,
		Watch:           true,
		StateLog:        stateLog,
		ValueJournal:    values,
	})
	if err != nil {
		fmt.Fprintf(stderr, "ripple serve: %v\n", err)
		return 1
	}
	// Shutdown runs on its own context: ctx is already cancelled by then.
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := eng.Stop(sctx); err != nil {
			log.Error("engine stop", "err", err)
		}
	}
	if err := eng.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "ripple serve: %v\n", err)
		shutdown()
		return 1
	}
	restored, err := eng.RestoreBuffers(saved)
	for _, p := range restored {
		log.Info("unsaved buffer restored from the state log", "path", p)
	}
	if err != nil {
		log.Warn("state log: some buffers not restored", "err", err)
	}
	ctxs, err := eng.RestoreContexts(saved)
	for _, id := range ctxs {
		log.Info("context restored from the state log", "context", id)
	}
	if err != nil {
		log.Warn("state log: some contexts not restored", "err", err)
	}
	// Which Python runs the project: on stderr, stdout's first line is
	// the URL line IDEs read.
	py := eng.Python()
	fmt.Fprintf(stderr, "ripple: python %s at %s\n", py.Version, py.Path)
	srv, err := server.New(eng, server.Config{
		Addr:         *addr,
		Token:        *token,
		AllowOrigins: origins,
		Web:          web.Handler(),
		Logger:       log.With("component", "server"),
	})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ripple serve: %v\n", err)
		shutdown()
		return 1
	}
	page, err := web.PageURL(srv.URL())
	if err != nil {
		fmt.Fprintf(stderr, "ripple serve: %v\n", err)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		_ = srv.Stop(sctx)
		cancel()
		shutdown()
		return 1
	}
	// One line (PROTOCOL.md 1): the WebSocket URL for IDEs, then the page
	// for a browser; both end at a space or the line's end.
	fmt.Fprintf(stdout, "ripple: serving %s at %s and the web page at %s\n", root, srv.URL(), page)
	// The page's URL again on a line of its own, for terminals that make
	// a URL clickable only when nothing is glued to it.
	fmt.Fprintln(stdout, page)
	if *openPage {
		if err := openBrowser(ctx, page); err != nil {
			log.Warn("could not open the web page", "url", page, "err", err)
		}
	}

	<-ctx.Done()
	log.Info("shutting down", "cause", context.Cause(ctx))
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	// Clients first (their calls are answered, they get 1001), then the
	// engine (running jobs cancelled, kernels stopped).
	if err := srv.Stop(sctx); err != nil {
		log.Error("server stop", "err", err)
	}
	// Unsaved buffers are kept, not dropped (PROTOCOL.md 7.4): one warning
	// line per file, and text/openFile offers them back next time.
	kept, err := eng.KeepUnsaved()
	for _, p := range kept {
		log.Warn("unsaved changes kept for recovery", "path", p, "in", filepath.Join(workspace.RecoveryDir, p+".json"))
	}
	if err != nil {
		log.Error("keeping unsaved changes", "err", err)
	}
	// Those kept are offered back by 7.4 now, not restored by the state
	// log (which restores buffers as they were only after a crash).
	if err := eng.ForgetBuffers(sctx, kept); err != nil {
		log.Error("state log", "err", err)
	}
	shutdown()
	log.Info("stopped")
	return 0
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
