package engine_test

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
)

// forkStress is a statement forking 200 multiprocessing pools of 4 workers
// (the fork start method) while two threads print: one the statement
// starts and one an earlier statement started (its output is sent by the
// thread itself, under the kernel's connection lock). A worker forked
// while another kernel thread held a lock used to wait on it forever.
const forkStress = `import multiprocessing
import os
import subprocess
import sys
import threading
import time

stop = threading.Event()


def square(v):
    print("w", v)
    return v * v


def chatter(tag):
    i = 0
    while not stop.is_set():
        print(tag, i)
        i += 1
        time.sleep(0.005)


def main():
    early = threading.Thread(target=chatter, args=("early",), daemon=True)
    early.start()
    pools = run_pools()
    stop.set()
    early.join()


def run_pools():
    late = threading.Thread(target=chatter, args=("late",), daemon=True)
    late.start()
    ctx = multiprocessing.get_context("fork")
    total = 0
    for _ in range(200):
        with ctx.Pool(4) as pool:
            total += sum(pool.map(square, range(8)))
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            print("child", os.getpid())
            os._exit(7)
        total += os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        total += subprocess.run([sys.executable, "-c", "print('sub')"]).returncode
    return total
`

// The fork stress test of issue 27: 0 hangs. A hang fails this test at
// testenv.Deadline (waitRun), not the suite.
func TestForkStressInAStatement(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": forkStress}, engine.Config{})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	if got := run.updates.Values()["main:main/pools"]; got != "28140" {
		t.Errorf("pools = %q, want 28140 (context %s)", got, id)
	}
	for _, want := range []string{"w 7\n", "child ", "sub\n", "late "} {
		if !strings.Contains(run.output, want) {
			t.Errorf("no %q in %d bytes of output", want, len(run.output))
		}
	}
}
