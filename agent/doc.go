// Package agent is ripple's runtime agents (docs/scale-out.md): kernels
// on other hosts, served to a coordinator over one connection per agent.
// The wire protocol is agent/PROTOCOL.md.
//
// The agent side (`ripple agent`) owns a kernel.Pool on its host, so its
// kernels have the supervision of local ones (process groups, death pipe,
// interrupt cell, output capture, health checks, restarts), and relays
// requests to them:
//
//	a, err := agent.New(agent.Config{Coordinator: addr, Token: tok, Kernels: 2, Python: py, Root: dir})
//	err = a.Run(ctx) // until ctx ends, the coordinator's shutdown, or a refusal
//
// The coordinator side is the agents launcher of the engine
// (engine.Launcher): its slots are served by the agents' kernels, each a
// *kernel.Kernel made by kernel.Attach over the relay, so the engine does
// not know where a kernel runs:
//
//	c, err := agent.Listen(agent.CoordinatorConfig{Listen: "127.0.0.1:7070", Token: tok, Slots: 16})
//	eng, err := engine.New(ctx, engine.Config{Launcher: c, Kernels: c.Size(), ...})
//
// An agent that is lost (killed, its connection dropped, its lease
// expired) has its slots suspended for a grace period: runs on them wait.
// If it comes back with the same kernels (same run, same boots) their
// state is kept; otherwise, or when the grace runs out, the slots'
// contexts are told runtime/kernelRestarted {statePreserved: false,
// reason: "agent HOST lost"} and re-run, on the agent's new kernels or,
// after the grace, on other slots.
//
// With a Scheduler (CoordinatorConfig.Jobs; package slurm has Slurm's)
// the Coordinator is the slurm launcher: a run waiting on a slot no
// agent serves makes it submit `ripple agent` as a batch job, whose agent
// connects with the job's name for its id and serves the slots reserved
// for it; a job that ends (cancelled, preempted, at its time limit) is a
// lost agent at once, and one whose kernels have no context for the idle
// timeout is cancelled. jobs.go says who moves a job through its states.
package agent
