package tests

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// The real binary: `ripple serve` as a user runs it.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// buildBinary builds cmd/ripple once for the package (with -race when the
// tests run with it).
func buildBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "ripple-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ripple")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "github.com/ripple-run/ripple/cmd/ripple")...).CombinedOutput()
		if err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// serveProc is a running `ripple serve`.
type serveProc struct {
	cmd    *exec.Cmd
	stdout *syncbuf.Buffer
	stderr *syncbuf.Buffer
	done   chan struct{} // closed when the process has exited
	err    error         // Wait's result, set before done closes
	url    string
	// descendants seen while it ran (kernels); cleanup kills those still
	// alive if the test failed before they went away.
	seen map[int]bool
}

var urlLine = regexp.MustCompile(`^ripple: serving (.+) at (ws://127\.0\.0\.1:\d+/ws\?token=(\S+)) and the web page at http://127\.0\.0\.1:\d+/\?token=\S+\n`)

// startServe runs the binary with args and env additions and waits for its
// URL line on stdout.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	bin := buildBinary(t)
	p := &serveProc{cmd: exec.Command(bin, append([]string{"serve"}, args...)...),
		stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}, done: make(chan struct{}), seen: map[int]bool{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	// Orphaned kernels may hold no copy of the pipes; bound the wait anyway.
	p.cmd.WaitDelay = 10 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		for pid := range p.seen {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			t.Logf("ripple serve stderr:\n%s", p.stderr.String())
		}
	})
	if !testenv.PollEvery(stepDeadline(t), 5*time.Millisecond, func() bool {
		if m := urlLine.FindStringSubmatch(p.stdout.String()); m != nil {
			p.url = m[2]
			return true
		}
		select {
		case <-p.done:
			t.Fatalf("ripple serve exited (%v) before its URL line; stdout %q, stderr:\n%s", p.err, p.stdout.String(), p.stderr.String())
		default:
		}
		return false
	}) {
		t.Fatalf("no URL line; stdout %q, stderr:\n%s", p.stdout.String(), p.stderr.String())
	}
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *serveProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-stepCtx(t).Done():
		t.Fatal("ripple serve did not exit")
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("wait: %v", p.err)
	}
	return 0
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
		if ppid, state, ok := procStat(child); ok && state != "Z" {
			children[ppid] = append(children[ppid], child)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procStat reads a process's parent and state from /proc/PID/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state != "Z"
}

// cmdline returns a process's command line, for messages.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// kernels records and returns the python processes below the server.
func (p *serveProc) kernels(t *testing.T) []int {
	t.Helper()
	var out []int
	for _, pid := range descendants(p.cmd.Process.Pid) {
		p.seen[pid] = true
		if strings.Contains(cmdline(pid), "python") {
			out = append(out, pid)
		}
	}
	return out
}

// waitGone waits until none of pids is alive.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	var left []string
	if !testenv.PollEvery(stepDeadline(t), 10*time.Millisecond, func() bool {
		left = left[:0]
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, strconv.Itoa(pid)+" "+cmdline(pid))
			}
		}
		return len(left) == 0
	}) {
		t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
}

func scenarioDir(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, dir, "main.py", mainWith(baseBody...))
	writeFile(t, dir, "helper.py", scenarioHelper)
	return dir
}

