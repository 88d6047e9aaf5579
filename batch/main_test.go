package batch_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"go.uber.org/goleak"
)

// rippleBin is the ripple binary the command-line tests run, built once
// by TestMain into a temporary directory.
var rippleBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ripple-batch-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rippleBin = filepath.Join(dir, "ripple")
	build := exec.Command("go", "build", "-race", "-o", rippleBin, "github.com/ripple-run/ripple/cmd/ripple")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build ripple:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	leakcheck.Main(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
