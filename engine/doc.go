// Package engine is ripple's one execution path: it ties the workspace
// (files and buffers), the job queue, the kernel pool and the context state
// together. ripple serve (through package server), ripple watch and
// ripple run all drive the same Engine, so there is no second way to run
// code.
//
// Start here (example_test.go has it whole, with the client and the wait
// for the run's end):
//
//	e, err := engine.New(ctx, engine.Config{Root: dir, Watch: true, Kernels: 1})
//	err = e.Start(ctx)
//	defer e.Stop(ctx)
//	_, err = e.Connect(ctx, "client-1", client) // client.Notify gets notifications
//	res, err := e.CreateContext(ctx, "client-1", protocol.CreateContextParams{})
//	err = e.Push(ctx, "client-1", protocol.PushParams{ContextID: res.ContextID,
//		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})})
//
// # How a call becomes work
//
// Every API method follows DESIGN.md's API-to-jobs table in the same order:
// validate, apply the synchronous state change (workspace buffer, contexts
// store), build a plan with the jobs package's translation from the state
// after the change, drop from the plan's EnsureCompiled the modules every
// kernel already has in their current version (so a push does not wait
// behind a long run elsewhere for a compile that has nothing to do), hand
// the plan to queue.Apply (abort + enqueue, atomically) and return, so the
// reply goes out before the jobs run.
//
// # Ownership and locks
//
//   - The contexts.Store owns context state (stacks, visualizations, latest
//     updates, owners); it is safe for concurrent use and is the only copy.
//   - The workspace owns files and buffers.
//   - The queue owns jobs; the runner (runner.go) is called by it, on each
//     kernel slot for one job at a time: an EnsureCompiled of the slot or
//     one Execute (an EnsureCompiled of every kernel, Compile's, runs
//     alone).
//   - sourceTable (sources.go) owns what each kernel was given, which
//     modules are out of service (faulty) and the import graph the
//     kernels reported; its mutex guards it. OnReady (a slot owner
//     goroutine of the pool) and the EnsureCompiled runners (one per slot
//     at a time, possibly several slots at once) are its writers, each for
//     its own slot's maps.
//
// # Compiles (PROTOCOL.md 5.1)
//
// A compile imports only what a context on the kernel runs (its bottom
// module, and what that imports): other modules are sent as text and
// imported when first needed. Each module's top level is bounded by
// Config.CompileTimeout: the kernel's own SIGALRM timer cuts it (the
// module is then broken with a message saying so); if the kernel sends
// nothing for a second longer, the compile is interrupted and the kernel
// restarted if that does not take. A module whose load hung that way or
// killed the kernel is out of service (sourceTable.faulty) until its text
// changes: no kernel imports it, its importers fail with its diagnostic,
// so a replacement kernel does not die the same way (no restart loop).
//
// An edit reaches only the contexts whose bottom module imports a changed
// module, directly or transitively, by the static import graph the
// kernels report with every compile (a context whose graph is unknown or
// passes through a broken module counts as reached): those are aborted,
// compiled on their kernels and run again; the others keep running.
//   - dur (durable.go) orders what goes to Config.StateLog: a buffer's or
//     context's state is taken and appended under its key's stripe lock,
//     before the call that changed it answers, so the log's last entry for
//     each is its latest acknowledged state; different keys append
//     concurrently and share fsyncs.
//   - clientTable (clienttable.go) owns the connected clients and their
//     grace timers; notifications are sent under its mutex.
//   - runTable (runtable.go) owns which context's Execute is in flight on
//     each slot and which runs an edit asked to stop at a statement
//     boundary.
//
// Each of these types keeps its fields to its own methods, which take its
// lock; the invariants and lock order are written on its fields.
//   - dropQueue (drops.go) owns the destroyed contexts each kernel has not
//     forgotten yet; its mutex guards them. They ride along with the
//     slot's next Execute or are flushed when the slot stays idle; the
//     context's generation makes either order safe.
//   - slotsMu makes choosing a new context's slot and retiring idle slots
//     (RetireIdleKernels) exclusive, so no context lands on a closing slot.
//   - Each context's notifications go through its stream (stream.go), whose
//     mutex orders expression-update flushes, output and end-of-run
//     notifications, so a client always sees a run's updates before its
//     executionComplete/executionFailed.
//
// # What a cancelled run leaves behind
//
// A run cancelled by an edit, a stack change, a recompute or destroy ends
// without a notification (the run that replaces it reports); interrupted by
// the user or by a timeout it ends with executionFailed. Values computed
// before the cancel stay cached in the kernel and recorded in the store.
// Invalidations handed to a run that did not finish are put back as
// pending, so the next run still recomputes them.
package engine
