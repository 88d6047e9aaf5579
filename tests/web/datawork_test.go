package web

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
)

// dataworkProject is TestBrowserDataWork's project: main.py shows a
// DataFrame, Markdown and LaTeX, prints colours and a "\r", has a
// 120-character line; big.py prints 10,000 lines, stream.py 1 MB/s for
// 4 s; helpers.py is another file to switch to.
var dataworkProject = map[string]string{
	"main.py": `import pandas as pd
from ripple import display


class Md:
    def __init__(self, text):
        self.text = text

    def _repr_markdown_(self):
        return self.text


class Tex:
    def _repr_latex_(self):
        return r"$$\frac{a^2}{b}$$"


df = pd.DataFrame({"fruit": ["apple", "pear", "plum"], "weight_kg": [3, 5, 2]})
display(df)
display(Md("# Title\n\nSome *emphasis*."))
display(Tex())
print("\x1b[31mred\x1b[0m and plain")
print("loading.....\rdone")
note = "` + strings.Repeat("n", 120-len(`note = ""`)) + `"
total = int(df["weight_kg"].sum())
extra = total + 1
`,
	"big.py": `n = 10000
for i in range(n):
    print("line", i)
done = n
`,
	"stream.py": `import time

chunk = ("y" * 99 + "\n") * 1000
for k in range(40):
    print(chunk, end="")
    time.sleep(0.1)
streamed = 40
`,
	"bare.py": `import pandas as pd

df = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
df
`,
	"ask.py": `def ask():
    try:
        return input("name? ")
    except EOFError as e:
        return str(e)


answer = ask()
`,
	"helpers.py": `def double(x):
    y = 2 * x
    return y


def inner(n):
    return 1 / n


def fail(n):
    r = inner(n)
    return r
`,
}

// TestBrowserDataWork runs datawork.mjs (issue 29) against ripple serve on
// Debian's python3 with pandas and jedi: rich outputs as in a notebook,
// values in view at 1280 px, frames loaded once, completion of a
// DataFrame column, comment, find, docs, autosave on a file switch, two
// tabs typing at once, a 10,000-line print and a 1 MB/s stream, dark mode
// and screenshots (tests/artifacts/datawork-*.png).
func TestBrowserDataWork(t *testing.T) {
	node := needNode(t)
	needBrowser(t)
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import pandas, jedi").Run(); err != nil {
		testenv.NeedOrSkip(t, "%s lacks pandas or jedi (.ci/run installs them): %v", python, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := buildRipple(ctx, t)
	project := writeProject(t, dataworkProject)
	artifacts := artifactsDir(t)
	page, srv := servePage(ctx, t, bin, nil, "--kernels", "1", "--python", python, "--token", "datawork-token", project)
	// The script prints STOP when the server is to go (its last step: the
	// page finds out and says where its unsaved text is).
	cmd := exec.CommandContext(ctx, node, "datawork.mjs", page, project, artifacts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	var runErr error
	deadline, _ := ctx.Deadline()
	testenv.PollEvery(deadline, 20*time.Millisecond, func() bool {
		select {
		case runErr = <-done:
			return true
		default:
		}
		if !stopped && strings.Contains(out.String(), "STOP\n") {
			stopped = true
			srv.interrupt()
		}
		return false
	})
	t.Logf("datawork.mjs:\n%s", out.String())
	if runErr != nil {
		t.Fatalf("datawork.mjs failed (%v); see the log above and %s", runErr, filepath.Join(artifacts, "datawork-failure.png"))
	}
	if !stopped {
		t.Error("datawork.mjs ended without the server-gone step")
	}
	for _, w := range []string{"1024", "1440", "1920"} {
		for _, scheme := range []string{"light", "dark"} {
			if _, err := os.Stat(filepath.Join(artifacts, "datawork-"+w+"-"+scheme+".png")); err != nil {
				t.Errorf("no screenshot: %v", err)
			}
		}
	}
}

// TestPageTerminalAndMerge runs termcheck.mjs: the page's terminal model
// ("\r", "\b", ANSI colours, erase, escapes cut between chunks, 10,000
// lines) and its merge of another client's edit into unsent typing (both
// texts kept, 2,000 random pairs).
func TestPageTerminalAndMerge(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stdout, stderr, err := runNode(ctx, node, nil, "termcheck.mjs")
	if err != nil {
		t.Fatalf("node termcheck.mjs: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("%s", stdout)
}
