package batch

// One request of a testWorker to its kernel ("run" or "finish"): the
// tests it holds while the call is in flight, the progress frames that
// turn them into results, and, when the call fails, the running test's
// result, the held tests put back and the kernel replaced. A session
// whose wide fixture clashed with another session's leaves the run
// (clash).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripple-run/ripple/kernel"
)

// call runs one request; false when the worker must end (the run stops or
// its kernel cannot be replaced).
//
// Its phases: hold the group's tests, send the request, then on an answer
// see whether pytest stopped or a wide fixture clashed (answered); on a
// failure say why (failure), give the running test its result and take
// back the rest (release), and put those back for a new kernel (recover).
func (w *testWorker) call(ctx context.Context, op string, group []int) bool {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.hold(group, cancel)
	params := w.runParams(op, group)
	if w.k == nil {
		return false
	}
	raw, err := w.k.Call(callCtx, pytestMethod, params, kernel.SinkFuncs{OutputFunc: w.output1, ProgressFunc: w.event})
	if err != nil {
		// What the kernel held and never sent (kernel.HeldProgress): the
		// tests that ended, and the one that began, before it failed.
		for _, ev := range w.k.HeldProgress() {
			w.event(ev)
		}
	}
	running := w.callEnded()
	if err == nil {
		return w.answered(ctx, op, raw)
	}
	f := w.failure(err, context.Cause(callCtx), running)
	rest := w.release(running, f)
	return w.recover(ctx, rest, f)
}

// hold records the tests of a call about to be sent, and its cancel (a
// test's timeout cancels the call).
func (w *testWorker) hold(group []int, cancel context.CancelCauseFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, i := range group {
		w.assigned[i] = time.Time{}
	}
	w.cancel = cancel
}

// runParams is the request of op ("run" or "finish") for the kernel
// indices group.
func (w *testWorker) runParams(op string, group []int) any {
	r := runRequest{Op: op, Indices: group}
	if !w.stay && (op == opRun || op == opFinish) && w.t.othersOpen() {
		r.YieldWide = true
	}
	if op == opFinish && w.t.flags.watch && !w.retired {
		r.Keep = true // the hot path runs its items again (hot.go)
	}
	if w.t.unit {
		return unittestRunRequest{Op: opUnittest, Step: "run", Indices: group}
	}
	return r
}

// callEnded stops the running test's timeout once the call returned, and
// says which test was running then (-1: none).
func (w *testWorker) callEnded() (running int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	return w.running
}

// answered handles a call's answer: pytest stopped the session (-x), which
// stops the run, or a wide fixture clashed (clash).
func (w *testWorker) answered(ctx context.Context, op string, raw json.RawMessage) bool {
	var a runAnswer
	if json.Unmarshal(raw, &a) == nil && a.Stopped != "" {
		w.stopped = a.Stopped
		w.mu.Lock()
		w.stopAt, w.stopInterrupts = w.lastSent, a.Interrupted
		w.mu.Unlock()
		// The other kernels run on what comes before this test in
		// pytest's order (they may stop earlier), nothing after it.
		w.t.stopAfter(w.stopAt)
		return false
	}
	if a.Clash != "" {
		return w.clash(ctx, op, a.Clash)
	}
	return true
}

// callFailure is why a call failed, as the running test's result says it.
type callFailure struct {
	status Status
	msg    string
	lost   bool // the kernel's agent was lost: not the test's doing
}

