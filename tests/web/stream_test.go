package web

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// streamProgram prints 1 MB/s for 6 s: every 20 ms, 200 lines of about
// 100 bytes (one in ten with a colour), paced by the clock, 60,000 lines
// in all.
const streamProgram = `import time

rest = "y" * 90
start = time.monotonic()
for k in range(300):
    block = "".join(("\x1b[32m%08d\x1b[0m " if n % 10 == 0 else "%08d ") % (k * 200 + n) + rest + "\n" for n in range(200))
    print(block, end="")
    ahead = start + (k + 1) * 0.02 - time.monotonic()
    if ahead > 0:
        time.sleep(ahead)
streamed = 300 * 200
`

// streamProject is TestBrowserStream's project: stream.py and traced.py
// stream (two files: a module's second run would come from the cache,
// printing nothing), big.py prints 10,000 lines at once.
var streamProject = map[string]string{
	"main.py":   "base = 1000\nvalue = base + 0\n",
	"stream.py": streamProgram,
	"traced.py": streamProgram,
	"big.py": `n = 10000
for i in range(n):
    print("line", i)
done = n
`,
}

// TestBrowserStream runs stream.mjs (issue 29: the page stays responsive
// while 1 MB/s of output streams) against ripple serve: a terminal's paint
// forces no layout, each frame puts a bounded number of lines into the
// DOM, CodeMirror re-measures the output's line widget only when its
// height changes, the DOM keeps a window of lines. Long tasks and
// main-thread time are logged as FIGURE lines, not asserted (the machine
// is shared: wall times are the load's as much as the page's).
func TestBrowserStream(t *testing.T) {
	node := needNode(t)
	needBrowser(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := buildRipple(ctx, t)
	project := writeProject(t, streamProject)
	artifacts := artifactsDir(t)
	page, _ := servePage(ctx, t, bin, nil, "--kernels", "1", "--python", "/usr/bin/python3", "--token", "stream-token", project)
	out, errOut, err := runNode(ctx, node, nil, "stream.mjs", page, artifacts)
	t.Logf("stream.mjs:\n%s%s", out, errOut)
	if err != nil {
		t.Fatalf("stream.mjs failed (%v); see the log above and %s", err, filepath.Join(artifacts, "stream-failure.png"))
	}
}
