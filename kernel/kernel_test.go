package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

func TestEvalKeepsStateAndStreamsOutput(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	rec := &recorder{}
	if err := k.Eval(testCtx(t), "x = 41\nprint('hello', x)", rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.out(); got != "hello 41\n" {
		t.Errorf("stdout = %q, want %q", got, "hello 41\n")
	}
	if got := reprOK(t, k, "x + 1"); got != "42" {
		t.Errorf("x + 1 = %s, want 42", got)
	}
	if got := reprOK(t, k, "'a' * 1000"); len(got) > 300 || !strings.Contains(got, "...") {
		t.Errorf("repr of a long string is not limited: %d chars", len(got))
	}
	// The kernel runs from the project root, which is also sys.path[0].
	root := reprOK(t, k, "__import__('os').getcwd() + '|' + __import__('sys').path[0]")
	want := fmt.Sprintf("'%s|%s'", k.cfg.Root, k.cfg.Root)
	if root != want {
		t.Errorf("cwd|sys.path[0] = %s, want %s", root, want)
	}
	if got := reprOK(t, k, "__name__"); got != "'__main__'" {
		t.Errorf("__name__ = %s", got)
	}
	if got := reprOK(t, k, "'RIPPLE_TOKEN' in __import__('os').environ"); got != "False" {
		t.Errorf("the kernel token leaks into user code's environment")
	}
}

func TestPythonErrorsAreRemoteErrors(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	ctx := testCtx(t)
	cases := []struct {
		code, typ, msg string
	}{
		{"def f():\n    return 1/0\nf()", "ZeroDivisionError", "division by zero"},
		{"x = (", "SyntaxError", ""},
		{"import no_such_module_here", "ModuleNotFoundError", "no_such_module_here"},
		{"raise SystemExit(3)", "SystemExit", "3"},
	}
	for _, c := range cases {
		err := k.Eval(ctx, c.code, nil)
		var re *RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("eval %q: err = %v, want *RemoteError", c.code, err)
		}
		if re.Type != c.typ || !strings.Contains(re.Message, c.msg) {
			t.Errorf("eval %q: got %s: %s, want %s containing %q", c.code, re.Type, re.Message, c.typ, c.msg)
		}
		if strings.Contains(re.Traceback, "ripple_kernel") {
			t.Errorf("traceback shows kernel frames:\n%s", re.Traceback)
		}
	}
	// The traceback points at the user's line, with its source.
	err := k.Eval(ctx, "def f():\n    return 1/0\nf()", nil)
	var re *RemoteError
	errors.As(err, &re)
	if !strings.Contains(re.Traceback, "return 1/0") || !strings.Contains(re.Traceback, "line 2, in f") {
		t.Errorf("traceback lacks the user's frame:\n%s", re.Traceback)
	}
	// The kernel survives all of them.
	evalOK(t, k, "y = 1")
}

func TestBadRequestsNameTheProblem(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	ctx := testCtx(t)
	cases := []struct {
		method string
		params any
		typ    string
		msg    string
	}{
		{"no_such_method", nil, "MethodNotFound", "no_such_method"},
		{"eval", map[string]any{"code": 5}, "InvalidParams", "params.code must be a string"},
		{"eval", map[string]any{"code": "1", "mode": "single"}, "InvalidParams", "params.mode"},
		{"eval", json.RawMessage(`[1, 2]`), "InvalidParams", "params must be an object"},
		{"eval", json.RawMessage(`{"code": `), "InvalidParams", "not {method, params} JSON"},
	}
	for _, c := range cases {
		_, err := k.Call(ctx, c.method, c.params, nil)
		var re *RemoteError
		if !errors.As(err, &re) || re.Type != c.typ || !strings.Contains(re.Message, c.msg) {
			t.Errorf("%s %v: err = %v, want %s naming %q", c.method, c.params, err, c.typ, c.msg)
		}
	}
	if _, err := k.Call(ctx, "eval", map[string]any{"code": make(chan int)}, nil); err == nil ||
		!strings.Contains(err.Error(), "encode params") {
		t.Errorf("unencodable params: err = %v", err)
	}
	if _, err := k.Call(ctx, "ping", nil, nil); err != nil {
		t.Errorf("ping after bad requests: %v", err)
	}
}

