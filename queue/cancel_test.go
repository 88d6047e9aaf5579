package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
	"github.com/ripple-run/ripple/queue/queuetest"
)

// twoContexts is the state for the cancellation table: a and b run on
// their own slots.
var twoContexts = jobs.Contexts{
	"a": {Slot: 0, BottomModule: "main"},
	"b": {Slot: 1, BottomModule: "lib"},
}

// Each API call cancels a running Execute with its own cause, touches only
// the contexts it should, and the job's final state says which cause.
func TestCallsCancelRunningExecutesWithTheirCause(t *testing.T) {
	tests := []struct {
		name      string
		call      jobs.Call
		cause     error
		state     jobs.State
		bStopped  bool     // the call also cancels b
		thenRun   []string // what runs once the cancelled runs gave up
		afterThat []string
	}{
		{name: "push", call: jobs.Push{Context: "a"}, cause: jobs.ErrStackChanged, state: jobs.StateSuperseded,
			thenRun: []string{"b", "compile{main}@0"}, afterThat: []string{"compile{main}@0"}},
		{name: "pop", call: jobs.Pop{Context: "a"}, cause: jobs.ErrStackChanged, state: jobs.StateSuperseded,
			thenRun: []string{"b", "compile{main}@0"}, afterThat: []string{"compile{main}@0"}},
		{name: "recompute", call: jobs.Recompute{Context: "a", Invalidate: jobs.All[jobs.ExpressionID]()},
			cause: jobs.ErrRecomputed, state: jobs.StateSuperseded,
			thenRun: []string{"b", "compile{main}@0"}, afterThat: []string{"compile{main}@0"}},
		{name: "destroy", call: jobs.DestroyContext{Context: "a"}, cause: jobs.ErrContextDestroyed, state: jobs.StateCancelled,
			thenRun: []string{"b"}, afterThat: nil},
		{name: "interrupt", call: jobs.Interrupt{Context: "a"}, cause: jobs.ErrInterrupted, state: jobs.StateCancelled,
			thenRun: []string{"b"}, afterThat: nil},
		{name: "edit", call: jobs.Edit{Modules: jobs.SetOf[jobs.Module]("lib")}, cause: jobs.ErrEdited, state: jobs.StateSuperseded,
			bStopped: true, thenRun: []string{"compile{lib}@0", "compile{lib}@1"}, afterThat: []string{"a", "compile{lib}@1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A runner that keeps running after cancellation, so the
				// test sees the cause before the job ends.
				f := setup(t, queue.Options{}, &queuetest.Runner{})
				a := f.enqueue(exec("a", 0, user))
				b := f.enqueue(exec("b", 1, user))
				callA, callB := f.call("a"), f.call("b")

				f.apply(tt.call, twoContexts)

				if got := context.Cause(callA.Ctx); !errors.Is(got, tt.cause) {
					t.Fatalf("a's context: cause %v, want %v", got, tt.cause)
				}
				st := f.q.Status()
				if len(st.Contexts) == 0 || st.Contexts[0].Context != "a" || !errors.Is(st.Contexts[0].Stopping, tt.cause) {
					t.Fatalf("status does not show a stopping with %v: %+v", tt.cause, st.Contexts)
				}
				if stopped := callB.Ctx.Err() != nil; stopped != tt.bStopped {
					t.Fatalf("b's context cancelled: %v, want %v (cause %v)", stopped, tt.bStopped, context.Cause(callB.Ctx))
				}

				// The runners give up the way a kernel does: with an error.
				callA.Finish(context.Cause(callA.Ctx))
				if tt.bStopped {
					callB.Finish(context.Cause(callB.Ctx))
				}
				f.settle()
				f.wantEnded(a, tt.state, tt.cause)
				if tt.bStopped {
					f.wantEnded(b, tt.state, tt.cause)
				}
				f.wantActive(tt.thenRun...)
				f.finish(tt.thenRun[0], nil)
				f.wantActive(tt.afterThat...)
			})
		})
	}
}

