package lsp_test

import (
	"context"
	"os"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/lsp"
)

// stdio joins the process's stdin and stdout into the stream Serve speaks on.
type stdio struct {
	*os.File // stdin
	out      *os.File
}

func (s stdio) Write(p []byte) (int, error) { return s.out.Write(p) }

// Serve a project to the editor that started this process, as `ripple lsp`
// does (cmd/ripple/lsp.go adds flags, --serve and a stdin whose Close
// interrupts a pending read).
func ExampleServe() {
	ctx := context.Background()
	eng, err := engine.New(ctx, engine.Config{Root: ".", Watch: true})
	if err != nil {
		panic(err)
	}
	if err := eng.Start(ctx); err != nil {
		panic(err)
	}
	defer eng.Stop(ctx)
	// Returns after the editor's shutdown and exit, or at the end of input.
	if err := lsp.Serve(ctx, eng, stdio{os.Stdin, os.Stdout}, lsp.Config{}); err != nil {
		os.Exit(1)
	}
}
