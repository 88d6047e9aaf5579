package batch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/batch"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
)

// fixture is a project of the ways a test can end: passing, failing,
// raising, crashing (os._exit, segfault), hanging (ignoring SIGINT) and
// printing tests, a module with a syntax error and one importing a broken
// module. Tests only read it.
const fixture = "testdata/project"

// project writes files into a new temporary project and returns its root.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		writeFile(t, dir, name, text)
	}
	return dir
}

// writeFile writes one file of a project.
func writeFile(tb testing.TB, root, name, text string) {
	tb.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// python is the interpreter the tests' engines use.
func python(t *testing.T) kernel.Interpreter {
	t.Helper()
	py, err := kernel.FindPython(context.Background(), "", ".")
	if err != nil {
		t.Fatal(err)
	}
	return py
}

// run runs a project in-process and fails the test on an error.
func run(t *testing.T, opts batch.Options) *batch.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := batch.Run(ctx, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// byID indexes a report's results by entry id.
func byID(rep *batch.Report) map[string]*batch.Result {
	m := make(map[string]*batch.Result, len(rep.Results))
	for _, r := range rep.Results {
		m[r.Entry.ID()] = r
	}
	return m
}

// outline is a report's results as "id status" lines, in report order.
func outline(rep *batch.Report) string {
	var b strings.Builder
	for _, r := range rep.Results {
		b.WriteString(r.Entry.ID() + " " + string(r.Status) + "\n")
	}
	return b.String()
}

// recorder is an Observer that keeps what it was told.
type recorder struct {
	started  int
	kernels  int
	results  []*batch.Result
	progress []batch.Progress
}

func (r *recorder) Started(entries []batch.Entry, kernels int) {
	r.started, r.kernels = len(entries), kernels
}
func (r *recorder) Result(res *batch.Result)  { r.results = append(r.results, res) }
func (r *recorder) Progress(p batch.Progress) { r.progress = append(r.progress, p) }

// sleepyTests is a project of n test functions in two modules; test i
// sleeps longer the earlier it comes, so that with several kernels the
// entries end in another order than the report's. Every fourth fails.
func sleepyTests(n int) map[string]string {
	var a, b strings.Builder
	a.WriteString("import time\n")
	b.WriteString("import time\n")
	for i := range n {
		w := &a
		if i%2 == 1 {
			w = &b
		}
		fmt.Fprintf(w, "\n\ndef test_%03d():\n    time.sleep(%.2f)\n    value = %d\n", i, float64(n-i)*0.01, i)
		if i%4 == 3 {
			w.WriteString("    assert value % 2 == 0\n")
		}
	}
	return map[string]string{"test_a.py": a.String(), "test_b.py": b.String()}
}

// pytestPython is an interpreter that can import pytest: $RIPPLE_PYTEST_PYTHON,
// else Debian's /usr/bin/python3 (apt's python3-pytest). Without one the
// test is skipped, except under CI, which installs it (testenv.NeedOrSkip).
func pytestPython(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("RIPPLE_PYTEST_PYTHON"), "/usr/bin/python3"} {
		if p == "" {
			continue
		}
		if err := exec.Command(p, "-c", "import pytest").Run(); err == nil {
			return p
		}
	}
	testenv.NeedOrSkip(t, "no python3 with pytest (apt install python3-pytest, or set RIPPLE_PYTEST_PYTHON)")
	return ""
}
