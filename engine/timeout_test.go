package engine_test

import (
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// ExecuteTimeout is the run's own time: a run that waits for its kernel to
// restart (another context crashed it) and for its module to load (which
// takes longer than the timeout) is not timed out for the wait.
func TestExecuteTimeoutStartsWhenTheKernelIsReady(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{
		// Loading quick takes longer than the timeout: it imports slow.
		"slow.py":  "import time\ntime.sleep(3)\n",
		"crash.py": "import os\n\n\ndef main():\n    os._exit(3)\n",
		"quick.py": "import slow\n\n\ndef main():\n    x = 1\n",
	}, engine.Config{Kernels: 1, Batch: true, ExecuteTimeout: 2 * time.Second})
	must(t, h.e.Compile(h.ctx, []string{"slow", "crash", "quick"}))

	// quick's run is queued behind crash's on the one kernel: it starts
	// when crash has killed the kernel, and waits for the new one.
	crashID, crashMark := h.startContext("crash:main")
	quickID, quickMark := h.startContext("quick:main")
	if crashed := h.client.waitRun(t, crashMark, crashID); crashed.failed == nil || crashed.failed.Kind != protocol.ResultKernelDied {
		t.Fatalf("crash:main ended %+v, want kernelDied", crashed.failed)
	}
	run := h.client.waitRun(t, quickMark, quickID)
	if run.failed != nil {
		t.Fatalf("quick:main ended %+v, want complete", run.failed)
	}
	expect(t, "x", run.updates.Values()["quick:main/x"], "1")
}
