// Package enginetest starts real engines for tests outside the engine
// package (the engine's own tests, the end-to-end tests over a WebSocket)
// and holds the acceptance scenarios (scenarios.go): their project files
// and their steps and assertions, written once as a table that each suite
// runs through its own Driver (the engine's Go API, the WebSocket).
package enginetest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// ScenarioHelper is helper.py of the scenarios.
const ScenarioHelper = "def foo(a, b):\n    c = a * b\n    return c\n"

// ScenarioBody is main's body in the scenarios: x = 6; y = foo(x, 5); z = y + 5.
var ScenarioBody = []string{"x = 6", "y = foo(x, 5)", "z = y + 5"}

// MainWith returns main.py with main's body made of the given statements,
// one per line (ScenarioBody when none are given).
func MainWith(body ...string) string {
	if body == nil {
		body = ScenarioBody
	}
	return "from helper import foo\n\n\ndef main():\n    " + strings.Join(body, "\n    ") + "\n"
}

// WriteFiles writes files (slash-separated names relative to dir) into dir.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Start starts an engine on dir with cfg (one kernel unless cfg says
// otherwise) and stops it when the test ends.
func Start(t testing.TB, dir string, cfg engine.Config) *engine.Engine {
	t.Helper()
	cfg.Root = dir
	// RIPPLE_DEBUG_LOG=1 go test ... shows the engine's debug log (run
	// starts and ends, kernel restarts) of a failing end-to-end test.
	if os.Getenv("RIPPLE_DEBUG_LOG") != "" && cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.Kernels == 0 {
		cfg.Kernels = 1
	}
	ctx := context.Background()
	e, err := engine.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Stop(sctx); err != nil {
			t.Errorf("engine stop: %v", err)
		}
	})
	return e
}

// WrapPython writes at path an interpreter for tests of kernel starts: a
// bash script that runs python3 (the one FindPython picks for a bare
// project) for the interpreter probe and the first kernel to start, and
// runs laterKernels (bash) before it for every later kernel start: a wait
// for a gate, a failure. exec -a keeps the wrapper as sys.executable, so
// the engine, which probes it once, starts every kernel through it.
func WrapPython(t testing.TB, path, laterKernels string) {
	t.Helper()
	real, err := kernel.FindPython(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(t.TempDir(), "first-kernel")
	script := "#!/bin/bash\n" +
		"if [ -n \"$RIPPLE_KERNEL_ID\" ] && ! mkdir " + first + " 2>/dev/null; then\n" +
		laterKernels + "\n" +
		"fi\n" +
		"exec -a \"$0\" " + real.Path + " \"$@\"\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}
