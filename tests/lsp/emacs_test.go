package lsp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

// emacsMain is the project's main.py: a slow statement after the values,
// so a run is seen to end after the edit.
const emacsMain = `import time


def main():
    a = 3 * 2
    b = a * 7
    c = b + 1
    time.sleep(0.3)
    return c
`

// TestEmacsEglot drives Emacs 30's Eglot (bookworm-backports; .ci/run
// installs it) in tmux against the real binary, as a user would: Emacs is
// started from the project's parent directory on proj/main.py (the
// project is the editor's root, a git repository), the first run's values
// appear, an edit is typed, and with no further keystroke the screen
// shows the edit's values once its run ends (Eglot never acts on
// workspace/inlayHint/refresh: the one hint request after the edit must
// get them). A syntax error typed shows its diagnostic, which goes when
// it is fixed. Each step's screen is saved in tests/artifacts.
func TestEmacsEglot(t *testing.T) {
	emacs := need(t, "emacs", "apt-get install -t bookworm-backports emacs-nox; bash .ci/run does it")
	tmux := need(t, "tmux", "apt-get install tmux; bash .ci/run does it")
	if out, err := exec.Command(emacs, "--batch", "--eval", `(princ emacs-major-version)`).Output(); err != nil || string(out) < "30" {
		testenv.NeedOrSkip(t, "%s needs Emacs 30 (bookworm-backports), found %q: %v", t.Name(), out, err)
	}
	bin := ripple(t)
	parent := t.TempDir()
	proj := filepath.Join(parent, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "main.py"), []byte(emacsMain), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", proj, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	init, err := filepath.Abs(filepath.Join("emacs", "init.el"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(parent, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(parent, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	shell := fmt.Sprintf("cd %q && env RIPPLE_BIN=%q TMPDIR=%q TERM=xterm-256color %q -nw -Q -l %q proj/main.py",
		parent, bin, tmp, emacs, init)
	tm("new-session", "-d", "-x", "110", "-y", "30", shell)
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	screen := func() string { return tm("capture-pane", "-p") }
	artifacts := filepath.Join("..", "artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	step := 0
	save := func(name string) {
		step++
		s := screen()
		p := filepath.Join(artifacts, fmt.Sprintf("emacs-%d-%s.txt", step, name))
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Errorf("saving the screen: %v", err)
		}
		t.Logf("screen %s:\n%s", name, s)
	}
	waitFor := func(what string, cond func(string) bool) {
		t.Helper()
		var last string
		if !testenv.PollEvery(testenv.Deadline(t), 100*time.Millisecond, func() bool {
			last = screen()
			return cond(last)
		}) {
			t.Fatalf("timed out waiting for %s; the screen:\n%s", what, last)
		}
	}
	lineWith := func(s, code, hint string) bool {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, code) && strings.Contains(l, hint) {
				return true
			}
		}
		return false
	}
	waitFor("the first run's values", func(s string) bool {
		return lineWith(s, "b = a * 7", "= 42") && lineWith(s, "c = b + 1", "= 43") && lineWith(s, "return c", "= 43")
	})
	save("first-run")
	// Type: a = 3 * 2 -> a = 3 * 3 (line 5, last character).
	tm("send-keys", "M-<", "C-n", "C-n", "C-n", "C-n", "C-e", "BSpace", "3")
	// No keystroke after this: the screen must come to show the new run's values.
	waitFor("the edit's values without another keystroke", func(s string) bool {
		return lineWith(s, "b = a * 7", "= 63") && lineWith(s, "c = b + 1", "= 64") && lineWith(s, "return c", "= 64")
	})
	save("after-edit")
	// A syntax error at the end of b's line: its diagnostic appears ...
	tm("send-keys", "C-n", "C-e", " ", "+")
	waitFor("the syntax error's diagnostic", func(s string) bool {
		return strings.Contains(s, "SyntaxError") || strings.Contains(s, "invalid syntax")
	})
	save("syntax-error")
	// ... and goes once the text parses again.
	tm("send-keys", "BSpace", "BSpace")
	waitFor("the diagnostic gone", func(s string) bool {
		// The text is the edit's again: its values, from the cache (≡).
		return !strings.Contains(s, "SyntaxError") && !strings.Contains(s, "invalid syntax") && lineWith(s, "return c", " 64")
	})
	save("fixed")
}
