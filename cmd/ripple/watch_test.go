package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/syncbuf"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/watchview"
)

// End-to-end tests of `ripple watch`: the real binary (built in TestMain),
// a real kernel, real files changed from outside as an editor would; in
// --json mode over pipes, and in the text form through a pseudo-terminal.

// Waits end at testenv.Deadline: it only guards against a hang; no test
// depends on how fast anything happens.

const watchMain = `from helper import foo


def main():
    x = 6
    y = foo(x, 5)
    print("y is", y)
    z = y + 5
    return z
`

const watchHelper = `def foo(a, b):
    c = a * b
    return c
`

// project writes files into a new temporary directory and returns its
// real path (the engine reports the root with symlinks resolved).
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		writeFile(t, dir, name, text)
	}
	return dir
}

// writeFile replaces a file the way atomic savers do: a temp file beside
// it, renamed over it.
func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// kernelsIn lists the processes whose working directory is dir (the
// kernels of a ripple serving it), other than this one.
func kernelsIn(dir string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			found = append(found, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return found
}

// expectNoKernels fails if a process still runs in dir once ripple has
// exited (polled: the last kernel may be in its final exit).
func expectNoKernels(t *testing.T, dir string) {
	t.Helper()
	var left []string
	if !testenv.Poll(testenv.Deadline(t), func() bool {
		left = kernelsIn(dir)
		return len(left) == 0
	}) {
		t.Errorf("processes left running in %s after ripple watch exited: %v", dir, left)
	}
}

// process is a started ripple watch process.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, set before done is closed
}

// startProcess starts cmd. Wait is called after readDone returns (so it
// cannot close an output pipe before everything was read); the test's
// cleanup kills a process the test left running.
func startProcess(t *testing.T, cmd *exec.Cmd, readDone func()) *process {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		readDone()
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// quit makes a stuck process dump its goroutines (Go's SIGQUIT handler
// prints them to stderr and exits), so a timeout shows where it hung.
func (p *process) quit() {
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
	}
}

// exitCode waits for the process to exit and returns its exit code;
// shows describes what it printed, for failures.
func (p *process) exitCode(t *testing.T, shows func() string) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Until(testenv.Deadline(t))):
		p.quit()
		t.Fatalf("ripple watch did not exit; it printed (goroutines dumped by SIGQUIT at the end):\n%s", shows())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// jsonWatch is a `ripple watch --json` process and its events.
type jsonWatch struct {
	*process
	t      *testing.T
	events chan watchview.Event // closed at the end of stdout
	stderr *syncbuf.Buffer
	seen   []watchview.Event // every event read so far
}

func startJSONWatch(t *testing.T, args ...string) *jsonWatch {
	t.Helper()
	w := &jsonWatch{t: t, events: make(chan watchview.Event, 1024), stderr: &syncbuf.Buffer{}}
	cmd := exec.Command(rippleBin, append([]string{"watch"}, args...)...)
	cmd.Stderr = w.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var reader sync.WaitGroup
	reader.Add(1)
	w.process = startProcess(t, cmd, reader.Wait)
	go func() {
		defer reader.Done()
		defer close(w.events)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev watchview.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				w.events <- watchview.Event{Event: "bad line", Text: sc.Text() + ": " + err.Error()}
				continue
			}
			w.events <- ev
		}
	}()
	return w
}

// next returns the next event matching match, failing on a bad line, on
// the end of output and at testenv.Deadline.
func (w *jsonWatch) next(what string, match func(ev watchview.Event) bool) watchview.Event {
	w.t.Helper()
	timeout := time.After(time.Until(testenv.Deadline(w.t)))
	for {
		select {
		case ev, ok := <-w.events:
			if !ok {
				w.t.Fatalf("waiting for %s: ripple watch ended its output; stderr:\n%s", what, w.stderr.String())
			}
			if ev.Event == "bad line" {
				w.t.Fatalf("not a JSON object: %s", ev.Text)
			}
			w.seen = append(w.seen, ev)
			if match(ev) {
				return ev
			}
		case <-timeout:
			w.quit()
			w.t.Fatalf("timed out waiting for %s; stderr (goroutines dumped by SIGQUIT at the end):\n%s", what, w.stderr.String())
		}
	}
}

