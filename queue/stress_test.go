package queue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
	"github.com/ripple-run/ripple/queue/queuetest"
)

// TestConcurrentUse hammers one queue from several goroutines at once
// (plans, enqueues, aborts) while another ends runner calls and another
// checks the rules on snapshots, on the real scheduler (no bubble): under
// -race this finds unguarded state. Every job must end exactly once and
// carry every request it accepted.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	const (
		producers  = 4
		ops        = 1500
		maxRunning = 3
	)
	runner := &queuetest.Runner{ReturnOnCancel: true, MaxRunning: maxRunning}
	ended := &queuetest.Recorder{}
	q := queue.New(runner, queue.Options{MaxRunning: maxRunning, OnEnd: ended.OnEnd})
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	var (
		accepted atomic.Int64
		failures = make(chan string, 16)
		fail     = func(format string, args ...any) {
			select {
			case failures <- fmt.Sprintf(format, args...):
			default:
			}
		}
	)

	// The finisher ends calls in start order, until told to stop.
	finishCtx, stopFinisher := context.WithCancel(t.Context())
	var background sync.WaitGroup
	background.Go(func() {
		r := rand.New(rand.NewPCG(99, 1))
		for {
			c, err := runner.Next(finishCtx)
			if err != nil {
				return
			}
			switch r.IntN(3) {
			case 0:
				c.Finish(errBoom)
			default:
				c.Finish(nil)
			}
		}
	})
	// The checker checks the rules on snapshots while everything moves.
	background.Go(func() {
		for finishCtx.Err() == nil {
			// The snapshot is taken under the queue's lock, after which
			// every scheduling decision has been made: the rules hold in
			// full, work conservation included.
			checkRules(fail, q.Jobs(), maxRunning)
		}
	})

	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 7))
			g := &gen{r: r, slotOf: map[jobs.ContextID]jobs.Slot{}, contexts: jobs.Contexts{}}
			for i, id := range modelContexts {
				g.slotOf[id] = jobs.Slot(i % 3)
				g.contexts[id] = jobs.ContextInfo{Slot: g.slotOf[id], BottomModule: pick(r, modelModules)}
			}
			for range ops {
				runtime.Gosched() // let runs start and end between requests
				switch n := r.IntN(10); {
				case n < 4:
					plan, err := g.call().Plan(g.contexts)
					if err != nil {
						continue
					}
					if err := q.Apply(plan); err != nil {
						fail("Apply: %v", err)
					}
					accepted.Add(int64(len(plan.Executes)))
					if !plan.EnsureCompiled.Modules.IsEmpty() {
						accepted.Add(compileRequests(plan.EnsureCompiled))
					}
				case n < 7:
					if _, err := q.EnqueueExecute(g.execute()); err != nil {
						fail("EnqueueExecute: %v", err)
					}
					accepted.Add(1)
				case n < 8:
					e := g.compile()
					if _, err := q.EnqueueEnsureCompiled(e); err != nil {
						fail("EnqueueEnsureCompiled: %v", err)
					}
					accepted.Add(compileRequests(e))
				default:
					if err := q.AbortContext(pick(r, modelContexts), pick(r, modelCauses)); err != nil {
						fail("AbortContext: %v", err)
					}
				}
			}
		})
	}
	producing.Wait()
	if err := q.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	stopFinisher()
	background.Wait()
	if err := q.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	if v := runner.Violations(); len(v) > 0 {
		t.Fatalf("rules broken:\n%s", strings.Join(v, "\n"))
	}
	if d := ended.Duplicates(); len(d) > 0 {
		t.Fatalf("jobs ended twice: %v", d)
	}
	records := ended.Records()
	requests := 0
	for _, r := range records {
		requests += r.Requests
		if !r.State.IsFinal() {
			t.Fatalf("job ended in state %v", r.State)
		}
	}
	seen := make(map[jobs.ID]bool, len(records))
	for _, r := range records {
		seen[r.ID] = true
	}
	for id := jobs.ID(1); id <= jobs.ID(len(records)); id++ {
		if !seen[id] {
			t.Fatalf("job %d never ended (%d jobs ended)", id, len(records))
		}
	}
	if int64(requests) != accepted.Load() {
		t.Fatalf("ended jobs carry %d requests, %d were accepted", requests, accepted.Load())
	}
	if len(runner.Calls()) == 0 {
		t.Fatal("nothing ran")
	}
	executes := 0
	for _, c := range runner.Calls() {
		if c.Kind == jobs.KindExecute {
			executes++
		}
	}
	if executes == 0 {
		t.Fatal("no Execute ran")
	}
	t.Logf("%d requests, %d jobs, %d runner calls (%d Executes)", requests, len(records), len(runner.Calls()), executes)
}

// compileRequests is how many requests an EnsureCompiled makes: one per
// slot it names (the queue splits it), one if it names none.
func compileRequests(e jobs.EnsureCompiled) int64 {
	return int64(max(len(e.Slots), 1))
}
