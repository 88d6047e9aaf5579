package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

// testDeadline bounds every wait of a test: generous, because the machine
// is shared; reaching it is a failure, never an expected path.
const testDeadline = 60 * time.Second

// testCtx returns a context that ends with the test or at testDeadline.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	t.Cleanup(cancel)
	return ctx
}

// startKernel starts a kernel on a fresh project root and stops it (and
// checks that its process is gone) when the test ends.
func startKernel(t testing.TB, edit ...func(*Config)) *Kernel {
	t.Helper()
	cfg := Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir()}
	for _, e := range edit {
		e(&cfg)
	}
	k, err := Start(testCtx(t), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		k.Stop(context.Background())
		waitGone(t, k.PID())
	})
	return k
}

// alive reports whether a process with this pid exists and is not a
// zombie (a zombie no longer runs anything).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// waitGone polls until process pid is gone, failing the test at the deadline.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	testenv.Eventually(t, "process "+strconv.Itoa(pid)+" to be gone", func() bool { return !alive(pid) })
}

// recorder is a Sink that keeps everything, safe to read after the call.
type recorder struct {
	mu       sync.Mutex
	stdout   bytes.Buffer
	stderr   bytes.Buffer
	events   []string // "out:<bytes>", "err:<bytes>", "prog:<json>" in arrival order
	progress []json.RawMessage
	onOutput func(Stream, []byte)
}

func (r *recorder) Output(s Stream, b []byte) {
	r.mu.Lock()
	if s == Stdout {
		r.stdout.Write(b)
	} else {
		r.stderr.Write(b)
	}
	r.events = append(r.events, s.String()+":"+string(b))
	f := r.onOutput
	r.mu.Unlock()
	if f != nil {
		f(s, b)
	}
}

func (r *recorder) Progress(ev json.RawMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, append(json.RawMessage(nil), ev...))
	r.events = append(r.events, "prog:"+string(ev))
}

func (r *recorder) out() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdout.String()
}

func (r *recorder) err() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

// counter is a Sink that only counts bytes.
type counter struct {
	mu     sync.Mutex
	stdout int64
	last   []byte // the last 64 bytes seen on stdout
}

func (c *counter) Output(s Stream, b []byte) {
	if s != Stdout {
		return
	}
	c.mu.Lock()
	c.stdout += int64(len(b))
	c.last = append(c.last, b...)
	if len(c.last) > 64 {
		c.last = append(c.last[:0], c.last[len(c.last)-64:]...)
	}
	c.mu.Unlock()
}

func (c *counter) Progress(json.RawMessage) {}

// withEngine installs the ripple_kernel package with the given source as
// its engine module into a temporary script directory and makes the
// kernel use it.
func withEngine(t testing.TB, engine string) func(*Config) {
	t.Helper()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "ripple_kernel")
	if err := os.Mkdir(pkg, 0o700); err != nil {
		t.Fatal(err)
	}
	files, err := readPythonFiles(pythonFiles)
	if err != nil {
		t.Fatal(err)
	}
	files["ripple_kernel/engine.py"] = []byte(engine)
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return func(c *Config) { c.scriptDir = dir }
}

// evalOK runs code and fails the test on error.
func evalOK(t testing.TB, k *Kernel, code string) {
	t.Helper()
	if err := k.Eval(testCtx(t), code, nil); err != nil {
		t.Fatalf("eval %q: %v", code, err)
	}
}

// reprOK evaluates expr and fails the test on error.
func reprOK(t testing.TB, k *Kernel, expr string) string {
	t.Helper()
	r, err := k.Repr(testCtx(t), expr, nil)
	if err != nil {
		t.Fatalf("repr %q: %v", expr, err)
	}
	return r
}

// busyLoop prints, then spins until interrupted.
const busyLoop = "print('busy', flush=True)\nwhile True: pass"

// runUntilOutput runs a request (run gets its sink) on its own goroutine
// and returns once the request has printed something, so it is running.
// The channel receives the request's error.
func runUntilOutput(t testing.TB, run func(Sink) error) <-chan error {
	t.Helper()
	started := make(chan struct{})
	var once sync.Once
	rec := &recorder{onOutput: func(Stream, []byte) { once.Do(func() { close(started) }) }}
	errc := make(chan error, 1)
	go func() { errc <- run(rec) }()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("the request ended before it printed: %v", err)
	}
	return errc
}