// stopWithCtrlC sends SIGINT until ripple watch says it stopped, at most
// tries times, 10 s apart; each signal that did not stop it must have
// ended a run (an interrupt).
func (w *jsonWatch) stopWithCtrlC(tries int) {
	w.t.Helper()
	for i := 0; i < tries; i++ {
		if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
			w.t.Fatal(err)
		}
		wait := time.After(10 * time.Second)
		for {
			select {
			case ev, ok := <-w.events:
				if !ok {
					w.t.Fatalf("waiting for stopped: ripple watch ended its output; stderr:\n%s", w.stderr.String())
				}
				w.seen = append(w.seen, ev)
				if ev.Event == watchview.EventStopped {
					return
				}
				continue
			case <-wait:
			}
			break
		}
		w.t.Logf("Ctrl-C %d did not stop ripple watch within 10 s (a run was going?); events so far: %d", i+1, len(w.seen))
	}
	w.next("stopped", func(ev watchview.Event) bool { return ev.Event == watchview.EventStopped })
}

// run waits for the end of a run and returns its events (from the one
// after the previous call's last).
func (w *jsonWatch) run(n int) (events []watchview.Event, end watchview.Event) {
	w.t.Helper()
	from := len(w.seen)
	end = w.next(fmt.Sprintf("the end of run %d", n), func(ev watchview.Event) bool {
		return ev.Event == watchview.EventComplete || ev.Event == watchview.EventFailed
	})
	if end.Run != n {
		w.t.Fatalf("run %d ended, want run %d", end.Run, n)
	}
	return w.seen[from:], end
}

// exit waits for the process to exit and returns its exit code.
func (w *jsonWatch) exit() int {
	w.t.Helper()
	return w.exitCode(w.t, w.stderr.String)
}

// values maps label -> preview (or the Panic message) of the updates with
// a result; computed lists the labels computed (not from the cache).
func values(events []watchview.Event) (vals map[string]string, computed []string, output string) {
	vals = map[string]string{}
	for _, ev := range events {
		switch ev.Event {
		case watchview.EventUpdate:
			switch ev.Payload.Type {
			case protocol.PayloadValue:
				vals[ev.Label] = ev.Payload.Preview
			case protocol.PayloadPanic:
				vals[ev.Label] = "Panic: " + ev.Payload.Message
			default:
				continue
			}
			if ev.FromCache != nil && !*ev.FromCache {
				computed = append(computed, ev.Label)
			}
		case watchview.EventOutput:
			output += ev.Text
		}
	}
	return vals, computed, output
}

