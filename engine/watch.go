package engine

import (
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// consumeBatches turns each batch of changes seen on disk into one edit
// (DESIGN.md: abort, EnsureCompiled(changed modules), Execute per context)
// and its notifications: file/event to every client, text/didChange for
// reloaded clean buffers, text/fileModifiedOnDisk for buffers with unsaved
// edits (kept as they are). It returns when the watcher closes the channel.
func (e *Engine) consumeBatches(batches <-chan workspace.Batch) {
	for b := range batches {
		for _, c := range b.Changes {
			e.broadcast(protocol.NotifyFileEvent, protocol.FileEventParams{Path: protocol.Path(c.Path), Kind: protocol.FileEventKind(c.Kind)})
		}
		for _, u := range b.Reloaded {
			e.bufferReloaded(u, "")
		}
		for _, c := range b.Conflicts {
			e.notifyClients(clientIDs(c.Clients), protocol.NotifyFileModifiedOnDisk, protocol.FileModifiedOnDiskParams{Path: protocol.Path(c.Path)})
		}
		e.readFilesChanged(b.Changes)
		if len(b.Modules) == 0 {
			continue
		}
		mods := make([]jobs.Module, len(b.Modules))
		for i, m := range b.Modules {
			mods[i] = jobs.Module(m)
		}
		if err := e.apply(jobs.Edit{Modules: jobs.SetOf(mods...), Origin: jobs.OriginDisk}); err != nil {
			e.log.Warn("recompute after change on disk", "modules", b.Modules, "err", err)
		}
	}
}

// bufferReloaded tells the clients of a clean buffer that took new content
// (from disk or file/write) with a text/didChange replacing the whole text,
// except the client that caused it.
func (e *Engine) bufferReloaded(u workspace.BufferUpdate, except string) {
	var to []string
	for _, c := range u.Clients {
		if string(c) != except {
			to = append(to, string(c))
		}
	}
	if len(to) == 0 {
		return
	}
	te := u.Edit()
	e.notifyClients(to, protocol.NotifyTextDidChange, protocol.DidChangeParams{Edits: []protocol.FileEdit{{
		Path:       protocol.Path(u.Path),
		Edits:      []protocol.TextEdit{{Range: fromWorkspaceRange(te.Range), Text: te.Text}},
		OldVersion: string(u.OldVersion),
		NewVersion: string(u.NewVersion),
	}}})
}
