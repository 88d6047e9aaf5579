package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/kernel"
)

// A launcher's remembered answer is confirmed while the kernels start;
// when the launcher has switched interpreters since (pyenv local 3.12),
// the kernels run on the one it names now.
func TestLauncherSwitchedInterpreterSinceLastStart(t *testing.T) {
	// Not parallel: the interpreter cache is moved to a temp dir.
	if _, err := kernel.ScriptDir(); err != nil { // installed where it stays
		t.Fatal(err)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	tmp := t.TempDir()
	real, err := kernel.FindPython(ctx, "", tmp)
	if err != nil {
		t.Fatal(err)
	}
	// Another interpreter: a venv's python reports its own path.
	venv := filepath.Join(tmp, "venv")
	if out, err := exec.Command(real.Path, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Fatalf("python -m venv: %v\n%s", err, out)
	}
	other := filepath.Join(venv, "bin", "python")
	// A launcher like a pyenv shim: what it runs is chosen outside the
	// environment and the project directory (a version file).
	choice := filepath.Join(tmp, "version")
	shim := filepath.Join(tmp, "shim", "python3")
	write(t, filepath.Dir(shim), "python3", "#!/bin/sh\nexec \"$(cat "+choice+")\" \"$@\"\n")
	if err := os.Chmod(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "project")
	write(t, dir, "main.py", "import sys\n\ndef main():\n    exe = sys.executable\n")
	if err := os.WriteFile(choice, []byte(real.Path), 0o644); err != nil {
		t.Fatal(err)
	}
	if py, err := kernel.FindPython(ctx, shim, dir); err != nil || py.Path != real.Path {
		t.Fatalf("FindPython(shim) = %+v, %v; want %s", py, err, real.Path)
	}
	if _, confirm, _ := kernel.FindPythonQuick(ctx, shim, dir); confirm == nil {
		t.Fatal("the launcher's answer was not remembered")
	}

	if err := os.WriteFile(choice, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: enginetest.Start(t, dir, engine.Config{Python: shim}), dir: dir, client: newRecorder(), ctx: ctx}
	if _, err := h.e.Connect(ctx, clientID, h.client); err != nil {
		t.Fatal(err)
	}
	if got := h.e.Python().Path; got != other {
		t.Fatalf("engine python %s, want %s (the launcher's current choice)", got, other)
	}
	_, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run: %+v", run.failed)
	}
	if got, want := run.updates.Values()["main:main/exe"], "'"+other+"'"; got != want {
		t.Fatalf("the kernel runs %s, want %s", got, want)
	}
}
