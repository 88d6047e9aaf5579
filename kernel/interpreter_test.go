package kernel

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakePython writes an executable shell script standing in for Python.
func fakePython(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindPythonResolvesLaunchers(t *testing.T) {
	t.Parallel()
	real := python(t)
	// A launcher script like a pyenv shim: FindPython must see through it.
	shim := fakePython(t, t.TempDir(), "python3", `exec "`+real.Path+`" "$@"`)
	got, err := FindPython(context.Background(), shim, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got.Path != real.Path || got.Version != real.Version {
		t.Errorf("FindPython(shim) = %+v, want %+v", got, real)
	}
	if !versionAtLeast(got.Version, MinPython) {
		t.Errorf("version %s", got.Version)
	}
}

func TestFindPythonOrder(t *testing.T) {
	// Not parallel: it changes the environment.
	real := python(t)
	ctx := context.Background()
	root := t.TempDir()
	venv := filepath.Join(root, ".venv", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(venv), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real.Path, venv); err != nil {
		t.Fatal(err)
	}
	onPath := fakePython(t, t.TempDir(), "python3", `exec "`+real.Path+`" "$@"`)
	t.Setenv("PATH", filepath.Dir(onPath))

	// 3. the project's .venv beats PATH.
	t.Setenv("RIPPLE_PYTHON", "")
	got, err := FindPython(ctx, "", root)
	if err != nil || got.Path != venv {
		t.Errorf("with a .venv: %+v, %v; want %s", got, err, venv)
	}
	// 3. venv/ is found like .venv/ (and .venv/ first when both exist).
	root2 := t.TempDir()
	plain := filepath.Join(root2, "venv", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(plain), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real.Path, plain); err != nil {
		t.Fatal(err)
	}
	got, err = FindPython(ctx, "", root2)
	if err != nil || got.Path != plain {
		t.Errorf("with a venv/: %+v, %v; want %s", got, err, plain)
	}
	// 4. python3 on PATH without a .venv.
	got, err = FindPython(ctx, "", t.TempDir())
	if err != nil || got.Path != real.Path {
		t.Errorf("from PATH: %+v, %v; want %s", got, err, real.Path)
	}
	// 2. RIPPLE_PYTHON beats the .venv.
	env := fakePython(t, t.TempDir(), "py", `echo /from/env; echo 3.12.1`)
	t.Setenv("RIPPLE_PYTHON", env)
	got, err = FindPython(ctx, "", root)
	if err != nil || got.Path != "/from/env" {
		t.Errorf("RIPPLE_PYTHON: %+v, %v", got, err)
	}
	// 1. the flag beats everything.
	flag := fakePython(t, t.TempDir(), "py", `echo /from/flag; echo 3.9.0`)
	got, err = FindPython(ctx, flag, root)
	if err != nil || got.Path != "/from/flag" || got.Version != "3.9.0" {
		t.Errorf("--python: %+v, %v", got, err)
	}
	// No Python at all.
	t.Setenv("RIPPLE_PYTHON", "")
	t.Setenv("PATH", t.TempDir())
	_, err = FindPython(ctx, "", t.TempDir())
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "no python3 on PATH") {
		t.Errorf("nothing found: %v", err)
	}
}

func TestFindPythonRejectsBadInterpreters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, body string
		want       []string
	}{
		{"old", `echo /usr/bin/python3.8; echo 3.8.10`, []string{"3.8.10", ">= 3.9"}},
		{"failing", `echo "boom: broken install" >&2; exit 1`, []string{"boom: broken install", "exit status 1"}},
		{"not python", `echo hello`, []string{"does not look like Python"}},
		{"odd version", `echo /x; echo three.nine`, []string{"three.nine"}},
	}
	for _, c := range cases {
		path := fakePython(t, dir, c.name, c.body)
		_, err := FindPython(context.Background(), path, dir)
		if !errors.Is(err, ErrNoPython) {
			t.Errorf("%s: err = %v, want ErrNoPython", c.name, err)
			continue
		}
		for _, w := range append(c.want, "--python "+path) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
	missing := filepath.Join(dir, "no-such-python")
	_, err := FindPython(context.Background(), missing, dir)
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing: %v", err)
	}
}

func TestBrokenVenvIsAnErrorNotAFallback(t *testing.T) {
	t.Setenv("RIPPLE_PYTHON", "")
	root := t.TempDir()
	fakePython(t, filepath.Join(root, ".venv", "bin"), "python", `exit 7`)
	_, err := FindPython(context.Background(), "", root)
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), ".venv") {
		t.Errorf("err = %v, want one naming the .venv", err)
	}
}

func TestVersionAtLeast(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v, min string
		want   bool
	}{
		{"3.9.0", "3.9", true}, {"3.10.1", "3.9", true}, {"3.8.18", "3.9", false},
		{"4.0.0", "3.9", true}, {"2.7.18", "3.9", false}, {"3", "3.9", false}, {"3.x", "3.9", false},
	}
	for _, c := range cases {
		if got := versionAtLeast(c.v, c.min); got != c.want {
			t.Errorf("versionAtLeast(%q, %q) = %v", c.v, c.min, got)
		}
	}
}

// countingPython is a fake interpreter that answers the probe as
// interpreter exe and counts how often it was run.
func countingPython(t *testing.T, dir, exe string) (path, counter string) {
	t.Helper()
	counter = filepath.Join(dir, "runs")
	path = fakePython(t, dir, "python3", `echo x >> "`+counter+`"; echo "`+exe+`"; echo 3.11.0`)
	if exe == "" {
		path = fakePython(t, dir, "python3", `echo x >> "`+counter+`"; echo "$0"; echo 3.11.0`)
	}
	return path, counter
}

