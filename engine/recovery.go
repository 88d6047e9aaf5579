package engine

import "time"

// KeepUnsaved writes every open buffer with unsaved edits to
// .ripple/recovery (workspace.KeepUnsaved, atomically) and returns their
// paths. ripple serve calls it on shutdown, after the clients are gone, so
// no unsaved work is lost; text/openFile offers it back later.
func (e *Engine) KeepUnsaved() ([]string, error) {
	return e.ws.KeepUnsaved(time.Now())
}
