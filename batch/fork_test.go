package batch_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
)

// forkStressTest is a pytest test forking 200 multiprocessing pools of 4
// workers while a thread prints (issue 27: a pool worker forked while a
// kernel thread held a lock, or with the kernel's SIGTERM handler, hung
// `ripple run --tests` with no timeout).
const forkStressTest = `import multiprocessing
import os
import threading
import time


def square(v):
    return v * v


def test_pools_while_a_thread_prints():
    stop = threading.Event()

    def chatter():
        i = 0
        while not stop.is_set():
            print("tick", i)
            i += 1
            time.sleep(0.005)

    thread = threading.Thread(target=chatter, daemon=True)
    thread.start()
    ctx = multiprocessing.get_context("fork")
    total = 0
    for _ in range(200):
        with ctx.Pool(4) as pool:
            total += sum(pool.map(square, range(8)))
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 3
    stop.set()
    thread.join()
    assert total == 28000
`

// The fork stress test under `ripple run --tests`: 0 hangs. A hang is
// killed at testenv.Deadline and fails this test, not the suite.
func TestPytestForkStress(t *testing.T) {
	t.Parallel()
	py := pytestPython(t)
	root := project(t, map[string]string{"test_fork.py": forkStressTest})
	cmd := exec.CommandContext(testenv.Context(t), rippleBin, "run", root, "--tests", "--python", py, "--kernels", "1",
		"--", "-p", "no:cacheprovider")
	cmd.Env = append(os.Environ(), "CI=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ripple run --tests: %v (a hang is killed at the test's deadline)\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "1 passed") {
		t.Errorf("want 1 passed:\n%s\n%s", stdout.String(), stderr.String())
	}
}
