package queue_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
)

// compileSlot enqueues an EnsureCompiled of modules on slot's kernel.
func (f *fixture) compileSlot(slot jobs.Slot, modules ...jobs.Module) jobs.ID {
	f.t.Helper()
	id, err := f.q.EnqueueEnsureCompiled(jobs.EnsureCompiled{Modules: jobs.SetOf(modules...), Slots: []jobs.Slot{slot}})
	if err != nil {
		f.t.Fatalf("EnqueueEnsureCompiled(%v@%d): %v", modules, slot, err)
	}
	f.settle()
	return id
}

// A burst of compile requests that outlasts the compiles costs two: the
// one it began with and one after it, held until the requests stop for
// as long as the first compile took (rule 3 across a running compile).
// Without the hold every compile's end started the next: one per compile
// time of the burst. Time is the bubble's: the test waits on nothing.
func TestCompileHeldAcrossBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{MaxCompileHold: time.Minute}, nil)
		const compileTime, gap = 10 * time.Millisecond, time.Millisecond
		f.enqueue(exec("c", 0, jobs.PriorityUser))
		f.finish("c", nil)
		finished := 0
		for i := 0; i < 50; i++ {
			if i > 0 {
				time.Sleep(gap)
			}
			f.compileSlot(0, "m")
			f.enqueue(exec("c", 0, jobs.PriorityUser))
			for _, c := range f.runner.Active() {
				if c.Kind == jobs.KindEnsureCompiled && time.Since(c.Started) >= compileTime {
					c.Finish(nil)
					finished++
					f.settle()
				}
			}
		}
		if finished != 1 {
			t.Fatalf("compiles finished during the burst: %d, want 1 (the one it began with)", finished)
		}
		f.wantActive() // the second compile waits for the requests to stop, the run for it
		time.Sleep(compileTime)
		f.settle()
		f.wantActive("compile{m}@0")
		f.finish("compile{m}@0", nil)
		f.wantActive("c")
		f.finish("c", nil)
		compiles := 0
		for _, c := range f.runner.Calls() {
			if c.Kind == jobs.KindEnsureCompiled {
				compiles++
			}
		}
		if compiles != 2 {
			t.Fatalf("%d compiles for a burst of 50 requests, want 2", compiles)
		}
	})
}

// A request that finds its kernel idle is not held, and one that keeps
// coming is held no longer than MaxCompileHold from its first request.
func TestCompileHoldBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := setup(t, queue.Options{MaxCompileHold: 50 * time.Millisecond}, nil)
		f.compileSlot(0, "m")
		f.wantActive("compile{m}@0") // at once
		first := f.runner.Active()[0]
		time.Sleep(time.Millisecond)
		held := time.Now()
		f.compileSlot(0, "m") // superseding
		for i := 0; len(f.runner.Calls()) == 1; i++ {
			time.Sleep(time.Millisecond)
			if i == 10 {
				first.Finish(nil)
			}
			if i == 1000 {
				t.Fatalf("a compile held for 1s by requests 1ms apart, want at most MaxCompileHold (50ms)")
			}
			f.compileSlot(0, "m") // never pauses
		}
		f.settle()
		f.wantActive("compile{m}@0")
		if waited := f.runner.Active()[0].Started.Sub(held); waited != 50*time.Millisecond {
			t.Fatalf("held compile started %v after its first request, want MaxCompileHold (50ms)", waited)
		}
	})
}
