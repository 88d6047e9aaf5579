package jobs

import "fmt"

// EnsureCompiled asks for the named modules (and the project modules that
// import them) to be brought up to date in the kernels of Slots.
//
// It is exclusive per kernel: no other EnsureCompiled and no Execute runs
// on its kernel beside it (rule 1), and every queued EnsureCompiled of a
// kernel runs before any queued Execute starts on that kernel (rule 5).
// It is not interruptible once running; queued ones of one kernel collapse
// into one (rule 3).
type EnsureCompiled struct {
	// Modules to compile; All() after a kernel restart. Must not be empty.
	Modules ModuleSet
	// Slots are the kernels to compile on; the queue splits a request
	// into one job per slot. Empty means every kernel: such a job is a
	// barrier that runs alone, beside no Execute and no other compile.
	Slots []Slot
}

// Validate reports a malformed request, naming the field at fault.
func (e *EnsureCompiled) Validate() error {
	if e.Modules.IsEmpty() {
		return fmt.Errorf("%w: EnsureCompiled names no module", ErrInvalidJob)
	}
	return nil
}

// Collapse merges a later request o into the queued job e (rule 3): the
// union of their modules. It does not allocate when e already holds every
// module of o.
func (e *EnsureCompiled) Collapse(o *EnsureCompiled) {
	e.Modules.Union(o.Modules)
}

func (e *EnsureCompiled) String() string {
	switch len(e.Slots) {
	case 0:
	case 1:
		return fmt.Sprintf("EnsureCompiled(%s on slot %d)", e.Modules.String(), e.Slots[0])
	default:
		return fmt.Sprintf("EnsureCompiled(%s on slots %v)", e.Modules.String(), e.Slots)
	}
	return "EnsureCompiled(" + e.Modules.String() + ")"
}
