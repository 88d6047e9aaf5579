package batch

// drive: the last phase of a test run. The workers run the queue, the
// pool's goroutine hands their results to the report until every worker
// ended, and the entries left without a result are told why they did not
// run.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// drive runs the queued groups of t on the workers ws, whose sessions are
// open, hands the results to c until every worker ended, and completes
// what did not run (skipped when the run was stopped, crashed when no
// kernel was left to run it). Its error wraps ErrInterrupted or
// ErrStopped when the run was stopped so.
func (t *testRun) drive(ctx, runCtx context.Context, ws []*testWorker, c *completer) error {
	t.running = true
	t.began = time.Now()
	done := t.startWorkers(ctx, runCtx, ws)
	reason := t.gather(ctx, c, done)
	interruptedBy, stopAt, reason := workersStop(ws, reason, c.report)
	if errors.Is(reason, ErrInterrupted) {
		c.report.interruptText = interruptText(ws)
	}
	if c.stopAt >= 0 && (stopAt < 0 || c.stopAt < stopAt) {
		stopAt = c.stopAt // --maxfail reached over the kernels together
	}
	c.report.pytestStopped = pytestStopLine(reason)
	c.report.interruptedBy = interruptedBy
	err := t.completeNotRun(c, reason, interruptedBy, stopAt)
	c.report.Duration = time.Since(c.started)
	return err
}

// startWorkers runs each worker's loop on a goroutine of its own (then
// stops its kernel, unless the run keeps them); done is closed once every
// one ended.
func (t *testRun) startWorkers(ctx, runCtx context.Context, ws []*testWorker) (done <-chan struct{}) {
	ended := make(chan struct{})
	// loops: the workers' loops; stops: their goroutines, kernels
	// stopped (the late workers' too).
	var loops, stops sync.WaitGroup
	for _, w := range ws {
		loops.Add(1)
		stops.Add(1)
		go func() {
			defer stops.Done()
			w.loop(runCtx)
			loops.Done()
			if !t.flags.keep {
				w.stopKernel(ctx)
			}
		}()
	}
	// A late worker that has not joined when the others' loops are done
	// has nothing left to join (they ran the whole queue): its wait or
	// its collection is cancelled, its kernel killed (abortLate), while
	// the others' kernels stop.
	lateCtx, cancelLate := context.WithCancel(runCtx)
	for _, w := range t.late {
		stops.Add(1)
		go func() {
			defer stops.Done()
			if w.lateJoin(lateCtx) {
				w.loop(runCtx)
			}
			if !t.flags.keep {
				w.stopKernel(ctx)
			}
		}()
	}
	go func() {
		loops.Wait()
		cancelLate()
		for _, w := range t.late {
			w.abortLate(ctx)
		}
		stops.Wait()
		close(ended)
	}()
	return ended
}

// gather hands the workers' results to c until done, stopping the run at
// the first failure under --fail-fast and when ctx ends (Ctrl-C). It
// returns why it stopped the run (nil: it did not).
func (t *testRun) gather(ctx context.Context, c *completer, done <-chan struct{}) error {
	var tick <-chan time.Time
	if t.opts.Observer != nil {
		tk := time.NewTicker(progressInterval)
		defer tk.Stop()
		tick = tk.C
	}
	var reason error
	interrupt := ctx.Done()
	for {
		select {
		case ir := <-t.results:
			c.complete(ir.i, ir.r)
			if c.stopAt >= 0 && reason == nil {
				// pytest's --maxfail (-x), counted over every kernel in
				// pytest's order: nothing after that entry runs.
				reason = fmt.Errorf("%w: stopping after %d failures", ErrStopped, c.failures)
				c.report.StoppedEarly = true
				t.stopAfter(c.stopAt)
				t.stop(reason)
			}
			if ir.r.Status.Failing() && t.opts.FailFast && reason == nil {
				c.report.StoppedEarly = true
				reason = errFailFast
				t.stop(errFailFast)
			}
		case <-interrupt:
			interrupt = nil
			if reason == nil {
				reason = ErrInterrupted
				t.stop(ErrInterrupted)
			}
		case <-done:
			// The workers ended: what they sent last is buffered.
			for {
				select {
				case ir := <-t.results:
					c.complete(ir.i, ir.r)
					continue
				default:
				}
				return reason
			}
		case <-tick:
			c.progress()
		}
	}
}

