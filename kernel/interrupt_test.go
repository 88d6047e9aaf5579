package kernel

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cancelOn returns a sink that cancels ctx with cause when output
// containing marker arrives, plus the context to run the request with.
func cancelOn(t testing.TB, marker string, cause error) (context.Context, *recorder) {
	ctx, cancel := context.WithCancelCause(testCtx(t))
	t.Cleanup(func() { cancel(nil) })
	var once sync.Once
	rec := &recorder{}
	rec.onOutput = func(s Stream, b []byte) {
		if strings.Contains(string(b), marker) {
			once.Do(func() { cancel(cause) })
		}
	}
	return ctx, rec
}

func TestInterruptKeepsTheKernelAndItsGlobals(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "x = 41")
	cases := map[string]string{
		"busy loop":   "while True: pass",
		"sleep":       "import time; time.sleep(600)",
		"child":       "import subprocess; subprocess.run(['sleep', '600'])",
		"C call":      "import select; select.select([], [], [], 600)",
		"nested call": "def spin():\n    while True: pass\nspin()",
	}
	for name, body := range cases {
		cause := errors.New("stop " + name)
		ctx, rec := cancelOn(t, "spinning", cause)
		err := k.Eval(ctx, "print('spinning', flush=True)\n"+body, rec)
		if !errors.Is(err, ErrInterrupted) || !errors.Is(err, cause) {
			t.Fatalf("%s: err = %v, want ErrInterrupted wrapping the cause", name, err)
		}
		if got := reprOK(t, k, "x"); got != "41" {
			t.Fatalf("%s: x = %s after the interrupt, want 41", name, got)
		}
	}
}

func TestCancelledBeforeSendingRunsNothing(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	ctx, cancel := context.WithCancelCause(testCtx(t))
	cause := errors.New("superseded")
	cancel(cause)
	err := k.Eval(ctx, "ran = True", nil)
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, cause) {
		t.Fatalf("err = %v", err)
	}
	if got := reprOK(t, k, "'ran' in globals()"); got != "False" {
		t.Errorf("a request cancelled before it was sent ran")
	}
}

// SIGINT reaching an idle kernel is recorded for no request: the next
// request is not interrupted by it.
func TestInterruptWhileIdleIsForgotten(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "n = 0")
	for i := 0; i < 50; i++ {
		if err := syscall.Kill(-k.PID(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := k.Eval(testCtx(t), "n += 1", nil); err != nil {
			t.Fatalf("request %d after an idle SIGINT: %v", i, err)
		}
	}
	if got := reprOK(t, k, "n"); got != "50" {
		t.Errorf("n = %s, want 50", got)
	}
}

// The interrupt races with the end of the request: whatever wins, the
// result is either ok with all its output or int, and the kernel lives on.
func TestLateInterruptNeverTearsAResult(t *testing.T) {
	t.Parallel()
	k := startKernel(t)
	evalOK(t, k, "done = 0")
	var ok, interrupted int
	for i := 0; i < 150; i++ {
		marker := "tail-" + strconv.Itoa(i)
		ctx, rec := cancelOn(t, marker, errors.New("late"))
		code := "print('head')\nprint('" + marker + "', flush=True)\ndone += 1"
		switch err := k.Eval(ctx, code, rec); {
		case err == nil:
			ok++
			if rec.out() != "head\n"+marker+"\n" {
				t.Fatalf("request %d: ok but output %q", i, rec.out())
			}
		case errors.Is(err, ErrInterrupted):
			interrupted++
			if !strings.HasPrefix(rec.out(), "head\n") {
				t.Fatalf("request %d: interrupted, output %q", i, rec.out())
			}
		default:
			t.Fatalf("request %d: %v", i, err)
		}
	}
	t.Logf("%d completed before the interrupt landed, %d interrupted", ok, interrupted)
	if done, _ := strconv.Atoi(reprOK(t, k, "done")); done < ok {
		t.Errorf("done = %d, but %d requests completed", done, ok)
	}
}

func TestIgnoredInterruptRestartsTheKernel(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"SIG_IGN": "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint('spinning', flush=True)\nwhile True: pass",
		"swallowed": `while True:
    try:
        print('spinning', flush=True)
        while True: pass
    except KeyboardInterrupt:
        pass`,
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			k := startKernel(t, func(c *Config) { c.InterruptTimeout = 300 * time.Millisecond })
			cause := errors.New("stop it")
			ctx, rec := cancelOn(t, "spinning", cause)
			err := k.Eval(ctx, code, rec)
			if !errors.Is(err, ErrKernelRestarted) || !errors.Is(err, cause) {
				t.Fatalf("err = %v, want ErrKernelRestarted wrapping the cause", err)
			}
			<-k.Done()
			var exit *ExitError
			if !errors.As(k.Err(), &exit) || !strings.Contains(exit.Killed, "did not stop") {
				t.Errorf("kernel end = %v, want it killed for not stopping", k.Err())
			}
			// The stack dump taken before the kill shows where it spun.
			if exit != nil && !strings.Contains(exit.Stderr, "<ripple-eval-") {
				t.Errorf("Stderr lacks the stuck stack:\n%s", exit.Stderr)
			}
		})
	}
}
