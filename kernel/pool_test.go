package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

// poolFixture is a running pool plus what its hooks saw.
type poolFixture struct {
	p      *Pool
	events chan RestartEvent

	mu   sync.Mutex
	pids []int // every kernel that got OnReady
}

// startPool starts a pool of two slots whose OnReady sets `slot` and
// `ready_id` in each kernel; it checks at the end that no kernel survives.
func startPool(t *testing.T, edit ...func(*PoolConfig)) *poolFixture {
	t.Helper()
	f := &poolFixture{events: make(chan RestartEvent, 64)}
	cfg := PoolConfig{
		Kernel: Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir()},
		Size:   2,
		OnReady: func(ctx context.Context, slot int, k *Kernel) error {
			f.mu.Lock()
			f.pids = append(f.pids, k.PID())
			f.mu.Unlock()
			return k.Eval(ctx, fmt.Sprintf("slot = %d\nready_id = %q", slot, k.ID()), nil)
		},
		OnRestart: func(ev RestartEvent) { f.events <- ev },
	}
	for _, e := range edit {
		e(&cfg)
	}
	f.p = NewPool(cfg)
	if err := f.p.Start(testCtx(t)); err != nil {
		t.Fatalf("pool Start: %v", err)
	}
	t.Cleanup(func() {
		var pids []int
		for _, st := range f.p.Status() {
			if st.PID != 0 {
				pids = append(pids, st.PID)
			}
		}
		f.p.Stop(context.Background())
		f.mu.Lock()
		pids = append(pids, f.pids...)
		f.mu.Unlock()
		for _, pid := range pids {
			waitGone(t, pid)
		}
	})
	return f
}

func (f *poolFixture) nextEvent(t *testing.T) RestartEvent {
	t.Helper()
	select {
	case ev := <-f.events:
		return ev
	case <-testCtx(t).Done():
		t.Fatal("no restart event")
		return RestartEvent{}
	}
}

func (f *poolFixture) spareID(t *testing.T) string {
	t.Helper()
	var id string
	testenv.Eventually(t, "a warm spare", func() bool {
		for _, st := range f.p.Status() {
			if st.Slot == -1 && st.State == StateSpare {
				id = st.KernelID
				return true
			}
		}
		return false
	})
	return id
}

func (f *poolFixture) kernelID(t *testing.T, slot int) string {
	t.Helper()
	k, err := f.p.Kernel(testCtx(t), slot)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

func poolRepr(t *testing.T, p *Pool, slot int, expr string) string {
	t.Helper()
	raw, err := p.Call(testCtx(t), slot, "eval", evalParams{Code: expr, Mode: "eval"}, nil)
	if err != nil {
		t.Fatalf("slot %d: repr %q: %v", slot, expr, err)
	}
	return string(raw)
}

func TestPoolSlotsServeSeparateKernels(t *testing.T) {
	t.Parallel()
	f := startPool(t)
	ctx := testCtx(t)
	if f.p.Size() != 2 {
		t.Fatalf("Size = %d", f.p.Size())
	}
	for slot := 0; slot < 2; slot++ {
		if err := f.p.Eval(ctx, slot, fmt.Sprintf("v = 'value of %d'", slot), nil); err != nil {
			t.Fatal(err)
		}
	}
	for slot := 0; slot < 2; slot++ {
		// OnReady ran on the kernel before it served.
		if got, want := poolRepr(t, f.p, slot, "(slot, v)"), fmt.Sprintf(`{"repr":"(%d, 'value of %d')"}`, slot, slot); got != want {
			t.Errorf("slot %d: %s, want %s", slot, got, want)
		}
	}
	f.spareID(t)
	st := f.p.Status()
	if len(st) != 3 || st[0].Slot != 0 || st[1].Slot != 1 || st[2].Slot != -1 {
		t.Fatalf("Status = %+v", st)
	}
	for _, s := range st {
		if s.PID == 0 || s.KernelID == "" || !alive(s.PID) {
			t.Errorf("status %+v: no live kernel", s)
		}
	}
	if _, err := f.p.Kernel(ctx, 2); err == nil {
		t.Error("slot 2 of a pool of 2 exists")
	}
}

func TestPoolReplacesADeadKernelWithTheSpare(t *testing.T) {
	t.Parallel()
	f := startPool(t)
	ctx := testCtx(t)
	spare := f.spareID(t)
	old := f.kernelID(t, 0)
	if err := f.p.Eval(ctx, 0, "v = 1", nil); err != nil {
		t.Fatal(err)
	}
	err := f.p.Eval(ctx, 0, "import os; os._exit(3)", nil)
	if !errors.Is(err, ErrKernelDied) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err = %v, want the death of the kernel", err)
	}
	// The next request goes to the replacement, never to the dead kernel.
	if got := poolRepr(t, f.p, 0, "(slot, 'v' in globals())"); got != `{"repr":"(0, False)"}` {
		t.Errorf("replacement state: %s", got)
	}
	ev := f.nextEvent(t)
	if ev.Slot != 0 || ev.OldKernelID != old || ev.NewKernelID != spare || ev.StatePreserved ||
		!strings.Contains(ev.Reason, "exit status 3") || !errors.Is(ev.Err, ErrKernelDied) {
		t.Errorf("event = %+v; want slot 0, %s -> spare %s, exit status 3", ev, old, spare)
	}
	// A new spare is started.
	testenv.Eventually(t, "a new spare", func() bool {
		for _, st := range f.p.Status() {
			if st.Slot == -1 && st.State == StateSpare && st.KernelID != spare {
				return true
			}
		}
		return false
	})
}

