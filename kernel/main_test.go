package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as a helper process instead of
// running tests (see runHelper).
const helperEnv = "RIPPLE_KERNEL_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper(os.Getenv(helperEnv)))
	}
	// Tests remember interpreters in a cache of their own, not the user's.
	cacheDir, err := os.MkdirTemp("", "ripple-kernel-test-cache-")
	if err != nil {
		panic(err)
	}
	probeCache.path = func() string { return filepath.Join(cacheDir, "interpreters.json") }
	// Resolve the interpreter before any test changes the environment:
	// RIPPLE_PYTHON=... go test runs the suite on another Python.
	testPython()
	leakcheck.Main(m, goleak.Cleanup(func(int) { os.RemoveAll(cacheDir) }))
}

// runHelper plays a server process for tests that must kill one:
// "hold-kernel" starts a kernel in $RIPPLE_TEST_ROOT, prints its pid and
// the pid of a child process the kernel started, and waits to be killed.
func runHelper(mode string) int {
	if mode != "hold-kernel" {
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
	ctx := context.Background()
	py, err := FindPython(ctx, "", ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	k, err := Start(ctx, Config{Python: py, Root: os.Getenv("RIPPLE_TEST_ROOT"), LogDir: os.Getenv("RIPPLE_TEST_ROOT")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	child, err := k.Repr(ctx, "__import__('subprocess').Popen(['sleep', '600']).pid", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Two that leave the kernel's process group: setsid(), and an orphan
	// (its parent, a shell, has exited).
	setsid, err := k.Repr(ctx, "__import__('subprocess').Popen(['sleep', '600'], start_new_session=True).pid", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	orphan, err := k.Repr(ctx, "__import__('subprocess').run([__import__('sys').executable, '-c', "+
		"'import os, subprocess; os.setsid(); print(subprocess.Popen([\"sleep\", \"600\"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)'], "+
		"capture_output=True, text=True).stdout.strip()", nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("kernel %d child %s setsid %s orphan %s\n", k.PID(), child, setsid, strings.Trim(orphan, "'"))
	select {} // until SIGKILL
}

var testPython = sync.OnceValues(func() (Interpreter, error) {
	return FindPython(context.Background(), "", ".")
})

// python returns the interpreter the tests run kernels on.
func python(t testing.TB) Interpreter {
	t.Helper()
	p, err := testPython()
	if err != nil {
		t.Fatalf("no python for the tests: %v", err)
	}
	return p
}