// An edit reaches only the contexts whose modules import the changed
// module: the other context's run goes on, uncancelled, and the compile
// waits only for the affected kernel (DESIGN.md "Edit a file", rules 1
// and 5 per kernel).
func TestEditAbortsOnlyAffectedContexts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs := jobs.Contexts{
			"a": {Slot: 0, BottomModule: "main", Imports: jobs.SetOf[jobs.Module]("main", "util"), ImportsKnown: true},
			"b": {Slot: 1, BottomModule: "lib", Imports: jobs.SetOf[jobs.Module]("lib"), ImportsKnown: true},
		}
		f := setup(t, queue.Options{}, &queuetest.Runner{})
		f.enqueue(exec("a", 0, user))
		b := f.enqueue(exec("b", 1, user))
		callA, callB := f.call("a"), f.call("b")
		f.apply(jobs.Edit{Modules: jobs.SetOf[jobs.Module]("util")}, cs)
		if !errors.Is(context.Cause(callA.Ctx), jobs.ErrEdited) {
			t.Fatalf("a's run: cause %v, want ErrEdited", context.Cause(callA.Ctx))
		}
		if callB.Ctx.Err() != nil {
			t.Fatalf("an edit of util cancelled b, which does not import it: %v", context.Cause(callB.Ctx))
		}
		callA.Finish(context.Cause(callA.Ctx))
		f.settle()
		f.wantActive("b", "compile{util}@0")
		f.finish("compile{util}@0", nil)
		f.wantActive("a", "b")
		f.finish("b", nil)
		f.wantEnded(b, jobs.StateDone, nil)
	})
}

// A running EnsureCompiled is not interrupted by an edit; the edit's
// EnsureCompiled runs right after it, before any Execute.
func TestEditDoesNotInterruptRunningEnsureCompiled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		compiling := f.compile("main")
		callEC := f.call("compile{main}")
		a := f.enqueue(exec("a", 0, user))

		f.apply(jobs.Edit{Modules: jobs.SetOf[jobs.Module]("lib")}, twoContexts)
		if callEC.Ctx.Err() != nil {
			t.Fatalf("edit cancelled the running EnsureCompiled: %v", context.Cause(callEC.Ctx))
		}
		if _, ended := f.ended.Get(a); ended {
			t.Fatalf("the queued Execute of a was dequeued although the edit asks for it again")
		}
		f.finish("compile{main}", nil)
		f.wantEnded(compiling, jobs.StateDone, nil)
		f.wantActive("compile{lib}@0", "compile{lib}@1")
		f.finish("compile{lib}@0", nil)
		f.wantActive("a", "compile{lib}@1")
		f.finish("compile{lib}@1", nil)
		f.wantActive("a", "b")
		if r := f.call("a"); r.ID != a || !r.Execute.Reason.Has(jobs.ReasonEdit) {
			t.Fatalf("a runs as job %d for %v, want job %d with the edit's reason", r.ID, r.Execute.Reason, a)
		}
	})
}

// Aborts dequeue queued Executes with the cause, and touch no other
// context's jobs.
func TestAbortDequeuesOnlyItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.compile("m") // keeps the Executes queued
		a := f.enqueue(exec("a", 0, user))
		b := f.enqueue(exec("b", 1, user))
		if err := f.q.AbortContext("a", jobs.ErrInterrupted); err != nil {
			t.Fatal(err)
		}
		f.settle()
		r := f.wantEnded(a, jobs.StateCancelled, jobs.ErrInterrupted)
		if !r.Started.IsZero() || r.Err != nil {
			t.Fatalf("dequeued job ran: %v", &r)
		}
		if _, ended := f.ended.Get(b); ended {
			t.Fatalf("aborting a ended b's job")
		}
		if err := f.q.AbortAll(jobs.ErrEdited); err != nil {
			t.Fatal(err)
		}
		f.settle()
		f.wantEnded(b, jobs.StateSuperseded, jobs.ErrEdited)
		// The EnsureCompiled is left alone by aborts.
		f.wantActive("compile{m}")
		if st := f.q.Status(); st.Pending() != 0 || st.Running() != 1 {
			t.Fatalf("status %+v", st)
		}
	})
}

