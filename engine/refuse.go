package engine

import (
	"errors"
	"fmt"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/workspace"
)

// ErrStateNotRecorded: a change could not be made durable in the state
// log (.ripple/state.db: a full disk, a read-only file system, an I/O
// error), so it was refused (PROTOCOL.md 8.5, 7001 StateNotRecorded).
var ErrStateNotRecorded = errors.New("change not recorded in .ripple/state.db, so refused")

// StateProber is implemented by a StateLog that knows whether its last
// write failed and can try a write again (*durable.Log).
//
// Refusing a change (PROTOCOL.md 8.5) works in two steps. While the log
// is failing, each change first probes it (stateGate): a failed probe
// refuses the change before anything is touched, a successful one means
// writing works again and the change goes ahead. The change that meets
// the failure first (the log was fine when it started) is made, fails to
// record and is undone: a text edit is put back (UndoEdit, and the other
// clients get the text back with text/didChange), a created context is
// destroyed, a push popped, a pop pushed back, a visualization attach,
// modify or detach reversed. A destroy is not undone (its runs are
// aborted already): it is refused only by the probe. An undo is skipped
// when another client's change landed on the same buffer in between; that
// change meets the same failure and undoes itself.
type StateProber interface {
	// Failing is the error of the last write, nil if it succeeded.
	Failing() error
	// Probe tries a small write and returns its error.
	Probe() error
}

// notRecorded is the error of a change to what (a buffer's or a context's
// name) whose append failed with err.
func notRecorded(what string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrStateNotRecorded, what, err)
}

// stateGate refuses a change while the state log cannot be written (see
// StateProber); nil without a log or when it can be written.
func (e *Engine) stateGate() error {
	p, ok := e.cfg.StateLog.(StateProber)
	if !ok || p.Failing() == nil {
		return nil
	}
	if err := p.Probe(); err != nil {
		return fmt.Errorf("%w: it cannot be written: %v", ErrStateNotRecorded, err)
	}
	if s, ok := e.cfg.StateLog.(StateSeeder); ok && s.Unseeded() {
		if err := e.seedStateLog(s); err != nil {
			e.log.Error("state log opened for writing, but the server's state could not be written to it; changes stay refused (7001)", "err", err)
			return fmt.Errorf("%w: writing the server's state to it: %v", ErrStateNotRecorded, err)
		}
		return nil
	}
	e.log.Info("state log can be written again; changes are accepted")
	return nil
}

// undoEdit puts a buffer back as it was before res, an edit that could not
// be recorded, tells the other clients, and schedules the module's run
// with the text as it was.
func (e *Engine) undoEdit(clientID string, path string, res workspace.EditResult) {
	u, ok := e.ws.UndoEdit(path, res)
	if !ok {
		e.log.Warn("refused edit not undone: another change landed on the buffer", "path", path)
		return
	}
	e.bufferReloaded(u, clientID)
	if err := e.edited(path, jobs.OriginClient); err != nil {
		e.log.Warn("run after a refused edit", "path", path, "err", err)
	}
}
