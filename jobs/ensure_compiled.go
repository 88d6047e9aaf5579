package jobs

import "fmt"

// EnsureCompiled asks for the named modules (and the project modules that
// import them) to be brought up to date in every kernel.
//
// It runs alone: no other EnsureCompiled and no Execute beside it (rule 1),
// and every queued EnsureCompiled runs before any queued Execute starts
// (rule 5). It is not interruptible once running; queued ones collapse into
// one (rule 3).
type EnsureCompiled struct {
	// Modules to compile; All() after a kernel restart. Must not be empty.
	Modules ModuleSet
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
	return "EnsureCompiled(" + e.Modules.String() + ")"
}