// failure says why the call failed with err (cause: its context's cause)
// while test running ran. A test's own KeyboardInterrupt stops the run
// here.
func (w *testWorker) failure(err, cause error, running int) callFailure {
	f := callFailure{status: StatusCrashed, msg: err.Error()}
	switch {
	case errors.Is(cause, errTestTimeout):
		f.status, f.msg = StatusTimeout, fmt.Sprintf("timed out after %s", w.t.opts.Timeout)
	case w.t.isStopped():
		f.status, f.msg = StatusInterrupted, "interrupted"
		if errors.Is(cause, errFailFast) {
			f.msg = "stopped by --fail-fast after the first failure"
		}
	case w.agentLost(err):
		// The agent's connection ended (killed, network, lease) or the
		// agent is stopping: its kernel's tests run again elsewhere; a
		// test that was running when a second agent was lost is not
		// tried a third time.
		f.lost = true
		w.t.opts.Logger.Warn("agent lost during the run: its kernel's tests go to other kernels", "agent", w.agent, "kernel", w.name(), "err", err)
		f.msg = fmt.Sprintf("agent %s was lost while the test ran: %v", w.agent, err)
	case errors.Is(err, kernel.ErrInterrupted) && cause == nil:
		// A KeyboardInterrupt ripple did not cause: the test raised it
		// (or signalled its own process). pytest re-raises it out of the
		// test's protocol and ends the session, interrupted (exit 2).
		f.status, f.msg = StatusInterrupted, "KeyboardInterrupt raised by the test: pytest ends its session here, and so does the run"
		w.interrupted = "a test raised KeyboardInterrupt"
		if j, ok := w.entryIndex(running); running >= 0 && ok {
			w.interrupted = w.t.entries[j].NodeID + " raised KeyboardInterrupt"
		}
		w.t.stop(fmt.Errorf("%w: %s", ErrInterrupted, w.interrupted))
	case errors.Is(err, kernel.ErrKernelDied):
		var ee *kernel.ExitError
		if errors.As(err, &ee) {
			f.msg = "the kernel died: " + ee.Status()
		}
	}
	return f
}

// release gives the test running when the call failed its result (unless
// a lost agent's test runs again elsewhere) and takes back the other
// tests the call held: returned as the share's kernel indices, sorted.
func (w *testWorker) release(running int, f callFailure) []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if running >= 0 {
		rerun := false
		if f.lost {
			j, _ := w.entryIndex(running)
			before, again := w.t.lostWhileRunning(j, w.agent)
			if again {
				f.msg += fmt.Sprintf(" (it had been run again after agent %s was lost)", before)
			}
			rerun = !again
		}
		if !rerun {
			began := w.assigned[running]
			delete(w.assigned, running)
			w.send(running, &Result{Status: f.status, Message: f.msg, Output: w.output.String(), Duration: time.Since(began)})
		}
	}
	var rest []int
	for i := range w.assigned {
		rest = append(rest, i)
	}
	if w.steal != nil {
		rest = w.steal.toShare(rest)
	}
	clear(w.assigned)
	w.running = -1
	slices.Sort(rest)
	return rest
}

// recover puts back the tests rest of a failed call and replaces the
// kernel, unless the run stopped (then the kernel is stopped, its tests
// are not run). false when the worker must end.
func (w *testWorker) recover(ctx context.Context, rest []int, f callFailure) bool {
	if w.t.isStopped() {
		w.stopKernel(ctx)
		return false
	}
	if len(rest) > 0 {
		w.t.requeue(testGroup{share: w.share, indices: rest})
	}
	if err := w.rejoin(ctx, f.status == StatusTimeout); err != nil {
		if f.lost {
			err = fmt.Errorf("agent %s lost: %w", w.agent, err)
		}
		w.t.opts.Logger.Warn("kernel gone: its tests go to other kernels", "kernel", w.name(), "err", err)
		w.t.left(err.Error())
		return false
	}
	return true
}

// clash handles a session whose session- or package-scoped fixture failed
// while other sessions ran beside it. Under pytest there is one session;
// here each kernel has one, in the same directory and on the same
// machine, so such a fixture that takes a fixed resource (IPython's
// creates ./tmp-ipython-pytest-profiledir and fails when it exists, a
// server fixture binds a fixed port) fails in all but the first session:
// an error pytest would never report. So the session leaves the run: the
// tests it had not reported (the one whose setup failed included) go to
// the other kernels, and it is torn down (the worker ends). A fixture
// that is broken fails in every session, so the last one reports it,
// as pytest does: with no other session open, this one runs the tests
// again here (the failing fixture's error is pytest's, for each of them)
// and reports such failures from then on.
func (w *testWorker) clash(ctx context.Context, op, why string) bool {
	w.mu.Lock()
	var held []int
	for i := range w.assigned {
		held = append(held, i)
	}
	slices.Sort(held)
	toShare := held
	if w.steal != nil {
		toShare = w.steal.toShare(held)
	}
	clear(w.assigned)
	w.running = -1
	w.mu.Unlock()
	if w.t.isStopped() {
		return false
	}
	if w.t.retire(testGroup{share: w.share, indices: toShare}) {
		w.open, w.retired = false, true
		w.t.opts.Logger.Info("a session-wide fixture failed in this kernel's pytest session while other kernels ran theirs: its tests go to them",
			"kernel", w.name(), "fixture", why, "tests", len(held))
		w.t.left(fmt.Sprintf("kernel %s left the run: %s, while other kernels ran", w.name(), why))
		w.call(ctx, opFinish, nil) // tears the session down; the worker ends either way
		return false
	}
	w.stay = true
	if !w.call(ctx, opRun, held) {
		return false
	}
	if op == opFinish {
		return w.call(ctx, opFinish, nil)
	}
	return true
}