// A plan that aborts a context and asks for it again keeps its queued
// Execute: nothing it carried is lost (here, a recompute's invalidation).
func TestApplyKeepsWhatThePlanAsksForAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.compile("m")
		f.apply(jobs.Recompute{Context: "a", Invalidate: jobs.SetOf[jobs.ExpressionID]("main:main/x")}, twoContexts)
		queued := f.q.Jobs()
		id := queued[len(queued)-1].ID
		f.apply(jobs.Edit{Modules: jobs.SetOf[jobs.Module]("lib")}, twoContexts)
		f.apply(jobs.Push{Context: "a"}, twoContexts)
		if _, ended := f.ended.Get(id); ended {
			t.Fatalf("the re-requested job %d was dequeued", id)
		}
		f.finish("compile{m}", nil)
		f.finish("compile{lib, main}@0", nil)
		c := f.call("a")
		want := jobs.ReasonRecompute | jobs.ReasonEdit | jobs.ReasonPush
		if c.ID != id || c.Execute.Invalidate.String() != "{main:main/x}" || c.Execute.Reason != want {
			t.Fatalf("a runs as job %d %v, want job %d invalidating main:main/x for %v", c.ID, c.Execute, id, want)
		}
		f.finish("a", nil)
		if r := f.record(id); r.Requests != 3 {
			t.Fatalf("job carried %d requests, want 3", r.Requests)
		}
	})
}

// A run that outlives Options.ExecuteTimeout is cancelled with ErrTimeout.
// (Fake time: the bubble's clock advances only when everything waits.)
func TestExecuteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{ExecuteTimeout: time.Minute}, nil)
		compiled := f.compile("m")
		id := f.enqueue(exec("a", 0, user))
		f.finish("compile{m}", nil) // EnsureCompiled has no time limit
		f.wantEnded(compiled, jobs.StateDone, nil)
		r, err := f.ended.Wait(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != jobs.StateCancelled || !errors.Is(r.Cause, jobs.ErrTimeout) || !errors.Is(r.Err, jobs.ErrTimeout) {
			t.Fatalf("timed out job: %v", &r)
		}
		if took := r.Ended.Sub(r.Started); took != time.Minute {
			t.Fatalf("cancelled after %v, want 1m", took)
		}
	})
}

// A runner that finishes its work although it was cancelled ends Done,
// and one that fails without cancellation ends Failed.
func TestRunnerResultDecidesState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, &queuetest.Runner{})
		a := f.enqueue(exec("a", 0, user))
		b := f.enqueue(exec("b", 1, user))
		if err := f.q.AbortContext("a", jobs.ErrInterrupted); err != nil {
			t.Fatal(err)
		}
		f.finish("a", nil)
		f.wantEnded(a, jobs.StateDone, nil)
		boom := errors.New("kernel died: signal 9")
		f.finish("b", boom)
		if r := f.wantEnded(b, jobs.StateFailed, nil); !errors.Is(r.Err, boom) {
			t.Fatalf("failed job's error %v, want %v", r.Err, boom)
		}
	})
}

type panicRunner struct{ queuetest.Runner }

func (r *panicRunner) Execute(ctx context.Context, e *jobs.Execute) error {
	if e.Context == "bad" {
		explode()
	}
	return r.Runner.Execute(ctx, e)
}

func explode() { panic("kaboom") }

// A panicking runner fails its job with ErrRunnerPanicked and the queue
// goes on.
func TestRunnerPanicFailsTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runner := &panicRunner{}
		ended := &queuetest.Recorder{}
		q := queue.New(runner, queue.Options{OnEnd: ended.OnEnd})
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		bad, _ := q.EnqueueExecute(exec("bad", 0, user))
		r, err := ended.Wait(t.Context(), bad)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != jobs.StateFailed || !errors.Is(r.Err, queue.ErrRunnerPanicked) ||
			!strings.Contains(r.Err.Error(), "kaboom") || !strings.Contains(r.Err.Error(), "queue_test.explode") {
			t.Fatalf("panicked job: %v", &r)
		}
		if strings.Contains(r.Err.Error(), "runtime/debug.Stack") {
			t.Errorf("stack not trimmed: %v", r.Err)
		}
		good, _ := q.EnqueueExecute(exec("good", 0, user))
		c, err := runner.CallFor(t.Context(), good)
		if err != nil {
			t.Fatal(err)
		}
		c.Finish(nil)
		if r, _ := ended.Wait(t.Context(), good); r.State != jobs.StateDone {
			t.Fatalf("job after the panic: %v", &r)
		}
		if err := q.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}
