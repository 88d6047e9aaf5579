package web

import (
	"bytes"
	"context"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/workspace"
)

// chromiumPath is Debian's chromium (RIPPLE_CHROMIUM overrides it).
func chromiumPath() string {
	if p := os.Getenv("RIPPLE_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// needNode returns the node binary, or skips the test loudly, under CI
// too: .ci/run installs node when it can and says so when it cannot.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("SKIPPED, NOT RUN: %s needs node on PATH (bash .ci/run installs the browser test's tools): %v", t.Name(), err)
	}
	return node
}

// needBrowser skips the test loudly unless chromium and playwright-core
// are installed.
func needBrowser(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath()); err != nil {
		t.Skipf("SKIPPED, NOT RUN: the browser test needs chromium (apt-get install chromium; bash .ci/run does it): %v", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", "playwright-core", "package.json")); err != nil {
		t.Skipf("SKIPPED, NOT RUN: the browser test needs playwright-core (npm ci in tests/web; bash .ci/run does it): %v", err)
	}
}

// runNode runs a node script in this directory with stdin and a deadline;
// the script and its children (chromium) are one process group, killed
// together if the deadline passes.
func runNode(ctx context.Context, node string, stdin []byte, args ...string) (stdout, stderr []byte, err error) {
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}

// TestPageTextAndVersionsMatchTheServer runs the page's own diff, edit and
// version code (text.js, sha3.js) in node and checks that the server's
// buffer code accepts every edit it makes with the version it computes:
// the page's SHA3-224 equals crypto/sha3, and each edit, applied by the
// real workspace with those versions, gives the text the page has.
func TestPageTextAndVersionsMatchTheServer(t *testing.T) {
	t.Parallel()
	node := needNode(t)

	var hashes []string
	for n := 0; n <= 300; n += 7 {
		hashes = append(hashes, strings.Repeat("a", n), strings.Repeat("é", n))
	}
	hashes = append(hashes, strings.Repeat("x", 143), strings.Repeat("x", 144), strings.Repeat("x", 145), "123456789", "😀\r\n中")

	// Pairs of texts: before, and after a random edit. The pieces are what
	// makes positions hard: line ends of both kinds, a lone \r, characters
	// outside the BMP (two UTF-16 units, one code point), combining marks.
	pieces := []string{"a", "b", "x = 1", " ", "\t", "\n", "\r\n", "\r", "é", "e\u0301", "中", "😀", "🍐", "\"", "#"}
	rng := rand.New(rand.NewPCG(8, 2026))
	randText := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	type pair [2]string
	pairs := []pair{
		{"", "a"}, {"a", ""}, {"a\r\nb", "a\r\n\r\nb"}, {"a\r\nb", "ab"}, {"😀😀", "😀🍐😀"},
		{"x\r\n", "x\n"}, {"\r\n", "\r\r\n"}, {"🍐", "🍐🍐"}, {"a\rb", "a\r\nb"}, {"same", "same"},
	}
	for range 400 {
		before := randText(rng.IntN(30))
		after := before
		if rng.IntN(5) == 0 {
			after = randText(rng.IntN(30))
		} else {
			// Splice at piece boundaries: take a random prefix and suffix
			// of before (by pieces, rebuilt) around new text.
			cut := func(s string) int { // a valid UTF-8 boundary, not inside \r\n
				for {
					i := rng.IntN(len(s) + 1)
					if (i == len(s) || (s[i]&0xC0) != 0x80) && !(i > 0 && i < len(s) && s[i-1] == '\r' && s[i] == '\n') {
						return i
					}
				}
			}
			i, j := cut(before), cut(before)
			if i > j {
				i, j = j, i
			}
			after = before[:i] + randText(rng.IntN(4)) + before[j:]
		}
		pairs = append(pairs, pair{before, after})
	}

	in, err := json.Marshal(map[string]any{"hash": hashes, "pairs": pairs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stdout, stderr, err := runNode(ctx, node, in, "jscheck.mjs")
	if err != nil {
		t.Fatalf("node jscheck.mjs: %v\n%s", err, stderr)
	}
	type textEdit struct {
		Range struct {
			Start, End struct{ Line, Character int }
		}
		Text string
	}
	var out struct {
		Hash  []string
		Pairs []struct {
			Edit    *textEdit
			Version string
			Applied string
		}
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("jscheck.mjs output: %v\n%s", err, stdout)
	}
	if len(out.Hash) != len(hashes) || len(out.Pairs) != len(pairs) {
		t.Fatalf("jscheck.mjs answered %d hashes and %d pairs for %d and %d", len(out.Hash), len(out.Pairs), len(hashes), len(pairs))
	}
	for i, s := range hashes {
		sum := sha3.Sum224([]byte(s))
		if want := hex.EncodeToString(sum[:]); out.Hash[i] != want {
			t.Errorf("page SHA3-224(%q) = %s, crypto/sha3 says %s", s, out.Hash[i], want)
		}
	}

	dir := t.TempDir()
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for i, p := range pairs {
		before, after := p[0], p[1]
		got := out.Pairs[i]
		if got.Version != string(workspace.VersionOf(after)) {
			t.Errorf("pair %d: page version of %q is %s, the server's %s", i, after, got.Version, workspace.VersionOf(after))
		}
		if got.Applied != after {
			t.Errorf("pair %d: the page's applyEdits(%q, diff) = %q, want %q", i, before, got.Applied, after)
		}
		if (got.Edit == nil) != (before == after) {
			t.Errorf("pair %d: diff(%q, %q) = %+v", i, before, after, got.Edit)
			continue
		}
		if got.Edit == nil {
			continue
		}
		name := fmt.Sprintf("f%d.py", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ws.OpenBuffer("page", name); err != nil {
			t.Fatal(err)
		}
		e := got.Edit
		edit := workspace.TextEdit{
			Range: workspace.Range{
				Start: workspace.Position{Line: e.Range.Start.Line, Character: e.Range.Start.Character},
				End:   workspace.Position{Line: e.Range.End.Line, Character: e.Range.End.Character},
			},
			Text: e.Text,
		}
		if _, err := ws.ApplyEdit("page", name, []workspace.TextEdit{edit}, workspace.VersionOf(before), workspace.Version(got.Version)); err != nil {
			t.Errorf("pair %d: the server refuses the page's edit %+v of %q -> %q: %v", i, *e, before, after, err)
			continue
		}
		content, _, err := ws.OpenBuffer("page", name)
		if err != nil {
			t.Fatal(err)
		}
		if content != after {
			t.Errorf("pair %d: the server's buffer after the page's edit is %q, want %q", i, content, after)
		}
	}
}

// TestPageDescribesUpdates runs valuescheck.mjs: the page's description
// of held, running and not-reached statements (web/static/values.js) on
// crafted updates of PROTOCOL.md 8, with the reason shown for each kind.
func TestPageDescribesUpdates(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stdout, stderr, err := runNode(ctx, node, nil, "valuescheck.mjs")
	if err != nil {
		t.Fatalf("node valuescheck.mjs: %v\n%s%s", err, stdout, stderr)
	}
	t.Logf("%s", stdout)
}

// pageLine is ripple serve's start line; the page URL is its last word.
var pageLine = regexp.MustCompile(`^ripple: serving .+ at ws://\S+ and the web page at (http://127\.0\.0\.1:\d+/\?token=\S+)\n`)

// TestBrowser opens the page in chromium on a copy of examples/shop and
// runs e2e.mjs: it types edits and sees values change, saves, sees another
// client's edit, a Panic, a compile error, interrupts a long statement,
// enters a call, attaches and modifies a visualization, restarts the
// kernel, survives a dropped connection and a reload, and takes a
// screenshot (tests/artifacts/web.png).
func TestBrowser(t *testing.T) {
	node := needNode(t)
	needBrowser(t)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()

	bin := buildRipple(ctx, t)
	project := filepath.Join(t.TempDir(), "shop")
	if err := os.CopyFS(project, os.DirFS(filepath.Join("..", "..", "examples", "shop"))); err != nil {
		t.Fatal(err)
	}
	artifacts := artifactsDir(t)

	srv := exec.Command(bin, "serve", "--kernels", "2", project)
	stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	srv.Stdout, srv.Stderr = stdout, stderr
	srv.Env = append(os.Environ(), "RIPPLE_TOKEN=")
	srv.WaitDelay = 10 * time.Second
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	var kernels []int // python processes seen below the server
	stopped := false
	defer func() {
		if !stopped {
			srv.Process.Kill()
			<-exited
		}
		if t.Failed() {
			for _, pid := range kernels {
				if _, alive := parent(pid); alive {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if t.Failed() {
			t.Logf("ripple serve stderr:\n%s", stderr.String())
		}
	}()

	page := waitPageURL(ctx, t, stdout, exited)
	t.Logf("page: %s", page)
	out, errOut, err := runNode(ctx, node, nil, "e2e.mjs", page, project, artifacts)
	t.Logf("e2e.mjs:\n%s%s", out, errOut)
	if err != nil {
		t.Fatalf("e2e.mjs failed (%v); see the log above and %s", err, filepath.Join(artifacts, "web-failure.png"))
	}
	if _, err := os.Stat(filepath.Join(artifacts, "web.png")); err != nil {
		t.Errorf("no screenshot: %v", err)
	}

	// What the page saved is on disk, byte for byte what it typed.
	disk, err := os.ReadFile(filepath.Join(project, "main.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`cart.add(catalog["apple"], 16)`, `print(f"🍐 pear-shaped total due: {total}")`} {
		if !strings.Contains(string(disk), want) {
			t.Errorf("main.py on disk lacks %s:\n%s", want, disk)
		}
	}

	// A clean stop: exit 0, no kernel left.
	kernels = descendants(srv.Process.Pid)
	srv.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("ripple serve after SIGINT: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("ripple serve did not exit after SIGINT")
	}
	waitGone(ctx, t, kernels)
}

// waitPageURL waits for the start line and returns the page URL in it.
func waitPageURL(ctx context.Context, t *testing.T, stdout *syncbuf.Buffer, exited <-chan error) string {
	t.Helper()
	deadline, _ := ctx.Deadline()
	var page string
	if !testenv.PollEvery(deadline, 10*time.Millisecond, func() bool {
		if m := pageLine.FindStringSubmatch(stdout.String()); m != nil {
			page = m[1]
			return true
		}
		select {
		case err := <-exited:
			t.Fatalf("ripple serve exited (%v) before its start line; stdout %q", err, stdout.String())
		default:
		}
		return false
	}) {
		t.Fatalf("no start line with a page URL; stdout %q", stdout.String())
	}
	return page
}

// descendants returns the live processes below pid (from /proc).
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parent(child); ok {
			children[ppid] = append(children[ppid], child)
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parent returns a live process's parent pid.
func parent(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 || fields[0] == "Z" {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// waitGone waits until none of pids is alive.
func waitGone(ctx context.Context, t *testing.T, pids []int) {
	t.Helper()
	deadline, _ := ctx.Deadline()
	var left []int
	if !testenv.PollEvery(deadline, 10*time.Millisecond, func() bool {
		left = left[:0]
		for _, pid := range pids {
			if _, alive := parent(pid); alive {
				left = append(left, pid)
			}
		}
		return len(left) == 0
	}) {
		t.Fatalf("processes %v outlived ripple serve", left)
	}
}

// notebookProject is a script project (main.py has no main function) with
// a plot and a DataFrame, and a module with a function of two parameters.
var notebookProject = map[string]string{
	"main.py": `import matplotlib.pyplot as plt
import pandas as pd

df = pd.DataFrame({"fruit": ["apple", "pear", "plum"], "kg": [3, 5, 2]})
total = int(df["kg"].sum())
for name in df["fruit"]:
    print("fruit", name)
fig = plt.figure(figsize=(4, 3))
bars = fig.add_subplot().bar(df["fruit"], df["kg"])
pair = fig, fig.axes[0]
plt.show()
`,
	"pricing.py": `def apply_discount(price, percent=0):
    net = price * (1 - percent / 100)
    return round(net, 2)


def double(x):
    return 2 * x
`,
}

// TestBrowserNotebook runs notebook.mjs against `ripple serve`
// on Debian's python3 (matplotlib, pandas): a script project, output under
// its statement, a plot inline, a DataFrame table, autosave, a click right
// of a line's end, a call with arguments, 1024 and 1440 px screenshots
// (tests/artifacts/notebook-*.png), and the recovered-buffer offer after a
// restart of the server, which this test does when the script asks.
func TestBrowserNotebook(t *testing.T) {
	node := needNode(t)
	needBrowser(t)
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import matplotlib, pandas").Run(); err != nil {
		testenv.NeedOrSkip(t, "%s lacks matplotlib or pandas (.ci/run installs them): %v", python, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := buildRipple(ctx, t)
	project := writeProject(t, notebookProject)
	artifacts := artifactsDir(t)

	// start runs the server on a fixed port (the page's sessionStorage is
	// per origin: the restarted server must have the same one).
	port := freePort(t)
	start := func() (*exec.Cmd, *syncbuf.Buffer, *syncbuf.Buffer, chan error) {
		srv := exec.Command(bin, "serve", "--kernels", "1", "--python", python, "--addr", "127.0.0.1:"+port, "--token", "notebook-token", project)
		stdout, stderr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
		srv.Stdout, srv.Stderr = stdout, stderr
		srv.WaitDelay = 10 * time.Second
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- srv.Wait() }()
		return srv, stdout, stderr, exited
	}
	srv, stdout, stderr, exited := start()
	defer func() {
		if srv != nil {
			srv.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("ripple serve stderr:\n%s", stderr.String())
		}
	}()
	page := waitPageURL(ctx, t, stdout, exited)

	cmd := exec.CommandContext(ctx, node, "notebook.mjs", page, project, artifacts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	restarted := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			t.Logf("notebook.mjs:\n%s", out.String())
			if err != nil {
				t.Fatalf("notebook.mjs failed (%v); see the log above and %s", err, filepath.Join(artifacts, "notebook-failure.png"))
			}
			if !restarted {
				t.Fatal("notebook.mjs ended without the restart step")
			}
			for _, w := range []string{"1024", "1440"} {
				if _, err := os.Stat(filepath.Join(artifacts, "notebook-"+w+".png")); err != nil {
					t.Errorf("no %s px screenshot: %v", w, err)
				}
			}
			srv.Process.Signal(syscall.SIGINT)
			<-exited
			srv = nil
			return
		case <-tick.C:
			if restarted || !strings.Contains(out.String(), "RESTART\n") {
				continue
			}
			// Stop the server with the page's unsaved edit, start it again.
			restarted = true
			srv.Process.Signal(syscall.SIGINT)
			if err := <-exited; err != nil {
				t.Fatalf("ripple serve after SIGINT: %v", err)
			}
			if !strings.Contains(stderr.String(), "unsaved changes kept for recovery") {
				t.Errorf("no recovery warning on stderr:\n%s", stderr.String())
			}
			srv, stdout, stderr, exited = start()
			page := waitPageURL(ctx, t, stdout, exited)
			if _, err := io.WriteString(stdin, page+"\n"); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("notebook.mjs did not finish:\n%s", out.String())
		}
	}
}

// effectsProject is the project of TestBrowserEffects: main.py removes
// out/old (the rmtree of the issue that deleted out/ as "old" was
// backspaced), publish.py asserts before it writes, slow.py sleeps.
var effectsProject = map[string]string{
	"main.py": `import shutil
from pathlib import Path

out = Path("out")
before = sorted(p.name for p in out.iterdir())
shutil.rmtree(out / "old")
after = sorted(p.name for p in out.iterdir())
`,
	"publish.py": `from pathlib import Path

rows = Path("rows.txt").read_text().split()
count = len(rows)
assert count > 0, "no rows"
Path("published.txt").write_text(f"{count} rows\n")
summary = f"published {count} rows"
`,
	"slow.py": `import time

a = 1
time.sleep(600)
b = a + 1
c = b * 2
`,
	"rows.txt":          "apple\npear\n",
	"out/keep.txt":      "the user's\n",
	"out/old/x.txt":     "old\n",
	"out/scratch/y.txt": "scratch\n",
	"out/again/z.txt":   "again\n",
}

// TestBrowserEffects runs effects.mjs against ` + "`ripple serve`" + ` on
// effectsProject (PROTOCOL.md 8 in the page): backspacing "old" out of
// shutil.rmtree(out / "old") holds rmtree(out) and keeps out/keep.txt, ▶
// and Ctrl-Enter run the held statement, a failed assert writes nothing
// and keeps the later values dimmed with the reason, an interrupt leaves no
// statement pending; screenshots tests/artifacts/effects-*.png.
func TestBrowserEffects(t *testing.T) {
	node := needNode(t)
	needBrowser(t)
	// Without the kernel's side of PROTOCOL.md 8 typing would run the
	// rmtree of out/ (in this test's temp dir): nothing to test yet.
	if _, err := os.Stat(filepath.Join("..", "..", "kernel", "python", "ripple_kernel", "effects.py")); err != nil {
		testenv.NeedOrSkip(t, "the kernel's side of PROTOCOL.md 8 (kernel/python/ripple_kernel/effects.py) is not in this tree: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	bin := buildRipple(ctx, t)
	project := t.TempDir()
	for name, text := range effectsProject {
		p := filepath.Join(project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	artifacts := artifactsDir(t)

	// Writes under the temp dir are never held (PROTOCOL.md 8.2), and the
	// project is under it: the server and its kernels get a temp dir of
	// their own, beside the project.
	kernelTmp := filepath.Join(t.TempDir(), "tmp")
	if err := os.Mkdir(kernelTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	page, _ := servePage(ctx, t, bin, []string{"TMPDIR=" + kernelTmp}, "--kernels", "1", "--token", "effects-token", project)
	out, errOut, err := runNode(ctx, node, nil, "effects.mjs", page, project, artifacts)
	t.Logf("effects.mjs:\n%s%s", out, errOut)
	if err != nil {
		t.Fatalf("effects.mjs failed (%v); see the log above and %s", err, filepath.Join(artifacts, "effects-failure.png"))
	}

	// What ran and what did not, on disk.
	for _, gone := range []string{"out/old", "out/scratch", "out/again", "published.txt"} {
		if _, err := os.Stat(filepath.Join(project, gone)); !os.IsNotExist(err) {
			t.Errorf("%s: want it gone, stat says %v", gone, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(project, "out", "keep.txt")); err != nil || string(b) != "the user's\n" {
		t.Errorf("out/keep.txt = %q, %v; want it kept", b, err)
	}
	for _, name := range []string{"effects-held.png", "effects-held-1440.png", "effects-unreached.png", "effects-interrupted.png"} {
		if _, err := os.Stat(filepath.Join(artifacts, name)); err != nil {
			t.Errorf("no screenshot: %v", err)
		}
	}
}

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// buildRipple builds the ripple binary into a temp dir (with -race when
// the test binary has it, so the server is checked too) and returns its
// path.
func buildRipple(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ripple")
	build := []string{"build", "-o", bin}
	if raceEnabled {
		build = append(build, "-race")
	}
	if out, err := exec.CommandContext(ctx, "go", append(build, "github.com/ripple-run/ripple/cmd/ripple")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// writeProject writes files (name -> text) into a new temp dir, the
// project a test serves, and returns it.
func writeProject(t *testing.T, files map[string]string) string {
	t.Helper()
	project := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(project, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return project
}

// artifactsDir is tests/artifacts, where the browser tests leave their
// screenshots and failure captures.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// pageServer is a `ripple serve` a browser test drives.
type pageServer struct {
	cmd    *exec.Cmd
	exited chan error // receives Wait's result once
	stderr *syncbuf.Buffer
}

// interrupt asks the server to stop (SIGINT), as Ctrl-C does.
func (s *pageServer) interrupt() { s.cmd.Process.Signal(syscall.SIGINT) }

// servePage starts `ripple serve args...` (env added to the test's) and
// returns the page's URL once the server prints it. When t ends the
// server gets SIGINT (unless interrupt was called) and must exit cleanly;
// its stderr is logged if t failed.
func servePage(ctx context.Context, t *testing.T, bin string, env []string, args ...string) (string, *pageServer) {
	t.Helper()
	srv := &pageServer{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), exited: make(chan error, 1), stderr: &syncbuf.Buffer{}}
	stdout := &syncbuf.Buffer{}
	srv.cmd.Stdout, srv.cmd.Stderr = stdout, srv.stderr
	if len(env) > 0 {
		srv.cmd.Env = append(os.Environ(), env...)
	}
	srv.cmd.WaitDelay = 10 * time.Second
	if err := srv.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { srv.exited <- srv.cmd.Wait() }()
	t.Cleanup(func() {
		srv.interrupt()
		if err := <-srv.exited; err != nil {
			t.Errorf("ripple serve after SIGINT: %v", err)
		}
		if t.Failed() {
			t.Logf("ripple serve stderr:\n%s", srv.stderr.String())
		}
	})
	return waitPageURL(ctx, t, stdout, srv.exited), srv
}
