package engine_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// A launcher's remembered answer is confirmed in the background, while
// the server already runs on it; when the launcher has switched
// interpreters since (pyenv local 3.12), the kernels are restarted on the
// one it names now, and the contexts re-run there.
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
	// environment and the project directory (a version file). It answers
	// only once the gate file exists, so that the test decides when the
	// engine hears from it.
	choice := filepath.Join(tmp, "version")
	gate := filepath.Join(tmp, "gate")
	shim := filepath.Join(tmp, "shim", "python3")
	write(t, filepath.Dir(shim), "python3", "#!/bin/sh\nwhile [ ! -e "+gate+" ]; do sleep 0.02; done\nexec \"$(cat "+choice+")\" \"$@\"\n")
	write(t, tmp, "gate", "")
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
	if err := os.Remove(gate); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, e: enginetest.Start(t, dir, engine.Config{Python: shim}), dir: dir, client: newRecorder(), ctx: ctx}
	if _, err := h.e.Connect(ctx, clientID, h.client); err != nil {
		t.Fatal(err)
	}
	// The server did not wait for the launcher: it runs on what the
	// launcher named last time.
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run: %+v", run.failed)
	}
	if got, want := run.updates.Values()["main:main/exe"], "'"+real.Path+"'"; got != want {
		t.Fatalf("before the launcher answered, the kernel runs %s, want %s", got, want)
	}
	m := h.client.mark()
	write(t, tmp, "gate", "")
	restarted := h.client.waitFrom(t, m, "runtime/kernelRestarted", isRestarted)
	kr := restarted[len(restarted)-1].Params.(protocol.KernelRestartedParams)
	if kr.StatePreserved || !slices.Contains(kr.ContextIDs, id) || !strings.Contains(kr.Reason, other) {
		t.Errorf("kernelRestarted %+v, want context %s, statePreserved false and a reason naming %s", kr, id, other)
	}
	if got := h.e.Python().Path; got != other {
		t.Fatalf("engine python %s, want %s (the launcher's current choice)", got, other)
	}
	rerun := h.client.waitRun(t, m+len(restarted), id)
	if got, want := rerun.updates.Values()["main:main/exe"], "'"+other+"'"; got != want {
		t.Fatalf("after the launcher answered, the kernel runs %s, want %s", got, want)
	}
	// No kernel of the old interpreter is left: the warm spare started on
	// it is replaced too.
	var old []int
	if !testenv.Poll(time.Now().Add(30*time.Second), func() bool {
		old = kernelsRunning(t, dir, real.Path)
		return len(old) == 0
	}) {
		t.Fatalf("kernels still running %s: pids %v", real.Path, old)
	}
}

// kernelsRunning lists the processes working in dir (kernels run from the
// project root) whose program is python.
func kernelsRunning(t *testing.T, dir, python string) []int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || cwd != dir {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, append([]byte(python), 0)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(p))
		out = append(out, pid)
	}
	return out
}
