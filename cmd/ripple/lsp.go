package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/lsp"
	"github.com/ripple-run/ripple/server"
	"github.com/ripple-run/ripple/web"
)

// stdio is the LSP transport of `ripple lsp`: the editor writes to our
// stdin and reads our stdout.
type stdio struct {
	io.ReadCloser
	io.Writer
}

func (s stdio) Close() error {
	errIn := s.ReadCloser.Close()
	if c, ok := s.Writer.(io.Closer); ok {
		return errors.Join(errIn, c.Close())
	}
	return errIn
}

// lspCmd runs `ripple lsp [flags] [DIR]`: the Language Server Protocol on
// stdin/stdout, on the same engine serve, watch and run use; with --serve
// the WebSocket protocol and the web page too, on that engine (URL on
// stderr). The project is the editor's (its first workspace folder, else
// its rootUri), DIR (default: the current directory) when the editor names
// none. It returns when the editor exits (0; 1 when it sent exit without
// shutdown) or ctx ends.
//
// stdin is called once the flags are parsed (it may change stdin's mode;
// see closableStdin).
func lspCmd(ctx context.Context, args []string, stdin func() io.ReadCloser, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lsp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ripple lsp [flags] [PROJECT_DIR]\n\nSpeak the Language Server Protocol on stdin/stdout for the editor's project (its workspace folder;\nPROJECT_DIR, default the current directory, when the editor names none):\nvalues as inlay hints, errors as diagnostics, runs as code lenses (docs/editors.md).\n\nflags:")
		fs.PrintDefaults()
	}
	var entries []string
	fs.Func("entry", "run `module:function` when the project opens (repeatable; default main:main, else main:__main__)", func(s string) error {
		entries = append(entries, s)
		return nil
	})
	o := lspOptions{}
	fs.BoolVar(&o.serveToo, "serve", false, "also serve the WebSocket protocol and the web page on the same engine (URL printed on stderr)")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:0", "with --serve: listen `address`")
	fs.StringVar(&o.token, "token", "", "with --serve: access `token` (default: $RIPPLE_TOKEN, else random)")
	fs.IntVar(&o.kernels, "kernels", 1, "number of kernel processes (a spare is kept besides them; 0: the number of CPUs)")
	fs.StringVar(&o.python, "python", "", "Python `interpreter` (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
	fs.BoolVar(&o.noJournal, "no-values", false, "keep no value journal (.ripple/values.db): every value is computed again when the editor restarts")
	logLevel := fs.String("log-level", "warn", "log `level` on stderr: debug, info, warn or error")
	dir, ok := parseInterspersed(fs, args, stderr)
	if !ok {
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "ripple lsp: --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	if o.kernels < 0 {
		fmt.Fprintf(stderr, "ripple lsp: --kernels %d: want a positive number (or 0 for the number of CPUs)\n", o.kernels)
		return 2
	}
	o.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o.stderr = stderr
	fallback, err := projectDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "ripple lsp: project directory %s: %v\n", dir, err)
		return exitUsage
	}
	err = lsp.ServeProject(ctx, o.open, fallback, stdio{stdin(), stdout}, lsp.Config{Logger: o.log.With("component", "lsp"), Entries: entries, Version: version})
	if errors.Is(err, lsp.ErrExitWithoutShutdown) {
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "ripple lsp: %v\n", err)
		return 1
	}
	return 0
}

// lspOptions are ripple lsp's flags, for opening the editor's project.
type lspOptions struct {
	serveToo  bool
	addr      string
	token     string
	kernels   int
	python    string
	noJournal bool
	log       *slog.Logger
	stderr    io.Writer
}

// open starts the engine (and with --serve the server) of the project at
// root, the one the editor named: lsp.Opener.
func (o *lspOptions) open(ctx context.Context, root string) (*engine.Engine, func(), error) {
	root, err := projectDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("project directory: %w", err)
	}
	eng, err := engine.New(ctx, engine.Config{Root: root, Python: o.python, Kernels: o.kernels,
		Logger: o.log.With("component", "engine"), Watch: true, ValueJournal: o.valueJournal(root)})
	if err != nil {
		return nil, nil, err
	}
	stopCtx := context.WithoutCancel(ctx)
	stopEngine := func() {
		sctx, cancel := context.WithTimeout(stopCtx, shutdownTimeout)
		defer cancel()
		if err := eng.Stop(sctx); err != nil {
			o.log.Error("engine stop", "err", err)
		}
	}
	if err := eng.Start(ctx); err != nil {
		stopEngine()
		return nil, nil, err
	}
	if !o.serveToo {
		return eng, stopEngine, nil
	}
	stopServer, err := o.serve(ctx, eng, root)
	if err != nil {
		stopEngine()
		return nil, nil, fmt.Errorf("--serve: %w", err)
	}
	return eng, func() { stopServer(); stopEngine() }, nil
}

// valueJournal returns the value journal's path (as serve keeps it, in
// .ripple/ of the project), "" when values are not kept: --no-values, or
// .ripple/ cannot hold it (a read-only project).
func (o *lspOptions) valueJournal(root string) string {
	if o.noJournal {
		return ""
	}
	dir := filepath.Join(root, ".ripple")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		o.log.Warn("no value journal: values are computed again when the editor restarts", "err", err)
		return ""
	}
	if aside, err := durable.CheckValues(dir); aside != "" {
		o.log.Warn("value journal moved aside; values are computed again", "err", err)
	} else if err != nil {
		o.log.Warn("value journal unusable; values are not kept", "err", err)
		return ""
	}
	return filepath.Join(dir, durable.ValuesFileName)
}

// serve starts --serve's WebSocket server and web page on eng and returns
// what stops it.
func (o *lspOptions) serve(ctx context.Context, eng *engine.Engine, root string) (func(), error) {
	token := o.token
	if token == "" {
		token = os.Getenv("RIPPLE_TOKEN")
	}
	if token == "" {
		token = randomToken()
	}
	srv, err := server.New(eng, server.Config{Addr: o.addr, Token: token, Web: web.Handler(), Logger: o.log.With("component", "server")})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		return nil, err
	}
	stopCtx := context.WithoutCancel(ctx)
	stop := func() {
		sctx, cancel := context.WithTimeout(stopCtx, 5*time.Second)
		defer cancel()
		_ = srv.Stop(sctx)
	}
	page, err := web.PageURL(srv.URL())
	if err != nil {
		stop()
		return nil, err
	}
	fmt.Fprintf(o.stderr, "ripple: serving %s at %s and the web page at %s\n", root, srv.URL(), page)
	return stop, nil
}
