package lsp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	lsproto "go.lsp.dev/protocol"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// Documents map onto ripple's text buffers (PROTOCOL.md 3, text/*): didOpen
// opens the buffer and, when the editor's text is not the disk's, replaces
// its content; didChange applies the changes as one text/applyEdit without
// running them (so the unsaved text is what runs next), and the run is asked
// once changes pause (debounce.go); didSave saves the buffer and runs it,
// its held statements explicitly; didClose closes it.
//
// The session keeps the editor's text and the buffer's version. When the
// buffer moved under it (another client, a reload from disk), the edit is
// refused with InvalidVersion; the session then reads the buffer's current
// content and replaces it with the editor's text, which is what the editor
// shows and so what must run.

// DidOpen opens the document's buffer.
func (s *session) DidOpen(ctx context.Context, p *lsproto.DidOpenTextDocumentParams) error {
	if err := s.checkInitialized(); err != nil {
		return err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		s.log.Debug("didOpen ignored", "err", err)
		s.tellOutside(p.TextDocument.URI)
		return nil // another folder's file: nothing to show, not an error
	}
	res, err := s.eng.OpenFile(ctx, s.clientID, rel)
	if err != nil {
		s.log.Warn("open buffer", "path", rel, "err", err)
		return nil
	}
	d := &document{uri: p.TextDocument.URI, path: rel, text: p.TextDocument.Text, version: res.CurrentVersion}
	if res.Content != d.text {
		// Run at once: nothing is being typed yet, and the values shown
		// must be the editor's text's.
		if d.version, err = s.replace(ctx, rel, res.Content, res.CurrentVersion, d.text, true); err != nil {
			s.log.Warn("sync opened buffer", "path", rel, "err", err)
		}
	}
	s.mu.Lock()
	s.docs[rel] = d
	s.mu.Unlock()
	s.wantRefresh(true)
	return nil
}