func TestPoolRestartIsAReset(t *testing.T) {
	t.Parallel()
	var f *poolFixture
	f = startPool(t, func(cfg *PoolConfig) {
		// A slow listener: Restart must still return after it was told.
		cfg.OnRestart = func(ev RestartEvent) {
			time.Sleep(50 * time.Millisecond)
			f.events <- ev
		}
	})
	ctx := testCtx(t)
	spare := f.spareID(t)
	oldK, _ := f.p.Kernel(ctx, 1)
	if err := f.p.Eval(ctx, 1, "v = 1", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Restart(ctx, 1, ""); err != nil {
		t.Fatal(err)
	}
	if len(f.events) == 0 {
		t.Error("Restart returned before OnRestart was told")
	}
	if got := f.kernelID(t, 1); got != spare {
		t.Errorf("slot 1 runs %s, want the spare %s", got, spare)
	}
	if got := poolRepr(t, f.p, 1, "(slot, 'v' in globals())"); got != `{"repr":"(1, False)"}` {
		t.Errorf("state after restart: %s", got)
	}
	ev := f.nextEvent(t)
	if ev.Slot != 1 || ev.OldKernelID != oldK.ID() || ev.NewKernelID != spare || ev.Reason != "restart requested" || ev.Err != nil {
		t.Errorf("event = %+v", ev)
	}
	<-oldK.Done()
	waitGone(t, oldK.PID())
	if err := f.p.Restart(ctx, 5, ""); err == nil {
		t.Error("Restart of slot 5 succeeded")
	}
}

func TestPoolRequestCutByRestart(t *testing.T) {
	t.Parallel()
	f := startPool(t)
	errc := runUntilOutput(t, func(s Sink) error { return f.p.Eval(testCtx(t), 0, busyLoop, s) })
	if err := f.p.Restart(testCtx(t), 0, "user asked"); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrKernelRestarted) {
		t.Errorf("request on the replaced kernel: %v, want ErrKernelRestarted", err)
	}
	if ev := f.nextEvent(t); ev.Reason != "user asked" {
		t.Errorf("event = %+v", ev)
	}
}

