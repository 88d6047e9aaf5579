// Package enginetest starts real engines for tests outside the engine
// package (the engine's own tests, the end-to-end tests over a WebSocket)
// and holds the example program of issue 4's acceptance scenarios, so that
// every suite drives the same files.
package enginetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
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