func expectEq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func TestWatchJSON(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"main.py": watchMain, "helper.py": watchHelper})
	w := startJSONWatch(t, dir, "--json") // flags after the directory

	first := w.next("watching", func(ev watchview.Event) bool { return true })
	if first.Event != watchview.EventWatching || first.Root != dir || first.Entry != "main:main" ||
		first.Python == "" || !strings.HasPrefix(first.PythonVersion, "3.") {
		t.Fatalf("first line %+v, want the watching event", first)
	}

	events, end := w.run(1)
	vals, computed, out := values(events)
	expectEq(t, "run 1 values", vals, map[string]string{"x": "6", "y": "30", "#1": "None", "z": "35", "return": "35"})
	expectEq(t, "run 1 computed", computed, []string{"x", "y", "#1", "z", "return"})
	expectEq(t, "run 1 output", out, "y is 30\n")
	if *end.Recomputed != 5 || *end.Cached != 0 {
		t.Errorf("run 1 end %+v", end)
	}
	for _, ev := range events {
		if ev.Event == watchview.EventUpdate && ev.Label == "y" && ev.Payload.Type == protocol.PayloadValue {
			if ev.Line != 6 || ev.Type != "builtins.int" || ev.MethodCall != "helper:foo" || ev.ExpressionID != "main:main/y" {
				t.Errorf("y update %+v", ev)
			}
		}
	}

	// A save of helper.py: y and what depends on it run again, x does not.
	writeFile(t, dir, "helper.py", "def foo(a, b):\n    c = a * b * 2\n    return c\n")
	events, _ = w.run(2)
	vals, computed, out = values(events)
	expectEq(t, "run 2 computed", computed, []string{"y", "#1", "z", "return"})
	expectEq(t, "run 2 z", vals["z"], "65")
	expectEq(t, "run 2 output", out, "y is 60\n")
	if events[0].Event != watchview.EventFile || events[0].Path != "helper.py" || events[0].Kind != "Modified" {
		t.Errorf("run 2 starts with %+v, want the file event of helper.py", events[0])
	}

	// A syntax error: the run fails with the place.
	writeFile(t, dir, "main.py", strings.Replace(watchMain, "y = foo(x, 5)", "y = foo(x, 5", 1))
	_, end = w.run(3)
	if end.Event != watchview.EventFailed || end.Kind != "compileError" || end.Diagnostic == nil || end.Diagnostic.Path != "main.py" {
		t.Fatalf("run 3 ended %+v, want failed compileError in main.py", end)
	}

	// Fixed, with a statement that raises: a Panic, the run completes.
	writeFile(t, dir, "main.py", strings.Replace(watchMain, "    return z\n", "    w = z / 0\n    return z\n", 1))
	events, end = w.run(4)
	vals, _, _ = values(events)
	expectEq(t, "run 4 end", end.Event, watchview.EventComplete)
	expectEq(t, "w", vals["w"], "Panic: ZeroDivisionError: division by zero")

	// Ctrl-C with nothing running exits 0 after a graceful stop. On a
	// loaded machine the save of run 4 can reach the watcher as two events
	// further apart than the debounce, and the second one's run may be going
	// when the signal arrives: that Ctrl-C interrupts it, as the README
	// says, and a second one exits. So the signal is sent again until the
	// stop, at most three times.
	w.stopWithCtrlC(3)
	if code := w.exit(); code != 0 {
		t.Errorf("exit code %d after Ctrl-C while idle; stderr:\n%s", code, w.stderr.String())
	}
	if ev, more := <-w.events; more {
		t.Errorf("event after stopped: %+v", ev)
	}
	expectNoKernels(t, dir)
}

const sleepyMain = `import time


def main():
    x = %d
    print("sleeping with x =", x, flush=True)
    time.sleep(%d)
    y = x + 1
    return y
`