// workersStop is why the run stopped when gather did not stop it (reason
// nil): a worker's account, read once the workers ended. A test that
// raised KeyboardInterrupt itself (interruptedBy says which) interrupts
// the run; pytest's -x or --maxfail stops it (ErrStopped).
// stopAt is then the first entry (in pytest's order) at which a kernel's
// pytest stopped: pytest would have run nothing after it.
func workersStop(ws []*testWorker, reason error, report *Report) (interruptedBy string, stopAt int, _ error) {
	stopAt = -1
	for _, w := range ws {
		if w.interrupted != "" && reason == nil {
			reason, interruptedBy = ErrInterrupted, w.interrupted
		}
		if w.stopped == "" {
			continue
		}
		if stopAt < 0 || w.stopAt < stopAt {
			stopAt = w.stopAt
		}
		if reason == nil {
			reason = fmt.Errorf("%w: %s", ErrStopped, w.stopped)
			if w.stopInterrupts {
				reason = fmt.Errorf("%w: %w: %s", ErrStopped, ErrStoppedInterrupted, w.stopped)
			}
			report.StoppedEarly = true
		}
	}
	return interruptedBy, stopAt, reason
}

// interruptText is what pytest's terminal shows of the KeyboardInterrupt
// that ended the run: the kernel's whose test raised it, else (Ctrl-C,
// which each kernel's running test received) the first kernel's that
// has one; "" when none does.
func interruptText(ws []*testWorker) string {
	text := ""
	for _, w := range ws {
		w.mu.Lock()
		own, t := w.interrupted != "", w.interruptText
		w.mu.Unlock()
		if own && t != "" {
			return t
		}
		if text == "" {
			text = t
		}
	}
	return text
}

// notRunPrefix starts the message of a test a stopped run did not run.
const notRunPrefix = "not run: "

// completeNotRun gives every entry without a result one that says why it
// did not run: skipped when the run stopped (reason), crashed when no
// kernel was left to run it. It returns the run's error.
func (t *testRun) completeNotRun(c *completer, reason error, interruptedBy string, stopAt int) error {
	var runErr error
	why := "stopped by --fail-fast after the first failure"
	switch {
	case errors.Is(reason, ErrInterrupted):
		why = "interrupted (Ctrl-C)"
		if interruptedBy != "" {
			why = "interrupted: " + interruptedBy
		}
		c.report.Interrupted = true
		runErr = fmt.Errorf("%w: %d of %d tests ended", ErrInterrupted, c.ended, len(t.entries))
	case errors.Is(reason, ErrStopped):
		why = reason.Error()
		if errors.Is(reason, ErrStoppedInterrupted) {
			runErr = reason // pytest's exit status differs (2)
		}
	}
	notRun := &Result{Status: StatusSkipped, Message: notRunPrefix + why}
	if reason == nil {
		// Nothing stopped the run, yet tests did not run: every kernel
		// that could run them is gone. Not a green run.
		notRun = &Result{Status: StatusCrashed, Message: "not run: no kernel left to run it: " + strings.Join(t.gone, "; ")}
	}
	if errors.Is(reason, ErrStopped) {
		// pytest's -x or --maxfail: as pytest, the report lists the tests
		// that ran, not those the stop left (nor those it interrupted on
		// other kernels, nor those other kernels ran after the stopping
		// test in pytest's order: pytest would not have started them).
		i := 0
		c.report.Results = slices.DeleteFunc(c.report.Results, func(r *Result) bool {
			i++
			return r == nil || r.Status == StatusInterrupted || (stopAt >= 0 && i-1 > stopAt)
		})
		return runErr
	}
	for i, r := range c.report.Results {
		if r == nil {
			r := *notRun
			r.Entry = t.entries[i]
			c.complete(i, &r)
		}
	}
	return runErr
}