func TestServeBinaryLifecycle(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	// Flags after the directory; the token from the environment.
	p := startServe(t, []string{"RIPPLE_TOKEN=from-env"}, dir, "--kernels", "1", "--log-level", "debug", "--grace", "1m")
	m := urlLine.FindStringSubmatch(p.stdout.String())
	if m[1] != dir || m[3] != "from-env" {
		t.Fatalf("URL line %q: want dir %s and the token from RIPPLE_TOKEN", m[0], dir)
	}
	base := strings.TrimSuffix(p.url, "?token=from-env")

	// The binary refuses what it must.
	for _, tc := range []struct {
		url    string
		header http.Header
		status int
	}{
		{base, nil, http.StatusUnauthorized},
		{base + "?token=wrong", nil, http.StatusUnauthorized},
		{p.url, http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
	} {
		c, resp, err := servertest.Dial(stepCtx(t), tc.url, tc.header)
		if err == nil {
			c.Close()
			t.Fatalf("%s %v: connected", tc.url, tc.header)
		}
		if resp == nil || resp.StatusCode != tc.status {
			t.Fatalf("%s %v: %v, want HTTP %d", tc.url, tc.header, err, tc.status)
		}
	}

	c, _ := connect(t, p.url, "ide")
	_, r := c.newContext("main:main")
	expect(t, "z", r.updates.Values()["main:main/z"], "35")
	c.callErr(protocol.CodePathOutsideRoot, protocol.MethodFileRead, protocol.FileReadParams{Path: "../../etc/passwd"}, "../../etc/passwd")
	kernels := p.kernels(t)
	if len(kernels) == 0 {
		t.Fatal("no kernel process below the server")
	}

	// A long run is going on when the signal comes.
	c.setText("main.py", mainWith("x = 6", "import time; time.sleep(60)", "z = x + 1"))
	c.waitFor(protocol.NotifyExpressionUpdates, nil)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, err := c.c.CloseCode(stepCtx(t)); err != nil || code != websocket.CloseGoingAway {
		t.Fatalf("the client's connection ended with %d (%v), want 1001", code, err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0; stderr:\n%s", code, p.stderr.String())
	}
	waitGone(t, kernels)
	// The URL line, then the page's URL alone (terminals make a URL
	// clickable only when nothing is glued to it).
	if lines := strings.Split(p.stdout.String(), "\n"); len(lines) != 3 || !strings.HasSuffix(lines[0], " "+lines[1]) || lines[2] != "" {
		t.Errorf("stdout %q, want exactly the URL line and the page's URL", p.stdout.String())
	}
	for _, want := range []string{"level=INFO", "shutting down", "stopped", "ripple: python "} {
		if !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
}

func TestServeBinaryKill9LeavesNoPython(t *testing.T) {
	t.Parallel()
	p := startServe(t, nil, scenarioDir(t), "--kernels", "2")
	c, _ := connect(t, p.url, "ide")
	c.newContext("main:main")
	kernels := p.kernels(t)
	if len(kernels) < 2 {
		t.Fatalf("%d kernel processes, want at least the 2 of --kernels", len(kernels))
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	waitGone(t, kernels)
}

func TestServeBinaryTokens(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	// --token wins over the environment.
	p := startServe(t, []string{"RIPPLE_TOKEN=from-env"}, "--token", "from-flag", "--kernels", "1", dir)
	if m := urlLine.FindStringSubmatch(p.stdout.String()); m[3] != "from-flag" {
		t.Errorf("token %q, want from-flag", m[3])
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d after SIGINT", code)
	}
	// Neither: 32 random bytes, hex.
	p = startServe(t, []string{"RIPPLE_TOKEN="}, "--kernels", "1", dir)
	if m := urlLine.FindStringSubmatch(p.stdout.String()); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(m[3]) {
		t.Errorf("generated token %q, want 64 hex digits", m[3])
	}
	c, _ := connect(t, p.url, "ide")
	c.call(protocol.MethodRuntimeStatus, nil, nil)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d after SIGINT", code)
	}
}

func TestServeBinaryBadArguments(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := scenarioDir(t)
	file := filepath.Join(dir, "main.py")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"serve", "--log-level", "loud", dir}, 2, `--log-level "loud"`},
		{[]string{"serve", "--kernels", "-1", dir}, 2, "--kernels -1"},
		{[]string{"serve", "--grace", "0s", dir}, 2, "--grace 0s"},
		{[]string{"serve", "--no-such-flag", dir}, 2, "no-such-flag"},
		{[]string{"serve", dir, dir}, 2, "at most one project directory"},
		{[]string{"serve", filepath.Join(dir, "missing")}, 2, "missing"},
		{[]string{"serve", file}, 2, "not a directory"},
		{[]string{"serve", "--python", "/nonexistent/python3", dir}, 1, "/nonexistent/python3"},
		{[]string{"serve", "--addr", "256.0.0.1:1", dir}, 1, "256.0.0.1:1"},
		{[]string{"serve", "--allow-origin", "evil.example", dir}, 1, "evil.example"},
		{[]string{"serve", "--agents-listen", "127.0.0.1:0", dir}, 2, "--agents-listen needs the agents' token"},
		{[]string{"serve", "--agents-listen", "127.0.0.1:0", "--agents-token", "t", "--agents-slots", "0", dir}, 2, "--agents-slots 0"},
		{[]string{"run", dir, "--tests", "--watch", "--agents-listen", "127.0.0.1:0", "--agents-token", "t"}, 2, "--watch over agents"},
		{[]string{"run", dir, "--tests", "--local-kernels", "2"}, 2, "--local-kernels counts local kernels beside the agents'"},
		{[]string{"agent", "--token", "t"}, 2, "--coordinator HOST:PORT is required"},
		{[]string{"agent", "--coordinator", "127.0.0.1:1"}, 2, "no agent token"},
		{[]string{"agent", "--coordinator", "127.0.0.1:1", "--token", "t", "--kernels", "0"}, 2, "--kernels 0"},
		{[]string{"agent", "--coordinator", "192.0.2.1:7443", "--token", "t", "--root", dir}, 2, "--coordinator-fingerprint sha256:HEX or --ca FILE"},
		{[]string{"agent", "--coordinator", "127.0.0.1:1", "--token", "t", "--root", filepath.Join(dir, "missing")}, 2, "missing"},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
	}
}

