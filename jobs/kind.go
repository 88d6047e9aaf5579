package jobs

import (
	"strconv"
	"strings"
)

// ID names one job. The queue hands them out, starting at 1, in enqueue
// order; 0 means "no job".
type ID uint64

// ContextID names an execution context (a UUID string chosen by the client).
type ContextID string

// ExpressionID names one statement of a function body, "module:qualname/label".
type ExpressionID string

// Module is a dotted module name ("pkg.util").
type Module string

// Slot is the kernel pool slot an execution context lives on; the engine
// assigns it. At most one Execute runs per slot at a time.
type Slot int

// Kind tells the two job kinds apart.
type Kind uint8

const (
	// KindEnsureCompiled brings modules up to date in every kernel; it runs
	// alone.
	KindEnsureCompiled Kind = iota + 1
	// KindExecute runs one execution context's stack; Executes run in
	// parallel with each other.
	KindExecute
)

func (k Kind) String() string {
	switch k {
	case KindEnsureCompiled:
		return "EnsureCompiled"
	case KindExecute:
		return "Execute"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Priority orders queued Executes: a higher priority runs first; within one
// priority the queue is FIFO, which makes it round-robin across contexts (a
// context that runs and asks again queues behind the others).
type Priority uint8

const (
	// PriorityBatch is for file-watch and batch (ripple run) runs.
	PriorityBatch Priority = iota
	// PriorityUser is for runs the user triggered: edits from the IDE,
	// push, pop, recompute.
	PriorityUser
	// PriorityInteractive is for visualizations and executeExpression: the
	// user is looking at the result.
	PriorityInteractive

	// NumPriorities is the number of priority levels.
	NumPriorities = int(PriorityInteractive) + 1
)

func (p Priority) String() string {
	switch p {
	case PriorityBatch:
		return "batch"
	case PriorityUser:
		return "user"
	case PriorityInteractive:
		return "interactive"
	}
	return "Priority(" + strconv.Itoa(int(p)) + ")"
}

// Reason says why an Execute was enqueued. It is a bit set: a collapsed
// Execute carries the reasons of every request it absorbed.
//
// A run is automatic when every reason it was asked for is automatic
// (Automatic): typing (ReasonEdit) and the restore after a server restart
// (ReasonRestore). Every other reason is a user's explicit request
// (PROTOCOL.md 8.2). An automatic run holds external effects, so
// collapsing an automatic request into an explicit one (or the reverse)
// gives an explicit run: the user asked for it.
type Reason uint16

const (
	ReasonEdit              Reason = 1 << iota // typing: text/applyEdit with execute:true, an LSP didChange (automatic)
	ReasonFileWatch                            // a change seen on disk (ripple watch, an editor's save)
	ReasonPush                                 // executionContext/push
	ReasonPop                                  // executionContext/pop
	ReasonRecompute                            // executionContext/recompute
	ReasonVisualization                        // attach or modify a visualization
	ReasonExecuteExpression                    // executionContext/executeExpression
	ReasonBatch                                // a batch run (ripple run)
	ReasonRestart                              // a re-run after an explicit runtime/restartKernel, or on another slot
	ReasonClientWrite                          // a client's change other than typing: file/write, file/delete, a buffer closed back to disk
	ReasonRestore                              // a context or buffer restored after a server restart (automatic)

	reasonAll = ReasonRestore<<1 - 1

	// automaticReasons are the reasons of runs nobody asked for by a
	// command.
	automaticReasons = ReasonEdit | ReasonRestore
)

var reasonNames = [...]string{"edit", "file-watch", "push", "pop", "recompute",
	"visualization", "executeExpression", "batch", "restart", "client-write", "restore"}

// Automatic reports whether a run asked for r is automatic: r is not
// empty and holds automatic reasons only. A re-run after a kernel crash
// carries the reasons of the run it replaces, so it keeps its kind.
func (r Reason) Automatic() bool { return r != 0 && r&^automaticReasons == 0 }

// Has reports whether every reason of o is in r.
func (r Reason) Has(o Reason) bool { return r&o == o }

func (r Reason) String() string {
	if r == 0 {
		return "none"
	}
	var names []string
	for i, name := range reasonNames {
		if r&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if extra := r &^ reasonAll; extra != 0 {
		names = append(names, "Reason(0x"+strconv.FormatUint(uint64(extra), 16)+")")
	}
	return strings.Join(names, "|")
}