func TestWatchJSONCtrlC(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"main.py": fmt.Sprintf(sleepyMain, 1, 600)})
	w := startJSONWatch(t, "--json", dir)
	w.next("the run's output", func(ev watchview.Event) bool { return ev.Event == watchview.EventOutput })

	// Ctrl-C while running interrupts the run; ripple watch goes on.
	must(t, w.cmd.Process.Signal(os.Interrupt))
	w.next("the interrupt note", func(ev watchview.Event) bool { return ev.Event == watchview.EventInterrupt })
	events, end := w.run(1)
	if end.Event != watchview.EventFailed || end.Kind != "interrupted" {
		t.Fatalf("run 1 ended %+v, want interrupted", end)
	}
	vals, _, _ := values(events)
	if _, ok := vals["y"]; ok {
		t.Errorf("y computed although the run was interrupted before it: %v", vals)
	}

	// Still watching: the next save runs (without the sleep) to the end.
	writeFile(t, dir, "main.py", fmt.Sprintf(sleepyMain, 1, 0))
	events, end = w.run(2)
	vals, _, _ = values(events)
	if end.Event != watchview.EventComplete || vals["y"] != "2" {
		t.Fatalf("run 2 ended %+v with %v, want complete with y = 2", end, vals)
	}

	// A long run again; Ctrl-C twice in a row exits 0 while it runs.
	writeFile(t, dir, "main.py", fmt.Sprintf(sleepyMain, 2, 600))
	w.next("run 3's output", func(ev watchview.Event) bool { return ev.Event == watchview.EventOutput && ev.Run == 3 })
	must(t, w.cmd.Process.Signal(os.Interrupt))
	w.next("the interrupt note", func(ev watchview.Event) bool { return ev.Event == watchview.EventInterrupt })
	must(t, w.cmd.Process.Signal(os.Interrupt))
	w.next("stopped", func(ev watchview.Event) bool { return ev.Event == watchview.EventStopped })
	if code := w.exit(); code != 0 {
		t.Errorf("exit code %d after Ctrl-C twice; stderr:\n%s", code, w.stderr.String())
	}
	expectNoKernels(t, dir)
}

func TestWatchSIGTERM(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"main.py": fmt.Sprintf(sleepyMain, 1, 600)})
	w := startJSONWatch(t, "--json", dir)
	w.next("the run's output", func(ev watchview.Event) bool { return ev.Event == watchview.EventOutput })
	must(t, w.cmd.Process.Signal(syscall.SIGTERM))
	w.next("stopped", func(ev watchview.Event) bool { return ev.Event == watchview.EventStopped })
	if code := w.exit(); code != 0 {
		t.Errorf("exit code %d after SIGTERM; stderr:\n%s", code, w.stderr.String())
	}
	expectNoKernels(t, dir)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestWatchBadInput(t *testing.T) {
	t.Parallel()
	empty := project(t, map[string]string{"other.py": "x = 1\n"})
	file := filepath.Join(empty, "other.py")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"watch", "--entry", "main", empty}, 2, `--entry main: invalid method pointer "main": want module:qualname`},
		{[]string{"watch", "--entry", "main:ma in", empty}, 2, "--entry main:ma in"},
		{[]string{"watch", empty, empty}, 2, "at most one project directory"},
		{[]string{"watch", "--frobnicate"}, 2, "frobnicate"},
		{[]string{"watch", "/nonexistent-ripple-dir"}, 2, "project directory /nonexistent-ripple-dir"},
		{[]string{"watch", file}, 2, "not a directory"},
		{[]string{"watch", "--python", "/nonexistent/python3", empty}, 1, "/nonexistent/python3"},
		{[]string{"watch", empty}, 1, "--entry main:main: module not found: main"},
		{[]string{"watch", "--entry", "pkg.mod:f", empty}, 1, "module not found: pkg.mod"},
	}
	for _, c := range cases {
		code, out, errOut := runCmd(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d naming %q", c.args, code, errOut, c.code, c.want)
		}
		if c.code == 2 && out != "" {
			t.Errorf("%q: stdout %q", c.args, out)
		}
	}
	expectNoKernels(t, empty)
}

// TestWatchInProcessStopsWithContext runs the command in this process:
// cancelling its context (what SIGTERM does in the binary) stops it, and
// nothing is left behind (the leak check of TestMain sees the goroutines).
func TestWatchInProcessStopsWithContext(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"main.py": watchMain, "helper.py": watchHelper})
	out := &syncbuf.Buffer{}
	var errOut syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() { done <- run(ctx, []string{"watch", "--json", dir}, out, &errOut) }()
	if !testenv.Poll(testenv.Deadline(t), func() bool { return strings.Contains(out.String(), `"event":"complete"`) }) {
		t.Fatalf("no complete event; stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; last != `{"event":"stopped"}` {
		t.Errorf("last line %q", last)
	}
	expectNoKernels(t, dir)
}
