package kernel_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestPythonEngine runs the Python test suite of the execution engine
// (kernel/python/tests: the acceptance scenarios, analysis tables and the
// randomized differential test of the caching invariant) with python3 and
// fails with its output when it fails.
func TestPythonEngine(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found on PATH: %v", err)
	}
	dir, err := filepath.Abs(filepath.Join("python", "tests"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "discover", "-s", dir, "-t", dir, "-p", "test_*.py")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python engine tests failed (%v):\n%s", err, out)
	}
	t.Logf("python engine tests:\n%s", lastLines(string(out), 5))
}

func lastLines(s string, n int) string {
	end := len(s)
	for end > 0 && s[end-1] == '\n' {
		end--
	}
	start := end
	for count := 0; start > 0; start-- {
		if s[start-1] == '\n' {
			count++
			if count == n {
				break
			}
		}
	}
	return s[start:end]
}
