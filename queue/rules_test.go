package queue_test

import (
	"testing"
	"testing/synctest"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
)

const (
	batch       = jobs.PriorityBatch
	user        = jobs.PriorityUser
	interactive = jobs.PriorityInteractive
)

// Rules 1 and 5: an EnsureCompiled waits for running Executes, runs alone,
// and queued Executes wait for it.
func TestEnsureCompiledRunsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.enqueue(exec("a", 0, user))
		f.enqueue(exec("b", 1, user))
		f.wantActive("a", "b")

		f.compile("m")
		f.wantActive("a", "b") // waits for the running Executes
		f.enqueue(exec("c", 2, user))
		f.wantActive("a", "b") // rule 5: a queued EnsureCompiled goes first

		f.finish("a", nil)
		f.wantActive("b")
		f.finish("b", nil)
		f.wantActive("compile{m}")

		f.enqueue(exec("d", 3, interactive))
		f.wantActive("compile{m}") // nothing beside a running EnsureCompiled
		f.finish("compile{m}", nil)
		f.wantActive("c", "d")
	})
}

// Rule 2: Executes run in parallel, one per slot, within MaxRunning.
func TestExecutesRunInParallelOnePerSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{MaxRunning: 2}, nil)
		f.enqueue(exec("a", 0, user))
		f.enqueue(exec("b", 0, user)) // same slot as a
		f.enqueue(exec("c", 1, user))
		f.enqueue(exec("d", 2, user)) // over the limit
		f.wantActive("a", "c")

		f.finish("a", nil)
		f.wantActive("c", "b") // b is older than d
		f.finish("c", nil)
		f.wantActive("b", "d")
		if st := f.q.Status(); st.RunningExecutes != 2 || st.QueuedExecutes != 0 {
			t.Fatalf("status %+v", st)
		}
	})
}

// Rule 3: queued EnsureCompiled jobs collapse into one, the union of their
// modules.
func TestEnsureCompiledCollapses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		first := f.compile("m")
		f.wantActive("compile{m}")
		second := f.compile("b")
		if third := f.compile("a", "c"); third != second {
			t.Fatalf("second EnsureCompiled is job %d, third %d: not collapsed", second, third)
		}
		f.compile("b")
		if st := f.q.Status(); st.QueuedEnsureCompiled != 1 || st.RunningEnsureCompiled != 1 {
			t.Fatalf("status %+v", st)
		}
		f.finish("compile{m}", nil)
		f.wantEnded(first, jobs.StateDone, nil)
		f.wantActive("compile{a, b, c}")
		f.finish("compile{a, b, c}", nil)
		if r := f.wantEnded(second, jobs.StateDone, nil); r.Requests != 3 {
			t.Fatalf("collapsed job carries %d requests, want 3", r.Requests)
		}
	})
}

// Rule 4: queued Executes of one context collapse: union of expressions,
// all wins, the higher priority wins.
func TestExecutesOfOneContextCollapse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.compile("m") // holds the Executes in the queue
		x := f.enqueue(exec("x", 0, batch, "m:f/a"))
		if again := f.enqueue(exec("x", 0, interactive, "m:f/b")); again != x {
			t.Fatalf("second Execute of x is job %d, not %d", again, x)
		}
		y := f.enqueue(exec("y", 1, user, "m:f/a"))
		f.enqueue(exec("y", 1, batch)) // empty = all
		f.enqueue(exec("y", 1, batch, "m:f/c"))
		if st := f.q.Status(); st.QueuedExecutes != 2 {
			t.Fatalf("%d queued Executes, want 2", st.QueuedExecutes)
		}
		f.finish("compile{m}", nil)
		f.wantActive("x", "y")
		if got := f.call("x").Execute; got.Expressions.String() != "{m:f/a, m:f/b}" || got.Priority != interactive {
			t.Errorf("x runs %v", got)
		}
		if got := f.call("y").Execute; !got.Expressions.IsAll() || got.Priority != user {
			t.Errorf("y runs %v", got)
		}
		f.finish("x", nil)
		f.finish("y", nil)
		if r := f.record(y); r.Requests != 3 {
			t.Errorf("y carried %d requests, want 3", r.Requests)
		}
	})
}

