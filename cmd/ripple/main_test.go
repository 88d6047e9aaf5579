package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/kernel"
	"go.uber.org/goleak"
)

// rippleBin is the ripple binary built for the end-to-end tests (watch).
var rippleBin string

func TestMain(m *testing.M) {
	dir, err := buildRipple()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rippleBin = filepath.Join(dir, "ripple")
	leakcheck.Main(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestKernelCheck(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCmd(t, "kernel-check", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.HasPrefix(out, "hello from 3.") {
		t.Errorf("stdout = %q, want the kernel's greeting", out)
	}
	if !strings.Contains(errOut, "ready in") {
		t.Errorf("stderr = %q", errOut)
	}
}

func TestKernelCheckWithPythonFlag(t *testing.T) {
	t.Parallel()
	py, err := kernel.FindPython(context.Background(), "", ".")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "kernel-check", "--python", py.Path, t.TempDir())
	if code != 0 || !strings.HasPrefix(out, "hello from "+py.Version) || !strings.Contains(errOut, py.Path) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestKernelCheckFailures(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"kernel-check", "--python", "/nonexistent/python3", t.TempDir()}, 1, "--python /nonexistent/python3: no such file or directory"},
		{[]string{"kernel-check", "/nonexistent-dir"}, 2, "/nonexistent-dir"},
		{[]string{"kernel-check", file}, 2, "not a directory"},
		{[]string{"kernel-check", "a", "b"}, 2, "at most one directory"},
		{[]string{"kernel-check", "--bogus"}, 2, "bogus"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{nil, 2, "usage"},
	}
	for _, c := range cases {
		code, out, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d naming %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version"} {
		if code, out, _ := runCmd(t, arg); code != 0 || out != "ripple "+version+"\n" {
			t.Errorf("ripple %s: exit %d, stdout %q", arg, code, out)
		}
	}
}

// Every command's -h and --help print its help on stdout and exit 0.
func TestHelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	for _, cmd := range commands {
		for _, flag := range []string{"-h", "--help"} {
			code, out, errOut := runCmd(t, cmd, flag)
			if code != 0 || errOut != "" || !strings.Contains(out, cmd) {
				t.Errorf("ripple %s %s: exit %d, stdout %q, stderr %q; want its help on stdout and exit 0", cmd, flag, code, out, errOut)
			}
		}
	}
	// Help after other arguments too, and not after "--".
	if code, out, _ := runCmd(t, "watch", t.TempDir(), "--help"); code != 0 || !strings.Contains(out, "-entry") {
		t.Errorf("ripple watch DIR --help: exit %d, stdout %q", code, out)
	}
}