func TestPoolInterruptTimeoutRestartsTheSlot(t *testing.T) {
	t.Parallel()
	f := startPool(t, func(c *PoolConfig) { c.Kernel.InterruptTimeout = 300 * time.Millisecond })
	old := f.kernelID(t, 0)
	ctx, rec := cancelOn(t, "spinning", errors.New("stop"))
	err := f.p.Eval(ctx, 0, "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('spinning', flush=True)\nwhile True: pass", rec)
	if !errors.Is(err, ErrKernelRestarted) {
		t.Fatalf("err = %v, want ErrKernelRestarted", err)
	}
	ev := f.nextEvent(t)
	if ev.OldKernelID != old || !strings.Contains(ev.Reason, "did not stop") || ev.StatePreserved {
		t.Errorf("event = %+v", ev)
	}
	if got := poolRepr(t, f.p, 0, "slot"); got != `{"repr":"0"}` {
		t.Errorf("slot 0 after the restart: %s", got)
	}
}

func TestPoolHealthCheckReplacesHungKernels(t *testing.T) {
	t.Parallel()
	f := startPool(t, func(c *PoolConfig) {
		c.ReconcileInterval = 20 * time.Millisecond
		c.HealthTimeout = 200 * time.Millisecond
		c.Kernel.InterruptTimeout = 200 * time.Millisecond
	})
	spare := f.spareID(t)
	var spareStatus KernelStatus
	for _, st := range f.p.Status() {
		if st.KernelID == spare {
			spareStatus = st
		}
	}
	hung, _ := f.p.Kernel(testCtx(t), 0)
	// A stopped process answers nothing, not even SIGINT.
	syscall.Kill(hung.PID(), syscall.SIGSTOP)
	syscall.Kill(spareStatus.PID, syscall.SIGSTOP)
	ev := f.nextEvent(t)
	if ev.Slot != 0 || ev.OldKernelID != hung.ID() || !strings.Contains(ev.Reason, "health check failed") {
		t.Errorf("event = %+v", ev)
	}
	waitGone(t, hung.PID())
	waitGone(t, spareStatus.PID) // the hung spare is replaced too
	if got := poolRepr(t, f.p, 0, "slot"); got != `{"repr":"0"}` {
		t.Errorf("slot 0 after the health restart: %s", got)
	}
}

func TestPoolBacksOffWhileStartsFail(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	var failed []int
	f := startPool(t, func(c *PoolConfig) {
		c.Size = 1
		c.NoSpare = true
		c.BackoffMin = 10 * time.Millisecond
		ready := c.OnReady
		c.OnReady = func(ctx context.Context, slot int, k *Kernel) error {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 2 || n == 3 {
				mu.Lock()
				failed = append(failed, k.PID())
				mu.Unlock()
				return fmt.Errorf("install failed (%d)", n)
			}
			return ready(ctx, slot, k)
		}
	})
	old := f.kernelID(t, 0)
	if err := f.p.Eval(testCtx(t), 0, "import os; os._exit(1)", nil); !errors.Is(err, ErrKernelDied) {
		t.Fatal(err)
	}
	ev := f.nextEvent(t)
	if ev.OldKernelID != old || !strings.Contains(ev.Reason, "exit status 1") {
		t.Errorf("event = %+v", ev)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n != 4 {
		t.Errorf("OnReady ran %d times, want 4 (two failures, then success)", n)
	}
	if st := f.p.Status()[0]; st.State != StateReady && st.State != StateBusy {
		t.Errorf("status after recovery: %+v", st)
	}
	// The kernels whose OnReady failed were stopped.
	mu.Lock()
	defer mu.Unlock()
	if len(failed) != 2 {
		t.Fatalf("%d failed kernels", len(failed))
	}
	for _, pid := range failed {
		waitGone(t, pid)
	}
}

func TestPoolStartFailures(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolConfig{Kernel: Config{Python: Interpreter{Path: "/nonexistent/python3"}, Root: t.TempDir(), LogDir: t.TempDir()}, Size: 1})
	if err := p.Start(testCtx(t)); err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Errorf("bad interpreter: %v", err)
	}
	var pids []int
	var mu sync.Mutex
	p = NewPool(PoolConfig{
		Kernel: Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir()}, Size: 2,
		OnReady: func(ctx context.Context, slot int, k *Kernel) error {
			mu.Lock()
			pids = append(pids, k.PID())
			mu.Unlock()
			return errors.New("cannot install modules")
		},
	})
	if err := p.Start(testCtx(t)); err == nil || !strings.Contains(err.Error(), "cannot install modules") {
		t.Errorf("failing OnReady: %v", err)
	}
	if err := p.Start(testCtx(t)); err == nil {
		t.Error("second Start succeeded")
	}
	mu.Lock()
	defer mu.Unlock()
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