func TestOutputCapturedAtFdLevel(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	rec := &recorder{}
	code := strings.Join([]string{
		"import os, subprocess, sys, ctypes",
		"os.system('echo from-shell')",
		"subprocess.run(['sh', '-c', 'echo from-subprocess; echo sub-err >&2'])",
		"libc = ctypes.CDLL(None)",
		"libc.printf(b'from-c %d\\n', 42)",
		"libc.fflush(None)",
		"os.write(2, b'fd2\\n')",
		"sys.stderr.write('py-err\\n')",
	}, "\n")
	if err := k.Eval(testCtx(t), code, rec); err != nil {
		t.Fatal(err)
	}
	out, errOut := rec.out(), rec.err()
	for _, want := range []string{"from-shell\n", "from-subprocess\n", "from-c 42\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout %q lacks %q", out, want)
		}
	}
	for _, want := range []string{"sub-err\n", "fd2\n", "py-err\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
}

func TestOutputArrivesWhileRequestRuns(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	flag := filepath.Join(t.TempDir(), "go-on")
	// The request prints, then waits until the test creates the flag file;
	// the test creates it only after the print reached the sink. If output
	// were delivered at the end, this would never finish.
	code := fmt.Sprintf(`import os, time
print('waiting', flush=True)
deadline = time.time() + 60
while not os.path.exists(%q):
    if time.time() > deadline:
        raise TimeoutError('output was not delivered live')
    time.sleep(0.005)
print('done')`, flag)
	seen := make(chan struct{})
	var once sync.Once
	rec := &recorder{onOutput: func(s Stream, b []byte) {
		if strings.Contains(string(b), "waiting") {
			once.Do(func() { close(seen) })
		}
	}}
	errc := make(chan error, 1)
	go func() { errc <- k.Eval(testCtx(t), code, rec) }()
	select {
	case <-seen:
	case err := <-errc:
		t.Fatalf("request ended before its output arrived: %v", err)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got := rec.out(); got != "waiting\ndone\n" {
		t.Errorf("stdout = %q", got)
	}
}

// Every byte a request writes arrives before its result, per stream in
// order, however the writes are mixed.
func TestOutputOrderingBeforeResult(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	code := `import os, sys, subprocess
for i in range(3000):
    line = 'line %05d ' % i + 'x' * (i % 300) + '\n'
    if i % 3 == 0:
        sys.stdout.write(line)
    elif i % 3 == 1:
        os.write(2, line.encode())
    else:
        os.write(1, line.encode())
        sys.stderr.write(line)
big = b'B' * (3 << 20)
os.write(1, big)
os.write(2, big)
subprocess.run(['sh', '-c', 'printf sub-out; printf sub-err >&2'])
sys.stdout.write('END-OUT')
os.write(2, b'END-ERR')`
	var wantOut, wantErr strings.Builder
	for i := 0; i < 3000; i++ {
		line := fmt.Sprintf("line %05d ", i) + strings.Repeat("x", i%300) + "\n"
		switch i % 3 {
		case 0:
			wantOut.WriteString(line)
		case 1:
			wantErr.WriteString(line)
		default:
			wantOut.WriteString(line)
			wantErr.WriteString(line)
		}
	}
	big := strings.Repeat("B", 3<<20)
	wantOut.WriteString(big + "sub-out" + "END-OUT")
	wantErr.WriteString(big + "sub-err" + "END-ERR")
	for round := 0; round < 3; round++ {
		rec := &recorder{}
		if err := k.Eval(testCtx(t), code, rec); err != nil {
			t.Fatal(err)
		}
		// Call returned: the sink must already hold everything.
		if got := rec.out(); got != wantOut.String() {
			t.Fatalf("round %d: stdout differs: got %d bytes, want %d; tail %q", round, len(got), wantOut.Len(), tail(got))
		}
		if got := rec.err(); got != wantErr.String() {
			t.Fatalf("round %d: stderr differs: got %d bytes, want %d; tail %q", round, len(got), wantErr.Len(), tail(got))
		}
	}
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

func TestHundredMegabytesOfOutput(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	c := &counter{}
	code := `import sys
chunk = 'y' * 65535 + '\n'
for _ in range(1600):
    sys.stdout.write(chunk)
sys.stdout.write('THE-END')`
	if err := k.Eval(testCtx(t), code, c); err != nil {
		t.Fatal(err)
	}
	want := int64(1600*65536 + len("THE-END"))
	if c.stdout != want {
		t.Errorf("received %d bytes, want %d", c.stdout, want)
	}
	if !strings.HasSuffix(string(c.last), "THE-END") {
		t.Errorf("output does not end with the last write: %q", c.last)
	}
}

func TestHundredRequestsInARow(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "n = 0")
	for i := 0; i < 100; i++ {
		rec := &recorder{}
		if err := k.Eval(testCtx(t), "n += 1\nprint(n)", rec); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got, want := rec.out(), strconv.Itoa(i+1)+"\n"; got != want {
			t.Fatalf("request %d printed %q, want %q", i, got, want)
		}
	}
	if got := reprOK(t, k, "n"); got != "100" {
		t.Errorf("n = %s, want 100", got)
	}
}

func TestConcurrentCallsOnOneKernelTakeTurns(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "n = 0")
	var g errgroup.Group
	for range 4 {
		g.Go(func() error {
			for range 25 {
				rec := &recorder{}
				// A read-modify-write with output: it would lose updates or
				// mix outputs if two requests overlapped.
				if err := k.Eval(testCtx(t), "m = n\nprint('req', m)\nn = m + 1", rec); err != nil {
					return err
				}
				if !strings.HasPrefix(rec.out(), "req ") || strings.Count(rec.out(), "\n") != 1 {
					return fmt.Errorf("output of one request: %q", rec.out())
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := reprOK(t, k, "n"); got != "100" {
		t.Errorf("n = %s, want 100", got)
	}
}

func TestConcurrentRequestsOnDifferentKernels(t *testing.T) {
	t.Parallel()
	const kernels = 3
	ks := make([]*Kernel, kernels)
	for i := range ks {
		ks[i] = startKernel(t)
		evalOK(t, ks[i], fmt.Sprintf("me = %d\ntotal = 0", i))
	}
	var g errgroup.Group
	for i, k := range ks {
		g.Go(func() error {
			for range 30 {
				rec := &recorder{}
				if err := k.Eval(testCtx(t), "total += me\nprint(me)", rec); err != nil {
					return err
				}
				if rec.out() != fmt.Sprintf("%d\n", i) {
					return fmt.Errorf("kernel %d printed %q", i, rec.out())
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, k := range ks {
		if got, want := reprOK(t, k, "total"), strconv.Itoa(30*i); got != want {
			t.Errorf("kernel %d: total = %s, want %s", i, got, want)
		}
	}
}

func TestResultIsCappedOutputIsNot(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	err := k.Eval(testCtx(t), "raise ValueError('x' * 10_000_000)", nil)
	var re *RemoteError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want *RemoteError", err)
	}
	if re.Type != "ValueError" {
		t.Errorf("type = %q", re.Type)
	}
	if total := len(re.Message) + len(re.Traceback); total > 64<<10 {
		t.Errorf("result strings hold %d bytes, over the 64 KiB cap", total)
	}
	if !strings.HasPrefix(re.Message, "xxxx") || !strings.HasSuffix(re.Message, " bytes cut]") {
		t.Errorf("message is not cut with a marker: ...%q", tail(re.Message))
	}
	kept := strings.Count(re.Message, "x")
	if want := fmt.Sprintf("[ripple: %d bytes cut]", 10_000_000-kept); !strings.HasSuffix(re.Message, want) {
		t.Errorf("marker %q does not count the cut bytes (want %q)", tail(re.Message), want)
	}
	// Multi-byte characters are cut at a character boundary.
	err = k.Eval(testCtx(t), "raise ValueError('é' * 100_000)", nil)
	if !errors.As(err, &re) || !strings.HasSuffix(re.Message, " bytes cut]") || strings.ContainsRune(re.Message, '\uFFFD') {
		t.Errorf("multi-byte message: %v", tail(re.Message))
	}
	// Output of the same size is delivered whole.
	c := &counter{}
	if err := k.Eval(testCtx(t), "import sys; sys.stdout.write('x' * 10_000_000)", c); err != nil {
		t.Fatal(err)
	}
	if c.stdout != 10_000_000 {
		t.Errorf("output: %d bytes, want 10000000", c.stdout)
	}
}

func TestOsExitNamesStatusAndFailsEveryWaiter(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	ctx := testCtx(t)
	evalOK(t, k, "import sys; sys.stderr.write('about to exit\\n')")
	first := runUntilOutput(t, func(s Sink) error {
		return k.Eval(ctx, "import os, time\nprint('go', flush=True)\ntime.sleep(0.2)\nos._exit(3)", s)
	})
	// A second caller waits for its turn behind the dying request.
	second := make(chan error, 1)
	go func() { second <- k.Eval(ctx, "x = 1", nil) }()
	for _, c := range []<-chan error{first, second} {
		err := <-c
		var exit *ExitError
		if !errors.As(err, &exit) || !errors.Is(err, ErrKernelDied) {
			t.Fatalf("err = %v, want *ExitError", err)
		}
		if exit.Code != 3 || exit.Signal != 0 || !strings.Contains(err.Error(), "exit status 3") {
			t.Errorf("exit = %+v, error %q does not name exit status 3", exit, err)
		}
		if !strings.Contains(exit.Stderr, "about to exit") {
			t.Errorf("Stderr %q lacks the last stderr line", exit.Stderr)
		}
		if exit.LogPath == "" || !strings.Contains(err.Error(), exit.LogPath) {
			t.Errorf("error does not name the startup log: %v", err)
		}
	}
	<-k.Done()
	if !errors.Is(k.Err(), ErrKernelDied) {
		t.Errorf("Err() = %v", k.Err())
	}
	if err := k.Eval(ctx, "x = 1", nil); !errors.Is(err, ErrKernelDied) {
		t.Errorf("call on a dead kernel: %v", err)
	}
}

func TestSegfaultNamesSIGSEGV(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	err := k.Eval(testCtx(t), "import ctypes; ctypes.string_at(0)", nil)
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("err = %v, want *ExitError", err)
	}
	if exit.Signal != syscall.SIGSEGV || !strings.Contains(err.Error(), "signal SIGSEGV") {
		t.Errorf("err = %v, want it to name SIGSEGV", err)
	}
	// faulthandler reports the crash in the startup log.
	if !strings.Contains(exit.Stderr, "Segmentation fault") {
		t.Errorf("Stderr lacks the crash report: %q", exit.Stderr)
	}
}

func TestSigkillMidRequest(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	errc := runUntilOutput(t, func(s Sink) error { return k.Eval(testCtx(t), busyLoop, s) })
	syscall.Kill(k.PID(), syscall.SIGKILL)
	err := <-errc
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Signal != syscall.SIGKILL || !strings.Contains(err.Error(), "SIGKILL") {
		t.Fatalf("err = %v, want an ExitError naming SIGKILL", err)
	}
	if exit.Killed != "" {
		t.Errorf("ripple did not kill it, but Killed = %q", exit.Killed)
	}
}

func TestStopIsGracefulAndKillsChildren(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	// As at any interpreter exit, a non-daemon thread is waited for, then
	// the atexit handlers run, then buffered output is flushed.
	evalOK(t, k, `import subprocess, atexit, sys, threading, time
child = subprocess.Popen(['sleep', '600'])
atexit.register(lambda: open('stopped-cleanly', 'w').close())
def finish_writing():
    time.sleep(0.2)
    with open('thread-finished', 'w') as f:
        f.write('done')
threading.Thread(target=finish_writing).start()
unflushed = open('unflushed', 'w', buffering=1 << 20)
unflushed.write('kept')
atexit.register(lambda: unflushed.write(' and more'))`)
	child, _ := strconv.Atoi(reprOK(t, k, "child.pid"))
	if !alive(child) {
		t.Fatalf("child %d is not running", child)
	}
	if err := k.Stop(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(k.Err(), ErrStopped) {
		t.Errorf("Err() after Stop = %v, want ErrStopped", k.Err())
	}
	if _, err := os.Stat(filepath.Join(k.cfg.Root, "stopped-cleanly")); err != nil {
		t.Errorf("atexit handlers did not run: Stop was not graceful: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(k.cfg.Root, "thread-finished")); string(b) != "done" {
		t.Errorf("a non-daemon thread was not waited for: %q, %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(k.cfg.Root, "unflushed")); string(b) != "kept and more" {
		t.Errorf("a buffered file was not flushed at exit: %q, %v", b, err)
	}
	if k.killedByRipple() {
		t.Errorf("a kernel at rest needed SIGKILL to stop")
	}
	waitGone(t, k.PID())
	waitGone(t, child)
	if _, err := os.Stat(k.LogPath()); !os.IsNotExist(err) {
		t.Errorf("startup log of a cleanly stopped kernel was kept: %v", err)
	}
	if err := k.Stop(testCtx(t)); err != nil { // idempotent
		t.Errorf("second Stop: %v", err)
	}
}

func TestStopInterruptsARunningRequest(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	errc := runUntilOutput(t, func(s Sink) error { return k.Eval(testCtx(t), busyLoop, s) })
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ { // concurrent Stops are fine
		wg.Add(1)
		go func() { defer wg.Done(); k.Stop(testCtx(t)) }()
	}
	wg.Wait()
	if err := <-errc; !errors.Is(err, ErrStopped) {
		t.Errorf("request during Stop: err = %v, want ErrStopped", err)
	}
}

func TestDeadKernelTakesItsChildren(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "import subprocess\nchild = subprocess.Popen(['sleep', '600'])")
	child, _ := strconv.Atoi(reprOK(t, k, "child.pid"))
	err := k.Eval(testCtx(t), "import os; os._exit(1)", nil)
	if !errors.Is(err, ErrKernelDied) {
		t.Fatalf("err = %v", err)
	}
	waitGone(t, child)
}

func TestKernelExitsWhenConnectionCloses(t *testing.T) {
	t.Parallel()
	for _, busy := range []bool{false, true} {
		t.Run(fmt.Sprintf("busy=%v", busy), func(t *testing.T) {
			t.Parallel()
			k := startKernel(t, func(c *Config) { c.skipLossGrace = true })
			evalOK(t, k, "import subprocess\nchild = subprocess.Popen(['sleep', '600'])")
			child, _ := strconv.Atoi(reprOK(t, k, "child.pid"))
			var errc <-chan error
			if busy {
				errc = runUntilOutput(t, func(s Sink) error { return k.Eval(testCtx(t), busyLoop, s) })
			}
			k.closeConn()
			select {
			case <-k.Done():
			case <-testCtx(t).Done():
				t.Fatal("kernel did not exit after its connection closed")
			}
			if k.killedByRipple() {
				t.Fatal("ripple had to kill the kernel")
			}
			var exit *ExitError
			if !errors.As(k.Err(), &exit) || exit.Signal != 0 {
				t.Errorf("kernel did not exit by itself: %v", k.Err())
			}
			if busy {
				if err := <-errc; !errors.Is(err, ErrKernelDied) {
					t.Errorf("request in flight: %v", err)
				}
			}
			waitGone(t, child)
		})
	}
}

func TestStartupLogKeepsBootErrors(t *testing.T) {
	t.Parallel()
	_, err := Start(testCtx(t), Config{
		Python: python(t), Root: t.TempDir(), LogDir: t.TempDir(),
		Env: []string{"PYTHONHOME=/nonexistent-ripple-home"},
	})
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("err = %v, want *ExitError", err)
	}
	logged, _ := os.ReadFile(exit.LogPath)
	if !strings.Contains(string(logged), "Fatal Python error") {
		t.Errorf("startup log lacks the boot error:\n%s", logged)
	}
	if !strings.Contains(err.Error(), "Fatal Python error") {
		t.Errorf("error does not quote the boot error: %v", err)
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	if _, err := Start(ctx, Config{Root: t.TempDir()}); !errors.Is(err, ErrNoPython) {
		t.Errorf("no Python: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := Start(ctx, Config{Python: python(t), Root: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing root: %v", err)
	}
	_, err := Start(ctx, Config{Python: Interpreter{Path: "/nonexistent/python3"}, Root: t.TempDir(), LogDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Errorf("missing interpreter: %v", err)
	}
}

func TestStartGivesUpWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(testCtx(t))
	cause := errors.New("caller gave up")
	cfg := Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir(),
		// The kernel is held before the handshake: the test cancels then.
		onListen: func(int) { cancel(cause) }}
	_, err := Start(ctx, cfg)
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the context's cause", err)
	}
}

// A child forked by user code that returns into the kernel's loop must not
// answer for the parent: the parent's result and state stay intact.
func TestForkedChildDoesNotAnswer(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	rec := &recorder{}
	code := `import os
pid = os.fork()
who = 'child' if pid == 0 else 'parent'
os.write(1, ('hello from %s\n' % who).encode())  # one write: lines do not mix
if pid:
    os.waitpid(pid, 0)`
	if err := k.Eval(testCtx(t), code, rec); err != nil {
		t.Fatal(err)
	}
	out := rec.out()
	if !strings.Contains(out, "hello from child") || !strings.Contains(out, "hello from parent") {
		t.Errorf("output = %q", out)
	}
	for i := 0; i < 5; i++ {
		if got := reprOK(t, k, "who"); got != "'parent'" {
			t.Fatalf("who = %s: the child answered for the parent", got)
		}
	}
}

// User code that closes fd 1 loses its output, not the kernel: the
// pump does not spin on the closed pipe and stderr still works.
func TestClosedStdoutKeepsKernelWorking(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "import os; os.close(1)")
	rec := &recorder{}
	if err := k.Eval(testCtx(t), "import os; os.write(2, b'still here\\n')", rec); err != nil {
		t.Fatal(err)
	}
	if rec.err() != "still here\n" {
		t.Errorf("stderr = %q", rec.err())
	}
	// A spinning pump would burn CPU while the kernel sleeps; an idle one
	// uses next to none, however loaded the machine is.
	before := cpuTime(t, k.PID())
	evalOK(t, k, "import time; time.sleep(0.5)")
	if used := cpuTime(t, k.PID()) - before; used > 250*time.Millisecond {
		t.Errorf("the kernel used %v of CPU while sleeping 0.5 s: the pump spins", used)
	}
}

// cpuTime returns the user+system CPU time of a process.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// The project's own modules named like the server's imports (json.py,
// socket.py) do not shadow them while the kernel starts, as for a script
// run from its own directory; user code then imports the project's, from
// the project root, and sys.argv and __file__ are a script's.
func TestProjectModulesDoNotShadowTheServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, name := range []string{"json.py", "socket.py", "marshal.py"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte("raise SystemExit('the project shadowed the server')\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "mine.py"), []byte("VALUE = 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := startKernel(t, func(c *Config) { c.Root = root })
	got, err := k.Repr(testCtx(t), "(__import__('mine').VALUE, __import__('sys').argv, __import__('sys').path[0] == "+strconv.Quote(root)+")", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "(7, [''], True)"; got != want {
		t.Fatalf("user code sees %s, want %s", got, want)
	}
}

// Config.Preload: the kernel imports the modules before it is ready; one
// that does not import is logged and the kernel starts anyway.
func TestPreload(t *testing.T) {
	t.Parallel()
	k := startKernel(t, func(c *Config) {
		if err := os.WriteFile(filepath.Join(c.Root, "loud.py"), []byte("raise SystemExit(3)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c.Preload = []string{"json.tool", "no_such_module_xyz", "loud"}
	})
	ctx := testCtx(t)
	raw, err := k.Call(ctx, "eval", map[string]string{"code": "[m in __import__('sys').modules for m in ('json.tool', 'no_such_module_xyz', 'loud', 'tomllib')]", "mode": "eval"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(raw); !strings.Contains(got, "[True, False, False, False]") {
		t.Errorf("modules imported: %s, want json.tool only", got)
	}
	log, err := os.ReadFile(k.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"preload no_such_module_xyz: ModuleNotFoundError", "preload loud: SystemExit: 3"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("start-up log lacks %q:\n%s", want, log)
		}
	}
}