// DidChange applies the editor's changes to the buffer: one applyEdit per
// notification (execute:false), its edits converted to code points in
// order, each on the result of the previous one. The run of the new text
// is asked when changes pause (debounce.go), so a half-typed name is
// never run.
func (s *session) DidChange(ctx context.Context, p *lsproto.DidChangeTextDocumentParams) error {
	if err := s.checkInitialized(); err != nil {
		return err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	d, ok := s.docs[rel]
	enc := s.enc
	var text, version string
	if ok {
		text, version = d.text, d.version
	}
	s.mu.Unlock()
	if !ok {
		return s.refuseChange(fmt.Errorf("%w: %s", ErrNotOpen, p.TextDocument.URI))
	}
	edits := make([]protocol.TextEdit, 0, len(p.ContentChanges))
	for i, ch := range p.ContentChanges {
		switch c := ch.(type) {
		case *lsproto.TextDocumentContentChangePartial:
			r, err := enc.fromLSPRange(text, c.Range)
			if err != nil {
				return s.refuseChange(fmt.Errorf("%s: change %d: %w", rel, i, err))
			}
			if text, err = applyEdit(text, r, c.Text); err != nil {
				return s.refuseChange(fmt.Errorf("%s: change %d: %w", rel, i, err))
			}
			edits = append(edits, protocol.TextEdit{Range: r, Text: c.Text})
		case *lsproto.TextDocumentContentChangeWholeDocument:
			edits = append(edits, protocol.TextEdit{Range: protocol.Range{End: endOf(text)}, Text: c.Text})
			text = c.Text
		}
	}
	newVersion := string(workspace.VersionOf(text))
	// The hints follow the text at once: the ranges of the last run move
	// with the lines, before the run of the new text (asked once changes
	// pause) brings exact ones.
	s.mu.Lock()
	for _, e := range s.entries {
		if s.modulePath(e.top().Module) != rel {
			continue
		}
		for id, u := range e.updates {
			if u.Range == nil {
				continue
			}
			r := *u.Range
			for _, ed := range edits {
				r = protocol.Range{Start: shift(r.Start, ed), End: shift(r.End, ed)}
			}
			if r.Start == r.End && u.Range.Start != u.Range.End {
				// Deleted with its lines: no run updates it any more,
				// and its hint must not stay on the line it was.
				delete(e.updates, id)
				continue
			}
			u.Range = &r
			e.updates[id] = u
		}
	}
	s.mu.Unlock()
	err = s.eng.ApplyEdit(ctx, s.clientID, protocol.ApplyEditParams{Edit: protocol.FileEdit{
		Path: protocol.Path(rel), Edits: edits, OldVersion: version, NewVersion: newVersion}})
	if errors.Is(err, workspace.ErrInvalidVersion) {
		// The buffer moved under us: make it the editor's text again.
		var res protocol.OpenFileResult
		if res, err = s.eng.OpenFile(ctx, s.clientID, rel); err == nil {
			newVersion, err = s.replace(ctx, rel, res.Content, res.CurrentVersion, text, false)
		}
	}
	if err != nil {
		s.log.Warn("apply edit", "path", rel, "err", err)
	}
	s.mu.Lock()
	if d, ok := s.docs[rel]; ok {
		d.text = text
		if err == nil {
			d.version = newVersion
			s.unrun[rel] = true
		}
	}
	s.mu.Unlock()
	// After the version above is recorded: the run the debouncer asks
	// names it.
	s.changed()
	return nil
}

// refuseChange reports a didChange that cannot be applied. didChange is a
// notification, so the error would go nowhere: the editor is told with
// window/showMessage that the document is out of step (nothing was
// applied; reopening it syncs it again) and the server goes on.
func (s *session) refuseChange(err error) error {
	s.log.Warn("didChange refused", "err", err)
	s.enqueueMessage(lsproto.MessageTypeError, fmt.Sprintf("ripple: %v: the change was not applied; close and reopen the document to sync it", err))
	return nil
}

// replace makes the buffer at rel (content at version) hold text, runs it
// when execute is set, and returns the new version.
func (s *session) replace(ctx context.Context, rel, content, version, text string, execute bool) (string, error) {
	v := string(workspace.VersionOf(text))
	err := s.eng.ApplyEdit(ctx, s.clientID, protocol.ApplyEditParams{Execute: execute, Edit: protocol.FileEdit{
		Path:       protocol.Path(rel),
		Edits:      []protocol.TextEdit{{Range: protocol.Range{End: endOf(content)}, Text: text}},
		OldVersion: version, NewVersion: v}})
	if err != nil {
		return version, err
	}
	return v, nil
}

// DidSave saves the buffer (an atomic write of what the editor saved),
// runs the edits still waiting for a pause at once, and runs the file's
// held statements explicitly (PROTOCOL.md 8.2: a save is the user asking;
// held.go).
func (s *session) DidSave(ctx context.Context, p *lsproto.DidSaveTextDocumentParams) error {
	if err := s.checkInitialized(); err != nil {
		return err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	d, ok := s.docs[rel]
	var version string
	if ok {
		version = d.version
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	s.runEdited(ctx)
	if err := s.eng.SaveFile(ctx, s.clientID, protocol.SaveParams{Path: protocol.Path(rel), CurrentVersion: version}); err != nil {
		s.log.Warn("save buffer", "path", rel, "err", err)
	}
	s.runHeld(ctx, rel)
	return nil
}

// DidClose closes the buffer; unsaved edits go (the module runs its disk
// version again).
func (s *session) DidClose(ctx context.Context, p *lsproto.DidCloseTextDocumentParams) error {
	if err := s.checkInitialized(); err != nil {
		return err
	}
	rel, err := s.relPath(p.TextDocument.URI)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	_, ok := s.docs[rel]
	delete(s.docs, rel)
	delete(s.unrun, rel) // closing reverts and runs the disk's text
	s.mu.Unlock()
	if !ok {
		return nil
	}
	if err := s.eng.CloseFile(ctx, s.clientID, rel); err != nil {
		s.log.Warn("close buffer", "path", rel, "err", err)
	}
	return nil
}

// changedSpan returns the byte span [from, to) of old that differs from
// new, and what new has there: the text between their common prefix and
// suffix, cut at character boundaries.
func changedSpan(old, new string) (from, to int, with string) {
	n := min(len(old), len(new))
	for from < n && old[from] == new[from] {
		from++
	}
	for from > 0 && from < len(old) && !utf8.RuneStart(old[from]) {
		from--
	}
	suffix := 0
	for suffix < n-from && old[len(old)-1-suffix] == new[len(new)-1-suffix] {
		suffix++
	}
	for suffix > 0 && !utf8.RuneStart(old[len(old)-suffix]) {
		suffix--
	}
	return from, len(old) - suffix, new[from : len(new)-suffix]
}

// positionAt returns the position (code points) of byte offset off in text.
func positionAt(text string, off int) protocol.Position {
	before := text[:off]
	line := strings.Count(before, "\n")
	return protocol.Position{Line: line, Character: utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:])}
}

// shift moves a position of the text before edit ed to where it is after
// it: positions before the edit stay, those after move with it, those
// inside go to its start.
func shift(p protocol.Position, ed protocol.TextEdit) protocol.Position {
	start, end := ed.Range.Start, ed.Range.End
	if p.Before(start) {
		return p
	}
	if p.Before(end) {
		return start
	}
	lines := strings.Count(ed.Text, "\n")
	last := utf8.RuneCountInString(ed.Text[strings.LastIndexByte(ed.Text, '\n')+1:])
	if p.Line > end.Line {
		return protocol.Position{Line: p.Line + lines - (end.Line - start.Line), Character: p.Character}
	}
	// On the edit's last line: the rest of the line follows the new text.
	ch := last + p.Character - end.Character
	if lines == 0 {
		ch += start.Character
	}
	return protocol.Position{Line: start.Line + lines, Character: ch}
}

// applyEdit replaces r (code points; LSP clamping already applied) in text.
func applyEdit(text string, r protocol.Range, with string) (string, error) {
	if r.End.Before(r.Start) {
		return "", fmt.Errorf("%w: range end %d:%d is before its start %d:%d", errPosition,
			r.End.Line, r.End.Character, r.Start.Line, r.Start.Character)
	}
	start, err := byteOffset(text, r.Start)
	if err != nil {
		return "", err
	}
	end, err := byteOffset(text, r.End)
	if err != nil {
		return "", err
	}
	return text[:start] + with + text[end:], nil
}

// byteOffset returns the byte offset of a code-point position in text.
func byteOffset(text string, p protocol.Position) (int, error) {
	start := 0
	for line := 0; line < p.Line; line++ {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			return 0, fmt.Errorf("%w: line %d is past the last line", errPosition, p.Line)
		}
		start += i + 1
	}
	at := start
	for range p.Character {
		if at >= len(text) || text[at] == '\n' || text[at] == '\r' && at+1 < len(text) && text[at+1] == '\n' {
			return 0, fmt.Errorf("%w: %d:%d is past the end of its line", errPosition, p.Line, p.Character)
		}
		_, size := utf8.DecodeRuneInString(text[at:])
		at += size
	}
	return at, nil
}
