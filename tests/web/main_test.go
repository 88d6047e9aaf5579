// Package web holds the end-to-end test of ripple's built-in web client:
// the real `ripple serve` binary, a real headless chromium driven by
// Playwright (e2e.mjs), and checks of the page's text and version code
// against the server's (jscheck.mjs). Node, chromium and playwright-core
// are installed by .ci/run; without them the tests skip, saying so loudly.
package web

import (
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
