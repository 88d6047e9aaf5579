// Package jupyter makes ripple a Jupyter kernel: `ripple jupyter kernel
// -f CONNECTION_FILE` speaks the Jupyter messaging protocol 5.3 over
// ZeroMQ to any frontend (JupyterLab, Notebook, VS Code, nbclient) and
// runs the cells on ripple's engine. docs/jupyter.md is the user's
// guide; this is the map of the code.
//
//   - wire.go: connection files, messages, HMAC-SHA256 signing.
//   - server.go, handlers.go: Server, the five channels (shell, control,
//     stdin, iopub, heartbeat) on github.com/go-zeromq/zmq4 (pure Go), the
//     busy/idle protocol and one handler per request type, in front of a
//     Backend.
//   - session.go, execute.go, run.go, cells.go, stdin.go: Session, the
//     Backend on the engine. The notebook is a ripple client with one
//     context whose stack is the script module:__main__ of a module made
//     of the executed cells (cells.go says how cells become the script);
//     each execute_request rewrites that module and recomputes the
//     context, so only the statements whose inputs changed run, and the
//     output of the cell's cached statements is shown again from what
//     the session kept. The value journal lives in the session's state
//     directory, so a restarted kernel gets the values back without
//     running the cells.
//   - ipython.go, comm.go, history.go: IPython's session as ipykernel
//     keeps it: In/Out/_ around each cell and user_expressions after it
//     (kernel jupyter_shell.py), comms routed to the kernel's comm
//     manager (CommBackend, kernel jupyter_comm.py), history_request
//     answered as IPython's HistoryManager answers it.
//   - kernelspec.go: the kernelspec `ripple jupyter install` writes.
//
// The kernel side (kernel/python/ripple_kernel): jupyter_cells.py turns
// a cell into Python (IPython's transformer for magics, the last
// expression shown as execute_result) and answers is_complete;
// jupyter_boot.py, preloaded in every kernel, sets the working
// directory, input() over the stdin socket, get_ipython() and the result
// hook; complete.py answers completion and inspection.
//
// Goroutines and ownership: Server.Start starts one goroutine per
// socket it reads (heartbeat, shell, control, stdin) and Server.Stop
// ends them; Session.Start starts the engine and the stdin socket's
// goroutines, Session.Stop ends them. The Backend is called from the
// shell goroutine, except Interrupt. See the types' docs for the locks.
package jupyter
