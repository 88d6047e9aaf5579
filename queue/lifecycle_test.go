package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
	"github.com/ripple-run/ripple/queue/queuetest"
)

func TestLifecycleErrors(t *testing.T) {
	t.Parallel()
	q := queue.New(&queuetest.Runner{}, queue.Options{})
	if _, err := q.EnqueueExecute(exec("a", 0, user)); !errors.Is(err, queue.ErrNotStarted) {
		t.Fatalf("enqueue before Start: %v, want ErrNotStarted", err)
	}
	if err := q.WaitIdle(t.Context()); err != nil {
		t.Fatalf("WaitIdle before Start: %v", err)
	}
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); !errors.Is(err, queue.ErrAlreadyStarted) {
		t.Fatalf("second Start: %v, want ErrAlreadyStarted", err)
	}
	for range 2 { // Stop is idempotent
		if err := q.Stop(t.Context()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	checks := map[string]error{}
	_, checks["EnqueueExecute"] = q.EnqueueExecute(exec("a", 0, user))
	_, checks["EnqueueEnsureCompiled"] = q.EnqueueEnsureCompiled(jobs.EnsureCompiled{Modules: jobs.SetOf[jobs.Module]("m")})
	checks["Apply"] = q.Apply(jobs.Plan{Executes: []jobs.Execute{exec("a", 0, user)}})
	checks["AbortAll"] = q.AbortAll(jobs.ErrEdited)
	checks["AbortContext"] = q.AbortContext("a", jobs.ErrInterrupted)
	checks["Start"] = q.Start(t.Context())
	for op, err := range checks {
		if !errors.Is(err, queue.ErrStopped) || !errors.Is(err, jobs.ErrShutdown) {
			t.Errorf("%s after Stop: %v, want ErrStopped (a shutdown)", op, err)
		}
	}
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	q := queue.New(&queuetest.Runner{}, queue.Options{})
	if err := q.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := q.Start(t.Context()); !errors.Is(err, queue.ErrStopped) {
		t.Fatalf("Start after Stop: %v", err)
	}
}

// Bad input gets an error naming the fault, changes nothing, and the queue
// goes on working.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		do   func(q *queue.Queue) error
		want string
	}{
		{"execute without context", func(q *queue.Queue) error {
			_, err := q.EnqueueExecute(jobs.Execute{Slot: 1})
			return err
		}, "queue enqueue: invalid job: Execute names no execution context"},
		{"execute on a negative slot", func(q *queue.Queue) error {
			_, err := q.EnqueueExecute(exec("a", -3, user))
			return err
		}, "Execute of context a: slot -3 is negative"},
		{"EnsureCompiled without modules", func(q *queue.Queue) error {
			_, err := q.EnqueueEnsureCompiled(jobs.EnsureCompiled{})
			return err
		}, "EnsureCompiled names no module"},
		{"abort without cause", func(q *queue.Queue) error { return q.AbortContext("a", nil) },
			"queue abort: invalid job: abort has no cause"},
		{"abort without context", func(q *queue.Queue) error { return q.AbortContext("", jobs.ErrInterrupted) },
			"abort names no execution context"},
		{"plan with a bad execute after good ones", func(q *queue.Queue) error {
			return q.Apply(jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortAll(jobs.ErrEdited)},
				EnsureCompiled: jobs.EnsureCompiled{Modules: jobs.SetOf[jobs.Module]("m")},
				Executes:       []jobs.Execute{exec("a", 0, user), exec("b", 0, 9)},
			})
		}, "queue apply: plan execute 1: invalid job: Execute of context b: unknown priority 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := setup(t, queue.Options{}, nil)
				running := f.enqueue(exec("running", 5, user))
				err := tt.do(f.q)
				if !errors.Is(err, jobs.ErrInvalidJob) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want ErrInvalidJob containing %q", err, tt.want)
				}
				f.settle()
				if got := f.q.Jobs(); len(got) != 1 || got[0].ID != running || got[0].Cause != nil {
					t.Fatalf("bad input changed the queue: %s", recordsString(got))
				}
				id := f.enqueue(exec("a", 0, user))
				f.wantActive("running", "a")
				f.finish("a", nil)
				f.wantEnded(id, jobs.StateDone, nil)
			})
		})
	}
}

// Stop dequeues queued jobs and cancels running ones with ErrShutdown,
// waits for the runners, and leaves no goroutine behind (TestMain checks).
func TestStopCancelsAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runner := &queuetest.Runner{} // keeps running after cancellation
		ended := &queuetest.Recorder{}
		q := queue.New(runner, queue.Options{OnEnd: ended.OnEnd})
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		compiling, _ := q.EnqueueEnsureCompiled(jobs.EnsureCompiled{Modules: jobs.SetOf[jobs.Module]("m")})
		synctest.Wait()
		queuedA, _ := q.EnqueueExecute(exec("a", 0, user))
		queuedEC, _ := q.EnqueueEnsureCompiled(jobs.EnsureCompiled{Modules: jobs.SetOf[jobs.Module]("n")})
		calls := runner.Calls()
		if len(calls) != 1 {
			t.Fatalf("%d runner calls, want 1", len(calls))
		}

		stopped := make(chan error, 1)
		go func() { stopped <- q.Stop(context.Background()) }()
		synctest.Wait()
		if cause := context.Cause(calls[0].Ctx); !errors.Is(cause, jobs.ErrShutdown) {
			t.Fatalf("running EnsureCompiled: cause %v, want ErrShutdown", cause)
		}
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) while a runner still runs", err)
		default:
		}
		for _, id := range []jobs.ID{queuedA, queuedEC} {
			r, ok := ended.Get(id)
			if !ok || r.State != jobs.StateCancelled || !errors.Is(r.Cause, jobs.ErrShutdown) {
				t.Fatalf("queued job %d at Stop: %v (reported %v)", id, &r, ok)
			}
		}
		calls[0].Finish(context.Cause(calls[0].Ctx))
		if err := <-stopped; err != nil {
			t.Fatalf("Stop: %v", err)
		}
		r, ok := ended.Get(compiling)
		if !ok || r.State != jobs.StateCancelled || !errors.Is(r.Cause, jobs.ErrShutdown) {
			t.Fatalf("running job at Stop: %v (reported %v)", &r, ok)
		}
		if n := len(runner.Calls()); n != 1 {
			t.Fatalf("%d runner calls after Stop, want 1", n)
		}
	})
}