// serve prints the page's URL again on a line of its own and, with
// --open, hands it to $BROWSER.
func TestServeBinaryOpensThePage(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	got := filepath.Join(t.TempDir(), "opened")
	browser := filepath.Join(t.TempDir(), "browser")
	if err := os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{"BROWSER=" + browser}, "--kernels", "1", "--open", dir)
	page := regexp.MustCompile(`and the web page at (\S+)\n(\S+)\n`)
	var m []string
	if !testenv.PollEvery(stepDeadline(t), 5*time.Millisecond, func() bool {
		m = page.FindStringSubmatch(p.stdout.String())
		return m != nil
	}) {
		t.Fatalf("no page URL line; stdout %q", p.stdout.String())
	}
	if m[1] != m[2] {
		t.Errorf("second line %q, want the page URL %q alone", m[2], m[1])
	}
	var opened []byte
	if !testenv.PollEvery(stepDeadline(t), 5*time.Millisecond, func() bool {
		var err error
		opened, err = os.ReadFile(got)
		return err == nil
	}) {
		t.Fatalf("--open did not run $BROWSER")
	}
	if string(opened) != m[1] {
		t.Errorf("the browser was given %q, want %q", opened, m[1])
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit code %d after SIGINT", code)
	}
}

// Stopping the server with an unsaved buffer keeps it under
// .ripple/recovery (one warning line), leaves the user's file alone, and
// the next server offers it back in text/openFile (PROTOCOL.md 7.4).
func TestServeBinaryKeepsUnsavedBuffers(t *testing.T) {
	t.Parallel()
	dir := scenarioDir(t)
	disk, err := os.ReadFile(filepath.Join(dir, "helper.py"))
	if err != nil {
		t.Fatal(err)
	}
	p := startServe(t, nil, "--kernels", "1", dir)
	c, _ := connect(t, p.url, "editor")
	unsaved := "def foo(a, b):\n    return a - b  # not saved\n"
	c.setText("helper.py", unsaved)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "helper.py")); string(got) != string(disk) {
		t.Errorf("helper.py changed on disk: %q", got)
	}
	if n := strings.Count(p.stderr.String(), "unsaved changes kept for recovery"); n != 1 || !strings.Contains(p.stderr.String(), "path=helper.py") {
		t.Errorf("stderr has %d recovery warnings, want one naming helper.py:\n%s", n, p.stderr.String())
	}

	p2 := startServe(t, nil, "--kernels", "1", dir)
	c2, _ := connect(t, p2.url, "editor")
	var open protocol.OpenFileResult
	c2.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "helper.py"}, &open)
	if open.Content != string(disk) {
		t.Errorf("the buffer opened with %q, want the disk's content", open.Content)
	}
	if open.Recovered == nil || open.Recovered.Content != unsaved || open.Recovered.Version != version(unsaved) || open.Recovered.SavedAt == "" {
		t.Fatalf("recovered = %+v, want the unsaved text", open.Recovered)
	}
	// Discarding it: file/delete of the recovery file.
	c2.call(protocol.MethodFileDelete, protocol.FileDeleteParams{Path: protocol.Path(open.Recovered.Path)}, nil)
	var other protocol.OpenFileResult
	c2.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &other)
	if other.Recovered != nil {
		t.Errorf("main.py had no unsaved edits, got recovered %+v", other.Recovered)
	}
	var again protocol.OpenFileResult
	c2.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "helper.py"}, &again)
	if again.Recovered != nil {
		t.Errorf("discarded recovery still offered: %+v", again.Recovered)
	}
	p2.cmd.Process.Signal(syscall.SIGINT)
	p2.wait(t)
}
