package queue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
	"github.com/ripple-run/ripple/queue/queuetest"
)

// fixture is a started queue with a fake runner and a recorder of ended
// jobs. Tests that use it run inside a synctest bubble, where settle
// waits until every goroutine (runners, the dispatcher) is blocked: the
// queue's state is then stable and deterministic.
type fixture struct {
	t      *testing.T
	q      *queue.Queue
	runner *queuetest.Runner
	ended  *queuetest.Recorder
}

// setup starts a queue whose runner honours cancellation (ReturnOnCancel)
// unless the caller passes its own runner. Cleanup stops the queue and
// fails the test on a rule violation or a job reported twice.
func setup(t *testing.T, opts queue.Options, runner *queuetest.Runner) *fixture {
	t.Helper()
	if runner == nil {
		runner = &queuetest.Runner{ReturnOnCancel: true}
	}
	runner.MaxRunning = opts.MaxRunning
	f := &fixture{t: t, runner: runner, ended: &queuetest.Recorder{}}
	opts.OnEnd = f.ended.OnEnd
	f.q = queue.New(runner, opts)
	if err := f.q.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		// Begin stopping (nothing starts any more), then end the calls of
		// a runner that ignores cancellation, then wait for the stop.
		expired, cancel := context.WithCancel(context.Background())
		cancel()
		_ = f.q.Stop(expired)
		synctest.Wait()
		for _, c := range f.runner.Active() {
			c.Finish(errors.New("test over"))
		}
		if err := f.q.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if v := f.runner.Violations(); len(v) > 0 {
			t.Errorf("scheduling rules broken:\n%s", strings.Join(v, "\n"))
		}
		if d := f.ended.Duplicates(); len(d) > 0 {
			t.Errorf("jobs reported ended more than once: %v", d)
		}
	})
	return f
}

func (f *fixture) settle() { synctest.Wait() }

func (f *fixture) enqueue(e jobs.Execute) jobs.ID {
	f.t.Helper()
	id, err := f.q.EnqueueExecute(e)
	if err != nil {
		f.t.Fatalf("EnqueueExecute(%v): %v", &e, err)
	}
	f.settle()
	return id
}

func (f *fixture) compile(modules ...jobs.Module) jobs.ID {
	f.t.Helper()
	id, err := f.q.EnqueueEnsureCompiled(jobs.EnsureCompiled{Modules: jobs.SetOf(modules...)})
	if err != nil {
		f.t.Fatalf("EnqueueEnsureCompiled(%v): %v", modules, err)
	}
	f.settle()
	return id
}

func (f *fixture) apply(call jobs.Call, cs jobs.Contexts) {
	f.t.Helper()
	plan, err := call.Plan(cs)
	if err != nil {
		f.t.Fatalf("%T.Plan: %v", call, err)
	}
	if err := f.q.Apply(plan); err != nil {
		f.t.Fatalf("Apply(%T): %v", call, err)
	}
	f.settle()
}

// describe names a runner call compactly: "compile{a, b}" (of every
// kernel), "compile{a}@1" (of slot 1's kernel) or the context.
func describe(c *queuetest.Call) string {
	if c.Kind == jobs.KindEnsureCompiled {
		s := "compile" + c.EnsureCompiled.Modules.String()
		for _, slot := range c.EnsureCompiled.Slots {
			s += fmt.Sprintf("@%d", slot)
		}
		return s
	}
	return string(c.Execute.Context)
}

// wantActive checks the calls running now, in any order: calls started in
// one scheduling pass reach the runner in goroutine order.
func (f *fixture) wantActive(want ...string) {
	f.t.Helper()
	var got []string
	for _, c := range f.runner.Active() {
		got = append(got, describe(c))
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		f.t.Fatalf("running %q, want %q", got, want)
	}
}

// call returns the running call described as name.
func (f *fixture) call(name string) *queuetest.Call {
	f.t.Helper()
	for _, c := range f.runner.Active() {
		if describe(c) == name {
			return c
		}
	}
	f.t.Fatalf("no running call %q (running: %v)", name, f.runner.Active())
	return nil
}

// finish ends the running call described as name with err.
func (f *fixture) finish(name string, err error) *queuetest.Call {
	f.t.Helper()
	c := f.call(name)
	c.Finish(err)
	f.settle()
	return c
}

// record returns job id's final record; the job must have ended.
func (f *fixture) record(id jobs.ID) jobs.Record {
	f.t.Helper()
	r, ok := f.ended.Get(id)
	if !ok {
		f.t.Fatalf("job %d has not ended; live jobs: %v", id, f.q.Jobs())
	}
	return r
}

// wantEnded checks job id's final state and cause.
func (f *fixture) wantEnded(id jobs.ID, state jobs.State, cause error) jobs.Record {
	f.t.Helper()
	r := f.record(id)
	if r.State != state || !errors.Is(r.Cause, cause) || (cause == nil && r.Cause != nil) {
		f.t.Fatalf("job %d ended %v (cause %v), want %v (cause %v)", id, r.State, r.Cause, state, cause)
	}
	return r
}

func exec(ctx jobs.ContextID, slot jobs.Slot, p jobs.Priority, exprs ...jobs.ExpressionID) jobs.Execute {
	e := jobs.Execute{Context: ctx, Slot: slot, Priority: p, Reason: jobs.ReasonBatch}
	if len(exprs) > 0 {
		e.Expressions = jobs.SetOf(exprs...)
	}
	return e
}

func recordsString(rs []jobs.Record) string {
	var b strings.Builder
	for i := range rs {
		fmt.Fprintf(&b, "\n  %v", &rs[i])
	}
	return b.String()
}
