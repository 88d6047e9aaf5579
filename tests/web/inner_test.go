package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
)

// innerProject is TestBrowserInnerValues's project: a script whose top
// level has a for loop, an if and a try.
var innerProject = map[string]string{
	"main.py": `total = 0
for i in range(10):
    sq = i * i
    total += sq
if total > 100:
    big = "big " + str(total)
try:
    ratio = total / 3
except ZeroDivisionError:
    ratio = None
done = total
`,
}

// TestBrowserInnerValues runs inner.mjs (issue 29, values in nested
// blocks): the statements inside for, if and try bodies show their last
// values beside their lines, with the iteration count of a loop's.
func TestBrowserInnerValues(t *testing.T) {
	node := needNode(t)
	needBrowser(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := buildRipple(ctx, t)
	project := writeProject(t, innerProject)
	artifacts := artifactsDir(t)
	srv := exec.Command(bin, "serve", "--kernels", "1", "--token", "inner-token", project)
	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	srv.Stdout, srv.Stderr = stdout, stderr
	srv.WaitDelay = 10 * time.Second
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	defer func() {
		srv.Process.Signal(syscall.SIGINT)
		if err := <-exited; err != nil {
			t.Errorf("ripple serve after SIGINT: %v", err)
		}
		if t.Failed() {
			t.Logf("ripple serve stderr:\n%s", stderr.String())
		}
	}()
	page := waitPageURL(ctx, t, stdout, exited)
	out, errOut, err := runNode(ctx, node, nil, "inner.mjs", page, project, artifacts)
	t.Logf("inner.mjs:\n%s%s", out, errOut)
	if err != nil {
		t.Fatalf("inner.mjs failed (%v); see the log above and %s", err, filepath.Join(artifacts, "inner-failure.png"))
	}
	if _, err := os.Stat(filepath.Join(artifacts, "inner-values.png")); err != nil {
		t.Errorf("no screenshot: %v", err)
	}
}
