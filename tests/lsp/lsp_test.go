// Package lsp holds the end-to-end tests of `ripple lsp` against real LSP
// clients: headless Neovim (Debian's neovim, nvim_test.lua) and the
// vscode-languageserver-protocol client VS Code's own LSP client is built
// on (client.mjs, run by node). Both drive the real binary over stdio on a
// copy of testdata/live with real python3 kernels. Neovim, node and the npm
// packages are installed by .ci/run; without them the tests skip locally
// and fail under CI.
package lsp

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/internal/testenv"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// need returns the path of tool, or skips the test (fails it under CI,
// where .ci/run has installed it).
func need(t *testing.T, tool, install string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		testenv.NeedOrSkip(t, "%s needs %s on PATH (%s): %v", t.Name(), tool, install, err)
	}
	return p
}

// ripple builds the binary (with -race when the tests run under it).
func ripple(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ripple")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, "github.com/ripple-run/ripple/cmd/ripple")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// project copies testdata/live to a fresh directory and returns it.
func project(t *testing.T) string { return projectFrom(t, "live") }

// projectFrom copies testdata/name to a fresh directory and returns it.
func projectFrom(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kernelTemp returns the environment of a client whose server's kernels
// get a temp dir of their own: the project, under the system temp dir as
// every t.TempDir() is, would otherwise be all temp, where an automatic
// run's writes are allowed (PROTOCOL.md 8.2).
func kernelTemp(t *testing.T) []string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "TMPDIR="+tmp)
}

// runClient runs a client process (its children in its process group,
// killed together at the deadline) and fails the test unless it exits 0.
// Its output is logged either way.
func runClient(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("%s:\n%s", strings.Join(cmd.Args, " "), out.String())
	if err != nil {
		t.Fatalf("%s: %v", cmd.Args[0], err)
	}
	return out.String()
}

// TestVSCodeClient runs the scenario with vscode-languageserver-protocol,
// once per position encoding.
func TestVSCodeClient(t *testing.T) {
	node := need(t, "node", "apt-get install nodejs; bash .ci/run does it")
	if _, err := os.Stat(filepath.Join("node_modules", "vscode-languageserver-protocol", "package.json")); err != nil {
		testenv.NeedOrSkip(t, "%s needs vscode-languageserver-protocol (npm ci in tests/lsp; bash .ci/run does it): %v", t.Name(), err)
	}
	bin := ripple(t)
	for _, enc := range []string{"utf-32", "utf-16"} {
		t.Run(enc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			out := runClient(t, exec.CommandContext(ctx, node, "client.mjs", bin, project(t), enc))
			if !strings.Contains(out, "PASS "+enc) {
				t.Fatalf("the client did not finish its scenario")
			}
		})
	}
}

// TestVSCodeClientRunState runs runstate.mjs: not-reached hints after an
// exception, a typed write held with its ▶ Run lens (the file written only
// by the lens's command), a save running a held statement, the running
// statement marked and no ⏳ left after an interrupt.
func TestVSCodeClientRunState(t *testing.T) {
	node := need(t, "node", "apt-get install nodejs; bash .ci/run does it")
	if _, err := os.Stat(filepath.Join("node_modules", "vscode-languageserver-protocol", "package.json")); err != nil {
		testenv.NeedOrSkip(t, "%s needs vscode-languageserver-protocol (npm ci in tests/lsp; bash .ci/run does it): %v", t.Name(), err)
	}
	bin := ripple(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "runstate.mjs", bin, projectFrom(t, "runstate"))
	cmd.Env = kernelTemp(t)
	out := runClient(t, cmd)
	if !strings.Contains(out, "PASS runstate") {
		t.Fatalf("the client did not finish its scenario")
	}
}

// TestNeovim runs the scenario in headless Neovim.
func TestNeovim(t *testing.T) {
	nvim := need(t, "nvim", "apt-get install neovim; bash .ci/run does it")
	bin := ripple(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", "luafile nvim_test.lua")
	cmd.Env = append(os.Environ(), "RIPPLE_BIN="+bin, "PROJECT="+project(t))
	out := runClient(t, cmd)
	if !strings.Contains(out, "PASS nvim") {
		t.Fatalf("Neovim did not finish its scenario")
	}
}

// TestEditsBothModes runs edits.mjs twice: a client that honours
// workspace/inlayHint/refresh (VS Code) and one that ignores it (Neovim
// 0.10, Eglot: one hint request after each change). In both, 50 edits on a
// 200-statement main each end with the final values on screen, no answer
// ever shows an old value as current, and the keystroke-to-final-hint
// p50/p99 of each mode is in the log (the RESULT lines).
func TestEditsBothModes(t *testing.T) {
	node := need(t, "node", "apt-get install nodejs; bash .ci/run does it")
	if _, err := os.Stat(filepath.Join("node_modules", "vscode-languageserver-protocol", "package.json")); err != nil {
		testenv.NeedOrSkip(t, "%s needs vscode-languageserver-protocol (npm ci in tests/lsp; bash .ci/run does it): %v", t.Name(), err)
	}
	bin := ripple(t)
	for _, mode := range []string{"refresh", "norefresh"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
			defer cancel()
			dir := filepath.Join(t.TempDir(), "edits")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.CommandContext(ctx, node, "edits.mjs", bin, dir, mode)
			cmd.Env = kernelTemp(t)
			out := runClient(t, cmd)
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "RESULT ") {
					t.Log(l)
					// Without refresh an answer past the budget (~1 s) is
					// ⏳, not final: only staleness is an error there.
					if !strings.Contains(l, " stale=0 ") || mode == "refresh" && !strings.Contains(l, " final=50 ") {
						t.Errorf("an answer was stale, or an edit never got its values: %s", l)
					}
					return
				}
			}
			t.Fatal("edits.mjs printed no RESULT line")
		})
	}
}