// event handles a progress frame (the kernel's reader goroutine).
func (w *testWorker) event(raw json.RawMessage) {
	var ev testEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		w.t.opts.Logger.Warn("kernel event", "kernel", w.id, "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// A test's events count once, while the call holds it: those of the
	// held journal (call) may repeat frames the kernel sent before it died.
	if _, held := w.assigned[ev.I]; !held && (ev.Event == "start" || ev.Event == "end") {
		return
	}
	switch ev.Event {
	case "passMark":
		if w.running >= 0 {
			w.passMarks = append(w.passMarks, passMark{when: ev.When, at: w.passOut.Len()})
		}
	case "keyboardInterrupt":
		if w.interruptText == "" {
			w.interruptText = ev.Text
		}
	case "start":
		if ev.I == w.running {
			return
		}
		w.running = ev.I
		w.output.Reset()
		w.passOut.Reset()
		w.passErr.Reset()
		w.passMarks = nil
		w.assigned[ev.I] = time.Now()
		if d := w.t.opts.Timeout; d > 0 {
			if w.timer != nil {
				w.timer.Stop()
			}
			cancel := w.cancel
			w.timer = time.AfterFunc(d, func() { cancel(errTestTimeout) })
		}
	case "end":
		if w.timer != nil {
			w.timer.Stop()
		}
		delete(w.assigned, ev.I)
		r := &Result{Status: Status(ev.Status), Message: ev.Message, Longrepr: ev.Longrepr,
			Stdout: ev.Stdout, Stderr: ev.Stderr, Duration: time.Duration(ev.Duration * float64(time.Second)),
			TeardownError: ev.TeardownError, JUnit: ev.JUnit, pytest: ev.Console}
		var out strings.Builder
		for _, s := range ev.Sections {
			fmt.Fprintf(&out, "----- %s -----\n%s", s[0], s[1])
			if !strings.HasSuffix(s[1], "\n") {
				out.WriteByte('\n')
			}
		}
		out.WriteString(w.output.String())
		r.Output, r.passOut, r.passErr, r.passMarks = out.String(), w.passOut.String(), w.passErr.String(), w.passMarks
		w.output.Reset()
		w.passOut.Reset()
		w.passErr.Reset()
		w.passMarks = nil
		if ev.I == w.running {
			w.running = -1
		}
		w.send(ev.I, r)
	}
}

// output1 keeps what the running test printed past pytest's capture (-s).
func (w *testWorker) output1(stream kernel.Stream, data []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running >= 0 && w.output.Len() < captureLimit {
		w.output.Write(data)
		if stream == kernel.Stdout {
			w.passOut.Write(data)
		} else {
			w.passErr.Write(data)
		}
	}
}

// entryIndex is the entry of the kernel's item i (w.mu held, or the call
// over).
func (w *testWorker) entryIndex(i int) (int, bool) {
	if w.steal != nil {
		s, ok := w.steal.share[i]
		if !ok {
			return 0, false
		}
		i = s
	}
	j, ok := w.t.entryOf[w.share][i]
	return j, ok
}

// send hands a result to the pool's goroutine (w.mu held).
func (w *testWorker) send(i int, r *Result) {
	j, ok := w.entryIndex(i)
	if !ok {
		return
	}
	r.Entry = w.t.entries[j]
	w.lastSent = j
	w.t.ended.Add(1)
	w.t.reported.Add(int64(r.Duration))
	w.t.results <- indexedResult{j, r}
}
