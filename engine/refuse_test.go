package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// failingLog is a real state log whose writes fail with ENOSPC while
// full is set, as a full disk's do (durable's own test fills a tmpfs);
// Failing reports the last write, as durable.Log's does.
type failingLog struct {
	l      *durable.Log
	full   atomic.Bool
	failed atomic.Bool // the last write failed
}

func (f *failingLog) Append(ctx context.Context, ev durable.Event) error {
	if err := f.Probe(); err != nil {
		return err
	}
	return f.l.Append(ctx, ev)
}

func (f *failingLog) Failing() error {
	if f.failed.Load() {
		return syscall.ENOSPC
	}
	return nil
}

func (f *failingLog) Probe() error {
	full := f.full.Load()
	f.failed.Store(full)
	if full {
		return fmt.Errorf("write %s: %w", f.l.Path(), syscall.ENOSPC)
	}
	return nil
}

// PROTOCOL.md 8.5 in the engine: an edit the state log cannot record is
// refused with 7001 naming the cause and undone (another client of the
// buffer gets the text back); while the log fails, changes are refused
// before they are made (the buffer, a new context); once it can be
// written, they are accepted again.
func TestRefusedChangesStayUndone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, _, err := durable.Open(filepath.Join(dir, ".ripple"), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fl := &failingLog{l: l}
	h := setup(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper}, engine.Config{StateLog: fl})
	viewer := newRecorder()
	must(t, firstErr(h.e.Connect(h.ctx, "viewer", viewer)))
	if _, err := h.e.OpenFile(h.ctx, "viewer", "helper.py"); err != nil {
		t.Fatal(err)
	}
	old, v := h.openFile("helper.py")
	edit := func(text string) error {
		return h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
			Path: "helper.py", Edits: []protocol.TextEdit{{Range: protocol.Range{Start: endOf(old), End: endOf(old)}, Text: text}},
			OldVersion: v, NewVersion: versionOf(old + text)}})
	}
	refused := func(what string, err error) {
		t.Helper()
		pe := engine.ProtocolError(err)
		if !errors.Is(err, engine.ErrStateNotRecorded) || pe.Code != protocol.CodeStateNotRecorded || !strings.Contains(pe.Message, "no space left on device") {
			t.Fatalf("%s: %v, want 7001 naming the full disk", what, err)
		}
	}

	fl.full.Store(true)
	m := viewer.mark()
	refused("the edit that meets the full disk", edit("# refused\n"))
	// The viewer saw the edit and then its undoing.
	viewer.waitFrom(t, m, "the refused edit undone", func(n note) bool {
		p, ok := n.Params.(protocol.DidChangeParams)
		return ok && n.Method == protocol.NotifyTextDidChange && len(p.Edits) == 1 && p.Edits[0].NewVersion == v
	})
	if got, gv := h.openFile("helper.py"); got != old || gv != v {
		t.Fatalf("after a refused edit the buffer is %q (%s), want it as it was", got, gv)
	}
	m = viewer.mark()
	refused("an edit while the log fails", edit("# refused again\n"))
	refused("a new context while the log fails", firstErr(h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{ContextID: "c-refused"})))
	if _, err := h.e.ContextStatus("c-refused"); err == nil {
		t.Errorf("a refused context exists")
	}
	// A clean buffer records nothing: closing it is not refused.
	must(t, h.e.CloseFile(h.ctx, "viewer", "helper.py"))
	for _, n := range viewer.since(m) {
		if n.Method == protocol.NotifyTextDidChange {
			t.Errorf("an edit refused before it was made reached the viewer: %+v", n.Params)
		}
	}

	fl.full.Store(false)
	must(t, edit("# accepted\n"))
	st, err := l.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Get(engine.KindBuffer, "helper.py"); !ok {
		t.Errorf("the accepted edit is not in the log")
	}
}
