// Package queue is ripple's job scheduler: the prioritised, collapsing queue
// that runs EnsureCompiled and Execute jobs (package jobs) under the
// scheduling rules of ../shared/DESIGN.md ("Jobs and scheduling"), written
// down next to their implementation in schedule.go. EnsureCompiled is
// exclusive per kernel slot: a request naming slots becomes one job per
// slot, which holds back only that slot's Executes; one naming no slot is
// a barrier over every kernel. With Options.MaxCompileHold, a slot's
// queued EnsureCompiled that requests keep joining while its kernel
// compiles waits for them to pause (hold.go), so a burst of edits costs
// two compiles, not one per compile time.
//
// The engine implements Runner on its kernel pool and starts a queue:
//
//	q := queue.New(runner, queue.Options{OnEnd: notify})
//	if err := q.Start(ctx); err != nil { ... }
//	defer q.Stop(ctx)
//
// Each API call becomes a jobs.Plan (the translations in package jobs),
// which Apply carries out atomically: aborts first, then enqueues. Every job
// runs under its own context, cancelled with a jobs cause (jobs.ErrEdited,
// jobs.ErrInterrupted, ...) when it is aborted; every job ends in exactly
// one final state, reported once to Options.OnEnd. Status and Jobs show the
// queue for runtime/status; WaitIdle waits for a batch of work to finish.
//
// Package queue/queuetest has a fake Runner for tests.
package queue