func TestPoolStop(t *testing.T) {
	t.Parallel()
	f := startPool(t)
	ctx := testCtx(t)
	errc := runUntilOutput(t, func(s Sink) error { return f.p.Eval(ctx, 0, busyLoop, s) })
	var pids []int
	for _, st := range f.p.Status() {
		pids = append(pids, st.PID)
	}
	if err := f.p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrPoolStopped) {
		t.Errorf("request during Stop: %v, want ErrPoolStopped", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("kernel %d outlived Stop", pid)
		}
	}
	if err := f.p.Eval(ctx, 0, "x = 1", nil); !errors.Is(err, ErrPoolStopped) {
		t.Errorf("Eval after Stop: %v", err)
	}
	if err := f.p.Restart(ctx, 0, ""); !errors.Is(err, ErrPoolStopped) {
		t.Errorf("Restart after Stop: %v", err)
	}
	if err := f.p.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	for _, st := range f.p.Status() {
		if st.State != StateStopped {
			t.Errorf("after Stop: %+v", st)
		}
	}
}

func TestPoolDefaults(t *testing.T) {
	t.Parallel()
	p := NewPool(PoolConfig{Size: -3})
	if p.Size() < 1 {
		t.Errorf("Size = %d", p.Size())
	}
	if got := backoff(0, time.Millisecond, time.Second); got != 0 {
		t.Errorf("backoff(0) = %v", got)
	}
	for n, want := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 10: 100} {
		if got := backoff(n, 10, 100); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

// Start returns once a first kernel is ready; a slot whose first start
// fails afterwards is not lost: it retries with backoff and serves.
func TestPoolSlotFailingItsFirstStartRetries(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var attempts sync.Map // slot 1's OnReady calls
	p := NewPool(PoolConfig{
		Kernel: Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir()}, Size: 2, NoSpare: true,
		BackoffMin: 10 * time.Millisecond,
		OnReady: func(ctx context.Context, slot int, k *Kernel) error {
			if slot != 1 {
				return nil
			}
			if _, again := attempts.LoadOrStore("first", true); !again {
				<-started // fail only once Start has returned with slot 0
				return errors.New("slot 1 fails its first start")
			}
			return nil
		},
	})
	ctx := testCtx(t)
	if err := p.Start(ctx); err != nil {
		t.Fatalf("Start: %v (slot 0 starts fine)", err)
	}
	defer p.Stop(ctx)
	close(started)
	if err := p.Eval(ctx, 1, "x = 1", nil); err != nil {
		t.Fatalf("slot 1 never served after its failed first start: %v", err)
	}
	if _, ok := attempts.Load("first"); !ok {
		t.Error("slot 1's OnReady never ran")
	}
}

