// Package jobs defines ripple's job kinds and the translation of API calls
// into jobs (../shared/DESIGN.md, "Jobs and scheduling").
//
// There are two kinds of job. EnsureCompiled brings modules up to date in
// the kernels of its slots and runs exclusively on each (one of every
// kernel runs alone); Execute runs one execution context's stack and runs
// in parallel with other Executes, one per kernel slot. Package
// queue schedules them; this package holds what they are: the requests
// (EnsureCompiled, Execute) and how queued ones collapse, the job states and
// how a job's final state follows from its runner's result and its
// cancellation cause (the Err causes), and the Record the queue reports.
//
// To start, translate an API call into a Plan and give it to the queue:
//
//	plan, err := jobs.Push{Context: id}.Plan(contexts)
//	if err != nil { ... }
//	err = q.Apply(plan)
//
// Contexts is the state the translations read, taken after the call's own
// state update. Every translation is a plain function of that state and the
// call (see translate.go for the table).
package jobs
