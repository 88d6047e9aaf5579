package kernel

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// raceTimeout is the interrupt timeout of the race tests: far longer than
// any answered interrupt takes, so that only an interrupt the kernel lost
// (the request runs on: the code below never ends by itself) reaches it
// and ends the call with ErrKernelRestarted.
const raceTimeout = 20 * time.Second

// raceBodies are user code that runs until interrupted, blocked in C and
// busy in bytecode.
var raceBodies = []struct{ name, code string }{
	{"sleep", "import time\ntime.sleep(30)"},
	{"busy loop", "while True: pass"},
}

// checkInterrupted fails the test unless err is an answered interrupt.
func checkInterrupted(t *testing.T, what string, err error) {
	t.Helper()
	if errors.Is(err, ErrKernelRestarted) {
		t.Fatalf("%s: the interrupt was lost and the kernel restarted: %v", what, err)
	}
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("%s: err = %v, want ErrInterrupted", what, err)
	}
}

// checkStateKept fails the test unless the kernel is the same live
// process and still holds the global the test set before the race.
func checkStateKept(t *testing.T, k *Kernel, pid int) {
	t.Helper()
	if k.PID() != pid || k.Err() != nil {
		t.Fatalf("kernel %d ended (%v)", pid, k.Err())
	}
	if got := reprOK(t, k, "survivor"); got != "'kept'" {
		t.Fatalf("survivor = %s after the interrupts, want 'kept'", got)
	}
}

// A request cancelled right after Call wrote it (a run superseded just as
// it began) must end interrupted whenever the SIGINT lands: before the
// kernel read the frame, while it parses it, in its bookkeeping or in the
// user code. The cancel happens synchronously after the write, then at
// random offsets of up to 3 ms.
func TestInterruptRightAfterSendIsNeverLost(t *testing.T) {
	t.Parallel()
	const iterations = 150
	cancelAfterSend := func() {} // replaced for each racing call
	k := startKernel(t, func(c *Config) {
		c.InterruptTimeout = raceTimeout
		// Runs on the goroutine that called Eval, between the write and
		// the wait for the result.
		c.afterSend = func(uint64) { cancelAfterSend() }
	})
	evalOK(t, k, "survivor = 'kept'")
	pid := k.PID()
	seed := uint64(time.Now().UnixNano())
	t.Logf("random offsets seeded with %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, body := range raceBodies {
		for i := 0; i < iterations; i++ {
			ctx, cancel := context.WithCancel(testCtx(t))
			var offset time.Duration
			if i%2 == 1 {
				offset = time.Duration(rng.IntN(3000)) * time.Microsecond
			}
			if offset == 0 {
				cancelAfterSend = cancel
			} else {
				cancelAfterSend = func() { time.AfterFunc(offset, cancel) }
			}
			err := k.Eval(ctx, body.code, nil)
			cancel()
			checkInterrupted(t, body.name+" #"+strconv.Itoa(i)+" cancelled "+offset.String()+" after the send", err)
		}
	}
	checkStateKept(t, k, pid)
}

// checkAnswered fails the test unless the call ended interrupted while
// ctx was still live: an interrupt sent by a test hook, not by the end of
// ctx (which would interrupt the request again at the test deadline).
func checkAnswered(t *testing.T, what string, ctx context.Context, err error) {
	t.Helper()
	if ctx.Err() != nil {
		t.Fatalf("%s: the interrupt was not answered before the test deadline (%v)", what, err)
	}
	checkInterrupted(t, what, err)
}

// The window widened to its extreme: the SIGINT for a request is sent
// before the request's frame, so its handler runs while the kernel is
// idle, before it knows the request exists. The interrupt is still the
// request's. (The Go side never does this itself: it interrupts only
// requests it has sent.)
func TestInterruptBeforeTheKernelReadsTheRequest(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "survivor = 'kept'")
	pid := k.PID()
	k.cfg.beforeSend = k.interrupt // read only by exchange, on this goroutine
	for _, body := range raceBodies {
		for i := 0; i < 20; i++ {
			ctx := testCtx(t)
			checkAnswered(t, body.name+" interrupted before the send", ctx, k.Eval(ctx, body.code, nil))
		}
	}
	k.cfg.beforeSend = nil
	checkStateKept(t, k, pid)
}

// CPython runs a signal's Python handler between bytecodes or when a
// system call fails with EINTR; a SIGINT that arrives just before a
// blocking call starts is left pending while the call blocks. The kernel
// must still answer the interrupt. The test builds that state exactly:
// the request's interrupt is announced in the interrupt cell (before the
// request is sent, as interrupt orders it before its SIGINT), and a
// helper thread of the user code trips SIGINT for the main thread
// (_thread.interrupt_main: the Python-level delivery without the OS
// signal, so no EINTR) once the main thread has released the GIL to
// block.
func TestInterruptPendingBehindABlockingCallIsAnswered(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "import threading, _thread, time, select")
	k.cfg.beforeSend = func(id uint64) {
		k.mu.Lock()
		k.cell.announce(id) // as interrupt does, without the SIGINT
		k.mu.Unlock()
	}
	blockers := map[string]string{
		"sleep":  "time.sleep(600)",
		"select": "select.select([], [], [], 600)",
	}
	for name, block := range blockers {
		for i := 0; i < 10; i++ {
			code := "ready = threading.Event()\n" +
				"def trip():\n    ready.wait()\n    _thread.interrupt_main()\n" +
				"threading.Thread(target=trip).start()\n" +
				"ready.set()\n" + block
			ctx := testCtx(t)
			checkAnswered(t, name, ctx, k.Eval(ctx, code, nil))
		}
	}
}