// Stop gives up when its ctx ends and can be called again to wait more.
func TestStopTimesOutAndCanBeRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runner := &queuetest.Runner{}
		q := queue.New(runner, queue.Options{})
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		q.EnqueueExecute(exec("stubborn", 0, user))
		synctest.Wait()
		ctx, cancel := context.WithCancelCause(t.Context())
		giveUp := errors.New("operator gave up")
		cancel(giveUp)
		if err := q.Stop(ctx); !errors.Is(err, giveUp) {
			t.Fatalf("Stop with an ended ctx: %v, want %v", err, giveUp)
		}
		runner.Active()[0].Finish(errors.New("finally"))
		if err := q.Stop(t.Context()); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
	})
}

// OnEnd runs on its own goroutine: while it is stuck, jobs still start
// and end; the records then arrive in the order the jobs ended.
func TestSlowOnEndDoesNotBlockScheduling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runner := &queuetest.Runner{}
		release := make(chan struct{})
		var got []jobs.ID
		onEnd := func(r jobs.Record) {
			if len(got) == 0 {
				<-release
			}
			got = append(got, r.ID)
		}
		q := queue.New(runner, queue.Options{OnEnd: onEnd})
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		var want []jobs.ID
		for range 5 {
			id, err := q.EnqueueExecute(exec("a", 0, user))
			if err != nil {
				t.Fatal(err)
			}
			c, err := runner.CallFor(t.Context(), id) // starts although OnEnd is stuck
			if err != nil {
				t.Fatal(err)
			}
			c.Finish(nil)
			want = append(want, id)
		}
		idle := make(chan error, 1)
		go func() { idle <- q.WaitIdle(context.Background()) }()
		synctest.Wait()
		select {
		case <-idle:
			t.Fatal("WaitIdle returned before OnEnd was told about every job")
		default:
		}
		close(release)
		if err := <-idle; err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("OnEnd got %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("OnEnd order %v, want %v", got, want)
			}
		}
		if err := q.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestWaitIdleHonoursItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.enqueue(exec("a", 0, user))
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("client gone")
		cancel(cause)
		if err := f.q.WaitIdle(ctx); !errors.Is(err, cause) {
			t.Fatalf("WaitIdle: %v, want %v", err, cause)
		}
	})
}

func TestStatusAndJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, &queuetest.Runner{})
		a := f.enqueue(exec("a", 0, user))
		b := f.enqueue(exec("b", 0, interactive, "m:f/x"))
		c := f.enqueue(exec("c", 1, batch))
		if err := f.q.AbortContext("c", jobs.ErrInterrupted); err != nil {
			t.Fatal(err)
		}
		ec := f.compile("m")
		d := f.enqueue(exec("d", 2, batch))
		f.enqueue(exec("a", 0, batch))
		aAgain := f.q.Jobs()[len(f.q.Jobs())-1].ID

		st := f.q.Status()
		want := queue.Status{QueuedEnsureCompiled: 1, QueuedExecutes: 3, RunningExecutes: 2}
		if st.QueuedEnsureCompiled != want.QueuedEnsureCompiled || st.RunningEnsureCompiled != 0 ||
			st.QueuedExecutes != want.QueuedExecutes || st.RunningExecutes != want.RunningExecutes ||
			st.Pending() != 4 || st.Running() != 2 {
			t.Fatalf("status %+v", st)
		}
		wantCtx := []queue.ContextStatus{
			{Context: "a", Running: a, Queued: aAgain, Priority: batch},
			{Context: "b", Queued: b, Priority: interactive},
			{Context: "c", Running: c, Stopping: jobs.ErrInterrupted},
			{Context: "d", Queued: d, Priority: batch},
		}
		if len(st.Contexts) != len(wantCtx) {
			t.Fatalf("contexts %+v", st.Contexts)
		}
		for i, w := range wantCtx {
			if st.Contexts[i] != w {
				t.Errorf("context %d: %+v, want %+v", i, st.Contexts[i], w)
			}
		}

		var order []jobs.ID
		for _, r := range f.q.Jobs() {
			order = append(order, r.ID)
		}
		wantOrder := []jobs.ID{a, c, ec, b, d, aAgain} // running, then queued in preference order
		if len(order) != len(wantOrder) {
			t.Fatalf("jobs %v, want %v", order, wantOrder)
		}
		for i := range order {
			if order[i] != wantOrder[i] {
				t.Fatalf("jobs %v, want %v", order, wantOrder)
			}
		}
	})
}