func runs(t *testing.T, counter string) int {
	t.Helper()
	data, err := os.ReadFile(counter)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return strings.Count(string(data), "x")
}

// An interpreter that is its own sys.executable is probed once; changing
// the file probes it again.
func TestFindPythonRemembersRealInterpreters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	py, counter := countingPython(t, dir, "")
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		got, err := FindPython(ctx, py, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got.Path != py || got.Version != "3.11.0" {
			t.Fatalf("FindPython = %+v", got)
		}
	}
	if n := runs(t, counter); n != 1 {
		t.Errorf("probed %d times, want once", n)
	}
	// A new interpreter in the same place (another size) is probed again.
	if err := os.WriteFile(py, []byte("#!/bin/sh\necho x >> \""+counter+"\"; echo \"$0\"; echo 3.12.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := FindPython(ctx, py, dir)
	if err != nil || got.Version != "3.12.0" {
		t.Fatalf("after a change: %+v, %v, want 3.12.0", got, err)
	}
	if n := runs(t, counter); n != 2 {
		t.Errorf("probed %d times after the change, want 2", n)
	}
}

// A launcher (its sys.executable is another file, like a pyenv shim whose
// answer depends on the directory) is probed every time.
func TestFindPythonProbesLaunchersEveryTime(t *testing.T) {
	t.Parallel()
	real := python(t)
	dir := t.TempDir()
	shim, counter := countingPython(t, dir, real.Path)
	for i := 0; i < 3; i++ {
		if got, err := FindPython(context.Background(), shim, dir); err != nil || got.Path != real.Path {
			t.Fatalf("FindPython(shim) = %+v, %v", got, err)
		}
	}
	if n := runs(t, counter); n != 3 {
		t.Errorf("launcher probed %d times, want 3", n)
	}
}

// FindPythonQuick hands out a launcher's remembered answer at once, for
// the same project and environment only, with a confirm that asks the
// launcher again; without a remembered answer it is FindPython.
func TestFindPythonQuickRemembersLaunchersPerProject(t *testing.T) {
	// Not parallel: it changes the environment.
	dir := t.TempDir()
	shim, counter := countingPython(t, dir, python(t).Path)
	real := Interpreter{Path: python(t).Path, Version: "3.11.0"} // what the shim says
	ctx := context.Background()

	got, confirm, err := FindPythonQuick(ctx, shim, dir)
	if err != nil || got != real || confirm != nil {
		t.Fatalf("first FindPythonQuick = %+v, confirm %v, %v; want a probe's answer %+v and no confirm", got, confirm != nil, err, real)
	}
	if n := runs(t, counter); n != 1 {
		t.Fatalf("launcher probed %d times, want 1", n)
	}
	got, confirm, err = FindPythonQuick(ctx, shim, dir)
	if err != nil || got != real || confirm == nil {
		t.Fatalf("second FindPythonQuick = %+v, confirm %v, %v; want the remembered %+v and a confirm", got, confirm != nil, err, real)
	}
	if n := runs(t, counter); n != 1 {
		t.Fatalf("launcher probed %d times before confirm, want still 1", n)
	}
	if again, err := confirm(ctx); err != nil || again != real {
		t.Fatalf("confirm = %+v, %v", again, err)
	}
	if n := runs(t, counter); n != 2 {
		t.Fatalf("confirm probed the launcher %d times in all, want 2", n)
	}
	// Another project, or another pyenv version asked for, is asked.
	if _, confirm, _ := FindPythonQuick(ctx, shim, t.TempDir()); confirm != nil {
		t.Error("a launcher's answer for one project was used for another")
	}
	t.Setenv("PYENV_VERSION", "3.99.0")
	if _, confirm, _ := FindPythonQuick(ctx, shim, dir); confirm != nil {
		t.Error("a launcher's answer was used after PYENV_VERSION changed")
	}
	// FindPython itself still asks the launcher every time.
	before := runs(t, counter)
	if _, err := FindPython(ctx, shim, dir); err != nil {
		t.Fatal(err)
	}
	if n := runs(t, counter); n != before+1 {
		t.Errorf("FindPython of a launcher probed %d times, want 1", n-before)
	}
}

// A remembered answer naming an interpreter that has changed since is not
// handed out.
func TestFindPythonQuickForgetsChangedInterpreters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The "interpreter" the launcher names is itself a fake, so the test
	// can change it.
	exe, _ := countingPython(t, filepath.Join(dir, "exe"), "")
	shim, _ := countingPython(t, filepath.Join(dir, "shim"), exe)
	ctx := context.Background()
	if _, _, err := FindPythonQuick(ctx, shim, dir); err != nil {
		t.Fatal(err)
	}
	if _, confirm, _ := FindPythonQuick(ctx, shim, dir); confirm == nil {
		t.Fatal("the launcher's answer was not remembered")
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"$0\"; echo 3.12.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, confirm, _ := FindPythonQuick(ctx, shim, dir); confirm != nil {
		t.Error("the answer was handed out after the interpreter it names changed")
	}
}

// A launcher script still open for writing somewhere (a process forked
// while it was written holds it until it execs: golang.org/issue/22315)
// fails to start with ETXTBSY for a moment; the probe tries again.
func TestProbeRetriesABusyLauncher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := filepath.Join(dir, "python3")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"$0\"; echo 3.12.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(exe, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(30*time.Millisecond, func() { w.Close() })
	defer release.Stop()
	py, err := FindPython(context.Background(), exe, dir)
	if err != nil || py.Version != "3.12.0" {
		t.Fatalf("FindPython while the launcher was busy: %+v, %v", py, err)
	}
}
