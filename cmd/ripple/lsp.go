package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

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
// stderr). It returns when the editor exits (0; 1 when it sent exit
// without shutdown) or ctx ends.
//
// stdin is called once the flags are parsed and the engine is up (it may
// change stdin's mode; see closableStdin).
func lspCmd(ctx context.Context, args []string, stdin func() io.ReadCloser, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lsp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ripple lsp [flags] [PROJECT_DIR]\n\nSpeak the Language Server Protocol on stdin/stdout for PROJECT_DIR (default: the current directory):\nvalues as inlay hints, errors as diagnostics, runs as code lenses (docs/editors.md).\n\nflags:")
		fs.PrintDefaults()
	}
	var entries []string
	fs.Func("entry", "run `module:function` when the project opens (repeatable; default main:main, else main:__main__)", func(s string) error {
		entries = append(entries, s)
		return nil
	})
	serveToo := fs.Bool("serve", false, "also serve the WebSocket protocol and the web page on the same engine (URL printed on stderr)")
	addr := fs.String("addr", "127.0.0.1:0", "with --serve: listen `address`")
	token := fs.String("token", "", "with --serve: access `token` (default: $RIPPLE_TOKEN, else random)")
	kernels := fs.Int("kernels", 0, "number of kernel processes (default: the number of CPUs)")
	python := fs.String("python", "", "Python `interpreter` (default: $RIPPLE_PYTHON, PROJECT_DIR/.venv/bin/python, python3 on PATH)")
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
	if *kernels < 0 {
		fmt.Fprintf(stderr, "ripple lsp: --kernels %d: want a positive number (or 0 for the number of CPUs)\n", *kernels)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	root, err := projectDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "ripple lsp: project directory %s: %v\n", dir, err)
		return exitUsage
	}
	eng, err := engine.New(ctx, engine.Config{Root: root, Python: *python, Kernels: *kernels,
		Logger: log.With("component", "engine"), Watch: true})
	if err != nil {
		fmt.Fprintf(stderr, "ripple lsp: %v\n", err)
		return 1
	}
	stopCtx := context.WithoutCancel(ctx)
	stopEngine := func() {
		sctx, cancel := context.WithTimeout(stopCtx, shutdownTimeout)
		defer cancel()
		if err := eng.Stop(sctx); err != nil {
			log.Error("engine stop", "err", err)
		}
	}
	if err := eng.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "ripple lsp: %v\n", err)
		stopEngine()
		return 1
	}
	defer stopEngine()
	if *serveToo {
		if *token == "" {
			*token = os.Getenv("RIPPLE_TOKEN")
		}
		if *token == "" {
			*token = randomToken()
		}
		srv, err := server.New(eng, server.Config{Addr: *addr, Token: *token, Web: web.Handler(), Logger: log.With("component", "server")})
		if err == nil {
			err = srv.Start(ctx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ripple lsp: --serve: %v\n", err)
			return 1
		}
		defer func() {
			sctx, cancel := context.WithTimeout(stopCtx, 5*time.Second)
			defer cancel()
			_ = srv.Stop(sctx)
		}()
		page, err := web.PageURL(srv.URL())
		if err != nil {
			fmt.Fprintf(stderr, "ripple lsp: --serve: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "ripple: serving %s at %s and the web page at %s\n", root, srv.URL(), page)
	}
	err = lsp.Serve(ctx, eng, stdio{stdin(), stdout}, lsp.Config{Logger: log.With("component", "lsp"), Entries: entries, Version: version})
	if errors.Is(err, lsp.ErrExitWithoutShutdown) {
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "ripple lsp: %v\n", err)
		return 1
	}
	return 0
}
