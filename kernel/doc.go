// Package kernel runs persistent Python kernel processes and talks to them
// over the wire protocol of kernel/PROTOCOL.md (loopback TCP, token
// handshake, length-prefixed frames). The Python side is the package
// python/ripple_kernel, embedded in the binary and installed into the
// user's cache directory on first use (ScriptDir; checked once per
// binary, then against a stamp: scriptstamp.go); a kernel starts at
// ripple_kernel/main.py (see bootstrap) and loads the execution engine
// ripple_kernel/engine.py.
//
// Start here:
//
//	py, err := kernel.FindPython(ctx, pythonFlag, root) // --python, RIPPLE_PYTHON, .venv, python3
//	k, err := kernel.Start(ctx, kernel.Config{Python: py, Root: root})
//	defer k.Stop(ctx)
//	err = k.Eval(ctx, "print('hi')", sink)          // output streams to sink
//	raw, err := k.Call(ctx, "execute", params, sink) // engine methods
//
// A server that should not wait 100-300 ms on a pyenv shim at every start
// uses FindPythonQuick instead: the shim's remembered answer at once, and
// a confirm to call while the kernels start and run (the engine does, and
// moves a running pool to confirm's answer with Pool.SetPython and a
// restart of each slot if the shim now runs another Python);
//
// or, for many kernels under supervision:
//
//	pool := kernel.NewPool(kernel.PoolConfig{Kernel: cfg, OnReady: install, OnRestart: notify})
//	err := pool.Start(ctx)
//	defer pool.Stop(ctx)
//	raw, err := pool.Call(ctx, slot, "execute", params, sink)
//
// # Requests and errors
//
// A Kernel runs one request at a time; Call, Eval and Repr wait their
// turn. Output (fd 1 and 2 of the kernel, so C code and child processes
// included) and progress events reach the request's Sink live, always
// before the call returns. Cancelling the call's context interrupts the
// request (SIGINT to the kernel's process group):
//   - the kernel answers: an error wrapping ErrInterrupted and
//     context.Cause(ctx); the kernel keeps its state;
//   - it does not within Config.InterruptTimeout (2 s): the kernel is
//     killed, the error wraps ErrKernelRestarted (state lost).
//
// A Python exception is a *RemoteError (type, message, traceback trimmed to
// user code; results are capped at 64 KiB, long strings cut with a marker).
// A kernel that dies fails every waiting call at once with an *ExitError
// (errors.Is ErrKernelDied) naming the exit status or signal and the last
// stderr lines, and pointing at the startup log. Stop is graceful: SIGTERM,
// Config.StopGrace, then SIGKILL.
//
// # Processes
//
// Each kernel runs in its own process group. When its connection closes
// the kernel exits by itself within a second and takes its process group
// (children of user code) with it; on Linux it also gets SIGKILL when the
// server dies (Pdeathsig; see procAttr for the caveats). When a kernel
// dies, the Go side kills what is left of its process group before
// reaping it. Processes that left the group (setsid) or were orphaned are
// found by the random tag every process of a kernel's tree inherits in its
// environment (RIPPLE_KERNEL_TAG): the supervisor kills them after reaping
// the kernel, the kernel's own exit paths do, and so does its sentinel when
// the server is killed (proctree.go).
//
// # Pool
//
// A Pool keeps Size slots (default runtime.NumCPU()) each served by one
// kernel, plus one warm spare. Each slot has one owner goroutine that
// starts or promotes a kernel, runs OnReady on it, publishes it and
// replaces it when it dies (with backoff while starts keep failing), when
// Restart asks or when the reconciliation tick's health check fails;
// every replacement is reported to OnRestart with StatePreserved false.
// Retire closes a slot for good (its kernel stopped gracefully, calls
// failing with ErrSlotRetired); a batch run retires kernels it no longer
// needs. Otherwise the pool never gives up on a slot; whether a run that killed its
// kernel is run again is for the caller to decide, with CrashStreak.
package kernel