// Rule 5 when the Execute waits for its slot rather than for the queue.
func TestQueuedEnsureCompiledGoesBeforeAWaitingExecute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.enqueue(exec("a", 0, user))
		f.enqueue(exec("b", 0, interactive)) // waits for slot 0
		f.compile("m")
		f.finish("a", nil)
		f.wantActive("compile{m}")
		f.finish("compile{m}", nil)
		f.wantActive("b")
	})
}

// Priorities: interactive, then user, then batch; FIFO within a level.
func TestPriorityOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{MaxRunning: 1}, nil)
		f.enqueue(exec("first", 0, batch))
		for _, e := range []jobs.Execute{exec("b1", 1, batch), exec("u1", 2, user), exec("i1", 3, interactive),
			exec("u2", 4, user), exec("b2", 5, batch), exec("i2", 6, interactive)} {
			f.enqueue(e)
		}
		var order []string
		name := "first"
		for range 7 {
			f.wantActive(name)
			order = append(order, name)
			f.finish(name, nil)
			if active := f.runner.Active(); len(active) > 0 {
				name = describe(active[0])
			}
		}
		want := "first i1 i2 u1 u2 b1 b2"
		if got := join(order); got != want {
			t.Fatalf("ran %s, want %s", got, want)
		}
	})
}

// Round-robin: a context that keeps asking cannot starve another on the
// same slot; it queues behind it.
func TestRoundRobinAcrossContexts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.enqueue(exec("busy", 0, user))
		f.enqueue(exec("other", 0, user))
		f.enqueue(exec("busy", 0, user)) // asks again while running
		var order []string
		for range 3 {
			c := f.runner.Active()[0]
			order = append(order, describe(c))
			if describe(c) == "busy" {
				f.enqueue(exec("busy", 0, user)) // and again
			}
			c.Finish(nil)
			f.settle()
		}
		if got, want := join(order), "busy other busy"; got != want {
			t.Fatalf("ran %s, want %s", got, want)
		}
	})
}

// A collapse that raises a job's priority puts it at the back of its new
// level: the request that raised it is the newest there.
func TestRaisedPriorityQueuesAtTheBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.compile("m")
		f.enqueue(exec("a", 0, user))
		f.enqueue(exec("b", 1, interactive))
		f.enqueue(exec("a", 0, interactive, "m:f/x"))
		var order []jobs.ContextID
		for _, r := range f.q.Jobs()[1:] {
			order = append(order, r.Execute.Context)
		}
		if len(order) != 2 || order[0] != "b" || order[1] != "a" {
			t.Fatalf("queued order %v, want [b a]", order)
		}
	})
}

// A context the engine moves to another slot runs there; and never runs
// twice at once, even across slots.
func TestContextMovesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		f.enqueue(exec("z", 0, user))
		a := f.enqueue(exec("a", 0, user)) // waits for slot 0
		if moved := f.enqueue(exec("a", 1, user)); moved != a {
			t.Fatalf("moved request made job %d, want %d", moved, a)
		}
		f.wantActive("z", "a")
		if f.call("a").Execute.Slot != 1 {
			t.Fatalf("a runs on slot %d", f.call("a").Execute.Slot)
		}
		f.enqueue(exec("a", 2, user)) // a is still running on slot 1
		f.wantActive("z", "a")
		f.finish("a", nil)
		f.wantActive("z", "a")
		if f.call("a").Execute.Slot != 2 {
			t.Fatalf("a runs on slot %d, want 2", f.call("a").Execute.Slot)
		}
	})
}

// The runner learns the job id from its context, the one Enqueue returned.
func TestJobIDReachesTheRunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{}, nil)
		id := f.enqueue(exec("a", 0, user))
		if got := f.call("a").ID; got != id {
			t.Fatalf("runner saw job %d, Enqueue returned %d", got, id)
		}
	})
}

func join(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " "
		}
		s += n
	}
	return s
}