// Retire stops one slot's kernel gracefully (atexit handlers run), never
// replaces it, refuses further calls on it, and leaves the other slot
// serving.
func TestPoolRetireClosesOneSlot(t *testing.T) {
	t.Parallel()
	f := startPool(t, func(c *PoolConfig) { c.NoSpare = true })
	ctx := testCtx(t)
	k, err := f.p.Kernel(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.p.Eval(ctx, 1, "import atexit\natexit.register(lambda: open('retired-cleanly', 'w').close())", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Retire(1); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Retire(1); err != nil {
		t.Errorf("second Retire: %v", err)
	}
	select {
	case <-k.Done():
	case <-ctx.Done():
		t.Fatal("the retired kernel did not end")
	}
	waitGone(t, k.PID())
	if _, err := os.Stat(filepath.Join(k.cfg.Root, "retired-cleanly")); err != nil {
		t.Errorf("the retired kernel was not stopped gracefully: %v", err)
	}
	if !errors.Is(k.Err(), ErrStopped) {
		t.Errorf("retired kernel's end: %v, want ErrStopped", k.Err())
	}
	if err := f.p.Eval(ctx, 1, "x = 1", nil); !errors.Is(err, ErrSlotRetired) {
		t.Errorf("Eval on a retired slot: %v, want ErrSlotRetired", err)
	}
	if err := f.p.Restart(ctx, 1, ""); !errors.Is(err, ErrSlotRetired) {
		t.Errorf("Restart of a retired slot: %v, want ErrSlotRetired", err)
	}
	if got := poolRepr(t, f.p, 0, "slot"); got != `{"repr":"0"}` {
		t.Errorf("slot 0 after slot 1 retired: %s", got)
	}
	testenv.Eventually(t, "slot 1 reported stopped", func() bool {
		for _, st := range f.p.Status() {
			if st.Slot == 1 {
				return st.State == StateStopped && st.PID == 0
			}
		}
		return false
	})
	if err := f.p.Retire(7); err == nil {
		t.Error("Retire of slot 7 of 2 succeeded")
	}
}

// With MaxStartFailures, a slot that cannot start a kernel gives up: calls
// on it fail at once with ErrSlotRetired naming the start error, and the
// other slot serves on.
func TestPoolSlotGivesUpAfterMaxStartFailures(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var mu sync.Mutex
	attempts := 0
	p := NewPool(PoolConfig{
		Kernel: Config{Python: python(t), Root: t.TempDir(), LogDir: t.TempDir()}, Size: 2, NoSpare: true,
		BackoffMin: 10 * time.Millisecond, MaxStartFailures: 3,
		OnReady: func(ctx context.Context, slot int, k *Kernel) error {
			if slot != 1 {
				return nil
			}
			<-started // slot 0 makes Start return
			mu.Lock()
			attempts++
			mu.Unlock()
			return errors.New("no room for another kernel")
		},
	})
	ctx := testCtx(t)
	if err := p.Start(ctx); err != nil {
		t.Fatalf("Start: %v (slot 0 starts fine)", err)
	}
	defer p.Stop(ctx)
	close(started)
	err := p.Eval(ctx, 1, "x = 1", nil)
	if !errors.Is(err, ErrSlotRetired) || !strings.Contains(err.Error(), "no room for another kernel") {
		t.Fatalf("Eval on the slot that cannot start: %v, want ErrSlotRetired with the start error", err)
	}
	if !p.Retired(1) || p.Retired(0) {
		t.Errorf("retired: slot 0 %v, slot 1 %v; want only slot 1", p.Retired(0), p.Retired(1))
	}
	mu.Lock()
	if attempts != 3 {
		t.Errorf("%d starts of slot 1, want 3", attempts)
	}
	mu.Unlock()
	if st := p.Status()[1]; st.State != StateStopped || !strings.Contains(st.LastError, "gave up after 3 failed starts") {
		t.Errorf("slot 1 status %+v", st)
	}
	if err := p.Eval(ctx, 0, "x = 1", nil); err != nil {
		t.Errorf("slot 0: %v", err)
	}
}

// A Restart whose new kernel fails to start is answered with that failure
// (the caller turns it into 5001) instead of waiting through the backoffs;
// the slot goes on trying and comes back.
func TestPoolRestartAnsweredWhenTheStartFails(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	failing := false
	f := startPool(t, func(c *PoolConfig) {
		c.Size = 1
		c.NoSpare = true
		c.BackoffMin = 10 * time.Millisecond
		ready := c.OnReady
		c.OnReady = func(ctx context.Context, slot int, k *Kernel) error {
			mu.Lock()
			fail := failing
			failing = false // the next start works
			mu.Unlock()
			if fail {
				return errors.New("install failed")
			}
			return ready(ctx, slot, k)
		}
	})
	mu.Lock()
	failing = true
	mu.Unlock()
	err := f.p.Restart(testCtx(t), 0, "test")
	if err == nil || !strings.Contains(err.Error(), "install failed") {
		t.Fatalf("Restart = %v, want the failed start's error", err)
	}
	if err := f.p.Eval(testCtx(t), 0, "x = 1", nil); err != nil {
		t.Fatalf("the slot did not come back: %v", err)
	}
}
