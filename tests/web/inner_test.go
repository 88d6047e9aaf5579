package web

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
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
	page, _ := servePage(ctx, t, bin, nil, "--kernels", "1", "--token", "inner-token", project)
	out, errOut, err := runNode(ctx, node, nil, "inner.mjs", page, project, artifacts)
	t.Logf("inner.mjs:\n%s%s", out, errOut)
	if err != nil {
		t.Fatalf("inner.mjs failed (%v); see the log above and %s", err, filepath.Join(artifacts, "inner-failure.png"))
	}
	if _, err := os.Stat(filepath.Join(artifacts, "inner-values.png")); err != nil {
		t.Errorf("no screenshot: %v", err)
	}
}
