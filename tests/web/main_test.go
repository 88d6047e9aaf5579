// Package web holds the end-to-end tests of ripple's built-in web client:
// the real `ripple serve` binary, a real headless chromium driven by
// Playwright (e2e.mjs the editing session, notebook.mjs a script project,
// effects.mjs held effects and not-reached statements; page.mjs their
// shared helpers), and checks of the page's own code in node: its text
// and version code against the server's (jscheck.mjs), its description of
// held, running and not-reached statements (valuescheck.mjs). Node, chromium and playwright-core
// are installed by .ci/run; without them the tests skip, saying so loudly.
package web

import (
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
