package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// Clients of the engine (DESIGN.md "Supervision", PROTOCOL.md 3 and 4):
// disconnects and the grace period, shared contexts, text buffers shared
// between clients.

// updatesOf collects the expression updates of a context in notes.
func updatesOf(notes []note, id protocol.ContextID) []protocol.ExpressionUpdate {
	var out []protocol.ExpressionUpdate
	for _, n := range notes {
		if p, ok := n.Params.(protocol.ExpressionUpdatesParams); ok && p.ContextID == id {
			out = append(out, p.Updates...)
		}
	}
	return out
}

func (r *recorder) all() []note {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notes)
}

func TestReconnectWithinGraceGetsContextsBack(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	h.e.Disconnect(clientID, h.client)

	// Edits while the client is away still run its context.
	h.setText("main.py", mainWith("x = 7", "y = foo(x, 5)", "z = y + 5"))
	waitIdle(t, h.e)

	back := newRecorder()
	m := back.mark()
	if _, err := h.e.Connect(h.ctx, clientID, back); err != nil {
		t.Fatal(err)
	}
	notes := back.waitFrom(t, m, "the context's values", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id
	})
	us := updatesOf(notes, id)
	got := map[string]string{}
	for _, u := range us {
		if u.FromCache {
			// As the last run reported it (PROTOCOL.md 8.4): the edit's run computed it.
			t.Errorf("%s resent with fromCache true", u.ExpressionID)
		}
		got[string(u.ExpressionID)] = u.Payload.Preview
	}
	expect(t, "values on reconnect", got, map[string]string{"main:main/x": "7", "main:main/y": "35", "main:main/z": "40"})

	// The reconnected client receives the context's notifications; the old
	// connection does not.
	old := h.client.mark()
	m = back.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run := back.waitRun(t, m, id)
	expect(t, "recomputed after reconnect", run.updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	if n := h.client.countNotes(old, func(note) bool { return true }); n != 0 {
		t.Errorf("the stale connection got %d notifications", n)
	}
}

// Tracked tells, through a file, when the kernel let go of its value.
const trackedMain = `class Tracked:
    def __del__(self):
        open("freed", "w").close()


def main():
    t = Tracked()
    n = 1
`

func TestGraceExpiryDestroysContexts(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": trackedMain}, engine.Config{DisconnectGrace: 50 * time.Millisecond})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("first run: %s", resultString(run.failed))
	}
	freed := filepath.Join(h.dir, "freed")
	if _, err := os.Stat(freed); err == nil {
		t.Fatal("the value was freed while its context exists")
	}
	h.e.Disconnect(clientID, h.client)

	// The kernel forgets the context: its cached value is released.
	testenv.EventuallyWithin(t, 30*time.Second, "the kernel to release the value after the grace period", func() bool {
		_, err := os.Stat(freed)
		return err == nil
	})

	back := newRecorder()
	if _, err := h.e.Connect(h.ctx, clientID, back); err != nil {
		t.Fatal(err)
	}
	err := h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id})
	if pe := engine.ProtocolError(err); pe == nil || pe.Code != protocol.CodeContextNotFound {
		t.Errorf("recompute of the expired context: %v, want ContextNotFound", err)
	}
	waitIdle(t, h.e)
	if us := updatesOf(back.all(), id); len(us) != 0 {
		t.Errorf("the expired context's values were sent on reconnect: %v", us)
	}
}

func TestTwoClientsOwningOneContext(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, engine.Config{})
	id, _ := h.newContext("main:main")

	other := newRecorder()
	if _, err := h.e.Connect(h.ctx, "client-b", other); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.CreateContext(h.ctx, "client-b", protocol.CreateContextParams{ContextID: id})
	must(t, err)
	expect(t, "create is idempotent", res.ContextID, id)

	ma, mb := h.client.mark(), other.mark()
	h.setText("main.py", scenarioMain[:len(scenarioMain)-len("    return z\n")]+"    return z + 1\n")
	runA := h.client.waitRun(t, ma, id)
	runB := other.waitRun(t, mb, id)
	for name, run := range map[string]*runResult{"a": runA, "b": runB} {
		if run.failed != nil {
			t.Errorf("client %s: %s", name, resultString(run.failed))
		}
		expect(t, "client "+name+" return", run.updates.Values()["main:main/return"], "36")
	}
	expect(t, "both clients got the same updates", len(runA.updates), len(runB.updates))
}

func TestDidChangeGoesToTheOtherClient(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, engine.Config{})
	other := newRecorder()
	if _, err := h.e.Connect(h.ctx, "client-b", other); err != nil {
		t.Fatal(err)
	}
	_, version := h.openFile("helper.py")
	if _, err := h.e.OpenFile(h.ctx, "client-b", "helper.py"); err != nil {
		t.Fatal(err)
	}
	edited := "def foo(a, b):\n    c = a * b + 1\n    return c\n"
	edit := protocol.FileEdit{
		Path:       "helper.py",
		Edits:      []protocol.TextEdit{{Range: protocol.Range{Start: protocol.Position{Line: 1, Character: 13}, End: protocol.Position{Line: 1, Character: 13}}, Text: " + 1"}},
		OldVersion: version,
		NewVersion: versionOf(edited),
	}
	ma, mb := h.client.mark(), other.mark()
	must(t, h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Edit: edit, Execute: true}))
	notes := other.waitFrom(t, mb, "text/didChange", func(n note) bool {
		_, ok := n.Params.(protocol.DidChangeParams)
		return ok
	})
	got := notes[len(notes)-1].Params.(protocol.DidChangeParams)
	expect(t, "didChange", got.Edits, []protocol.FileEdit{edit})
	waitIdle(t, h.e)
	if n := h.client.countNotes(ma, func(n note) bool { _, ok := n.Params.(protocol.DidChangeParams); return ok }); n != 0 {
		t.Errorf("the editing client got %d text/didChange", n)
	}

	// The other client, having applied the change, edits on from the new
	// version.
	again := edited + "\n\nK = 1\n"
	must(t, h.e.ApplyEdit(h.ctx, "client-b", protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path:       "helper.py",
		Edits:      []protocol.TextEdit{{Range: protocol.Range{Start: endOf(edited), End: endOf(edited)}, Text: "\n\nK = 1\n"}},
		OldVersion: versionOf(edited),
		NewVersion: versionOf(again),
	}}))
	content, _ := h.openFile("helper.py")
	expect(t, "buffer after both edits", content, again)
}

func TestFileWriteRefusedOnDirtyBuffer(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, engine.Config{})
	dirty := "def foo(a, b):\n    c = a * b * 2\n    return c\n"
	h.setText("helper.py", dirty)

	err := h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "helper.py", Contents: "clobbered\n"})
	if pe := engine.ProtocolError(err); pe == nil || pe.Code != protocol.CodeWriteDenied {
		t.Fatalf("file/write on a dirty buffer: %v, want WriteDenied", err)
	}
	onDisk, err := os.ReadFile(filepath.Join(h.dir, "helper.py"))
	must(t, err)
	expect(t, "file on disk", string(onDisk), scenarioHelper)
	content, _ := h.openFile("helper.py")
	expect(t, "buffer", content, dirty)

	// Saved, the buffer is clean: the write is accepted and reaches the
	// buffer.
	must(t, h.e.SaveFile(h.ctx, clientID, protocol.SaveParams{Path: "helper.py", CurrentVersion: versionOf(dirty)}))
	written := "def foo(a, b):\n    return a\n"
	must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "helper.py", Contents: written}))
	onDisk, err = os.ReadFile(filepath.Join(h.dir, "helper.py"))
	must(t, err)
	expect(t, "file on disk after the accepted write", string(onDisk), written)
	content, _ = h.openFile("helper.py")
	expect(t, "buffer after the accepted write", content, written)
}

// Each bad call gets the protocol error code of PROTOCOL.md 6 and a message
// naming the thing at fault; the engine keeps running.
func TestBadCallsGetProtocolCodes(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	empty, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	h.openFile("main.py")
	cases := []struct {
		name string
		call func() error
		code protocol.Code
		says string
	}{
		{"recompute of an unknown context", func() error {
			return h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: "no-such-context"})
		}, protocol.CodeContextNotFound, "no-such-context"},
		{"pop of an empty stack", func() error { return h.e.Pop(h.ctx, clientID, empty.ContextID) }, protocol.CodeEmptyStack, string(empty.ContextID)},
		{"push of a missing module", func() error {
			return h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: empty.ContextID,
				StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "nowhere", Name: "main"})})
		}, protocol.CodeModuleNotFound, "nowhere"},
		{"LocalCall into a statement that is not a call", func() error {
			return h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/x")})
		}, protocol.CodeInvalidStackItem, "main:main/x"},
		{"edit with a stale version", func() error {
			return h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Edit: protocol.FileEdit{Path: "main.py",
				Edits: []protocol.TextEdit{{Text: "# x\n"}}, OldVersion: versionOf("not the buffer"), NewVersion: versionOf("# x\n" + scenarioMain)}})
		}, protocol.CodeInvalidVersion, "main.py"},
		{"edit of a file that is not open", func() error {
			return h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Edit: protocol.FileEdit{Path: "helper.py",
				Edits: []protocol.TextEdit{{Text: "# x\n"}}, OldVersion: versionOf(scenarioHelper), NewVersion: versionOf("# x\n" + scenarioHelper)}})
		}, protocol.CodeFileNotOpened, "helper.py"},
		{"read of a missing file", func() error {
			_, err := h.e.ReadFile(h.ctx, clientID, "missing.py")
			return err
		}, protocol.CodeFileNotFound, "missing.py"},
		{"open of a path outside the root", func() error {
			_, err := h.e.OpenFile(h.ctx, clientID, "../outside.py")
			return err
		}, protocol.CodePathOutsideRoot, "outside.py"},
		{"visualization of an expression of another function", func() error {
			return h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v1", ExpressionID: "helper:foo/c",
				VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}})
		}, protocol.CodeExpressionNotFound, "helper:foo/c"},
		{"modify of an unknown visualization", func() error {
			return h.e.ModifyVisualization(h.ctx, clientID, protocol.ModifyVisualizationParams{VisualizationID: "no-such-vis",
				VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}})
		}, protocol.CodeVisualizationNotFound, "no-such-vis"},
	}
	for _, c := range cases {
		err := c.call()
		pe := engine.ProtocolError(err)
		if pe == nil || pe.Code != c.code || !strings.Contains(pe.Message, c.says) {
			t.Errorf("%s: %v (code %v), want code %v naming %q", c.name, err, codeOf(pe), c.code, c.says)
		}
	}

	// Still running: a recompute of the context works.
	m := h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	if run := h.client.waitRun(t, m, id); run.failed != nil {
		t.Errorf("run after the bad calls: %s", resultString(run.failed))
	}
}

func codeOf(pe *protocol.Error) any {
	if pe == nil {
		return nil
	}
	return pe.Code
}

// A client that disconnects while its context runs stops that run (nobody
// watches it, and it would hold a kernel other clients share); reconnecting
// runs it again.
func TestDisconnectInterruptsAndReconnectResumes(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": mainWith("x = 6", "import time; time.sleep(float(open('delay').read())); y = foo(x, 5)", "z = y + 5"),
		"helper.py": scenarioHelper, "delay": "600"}, engine.Config{})
	id, m := h.startContext("main:main")
	h.client.waitFrom(t, m, "x computed", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == "main:main/x" && u.Payload.Type == protocol.PayloadValue
		})
	})
	m = h.client.mark()
	h.e.Disconnect(clientID, h.client)
	// The kernel is free again: its status says so once the run stopped.
	waitIdle(t, h.e)
	write(t, h.dir, "delay", "0")
	back := newRecorder()
	_, err := h.e.Connect(h.ctx, clientID, back)
	must(t, err)
	// First the state as it stands (the run that was stopped), then the
	// run that brings it up to date.
	last := back.waitRun(t, 0, id)
	if last.failed == nil || last.failed.Kind != protocol.ResultInterrupted {
		t.Fatalf("reconnect resent %+v as the last result, want the interrupted run", last.failed)
	}
	run := back.waitRun(t, len(last.notes), id)
	if run.failed != nil {
		t.Fatalf("the resumed run failed: %+v", run.failed)
	}
	expect(t, "z after reconnect", run.updates.Values()["main:main/z"], "35")
	if n := h.client.mark(); n != m {
		t.Errorf("the old client got %d notifications after it disconnected", n-m)
	}
}

// The run request a client sends when typing pauses (an edit without
// changes at the current version, execute:true) is not a change: other
// clients with the file open get no text/didChange for it.
func TestRunRequestIsNoChangeForOthers(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": scenarioMain, "helper.py": scenarioHelper}, engine.Config{})
	other := newRecorder()
	if _, err := h.e.Connect(h.ctx, "client-b", other); err != nil {
		t.Fatal(err)
	}
	_, version := h.openFile("helper.py")
	if _, err := h.e.OpenFile(h.ctx, "client-b", "helper.py"); err != nil {
		t.Fatal(err)
	}
	mb := other.mark()
	must(t, h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path: "helper.py", OldVersion: version, NewVersion: version,
	}}))
	waitIdle(t, h.e)
	if n := other.countNotes(mb, func(n note) bool { _, ok := n.Params.(protocol.DidChangeParams); return ok }); n != 0 {
		t.Errorf("the other client got %d text/didChange for a run request", n)
	}
}

// A client that saw its context's run end and reconnects within the grace
// period gets the values it had, fromCache true (nothing is computed for
// it now, PROTOCOL.md 8.4), and no second end of that run: the next end it
// hears is its next run's.
func TestReconnectAfterASeenRunResendsState(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	h.e.Disconnect(clientID, h.client)

	back := newRecorder()
	m := back.mark()
	if _, err := h.e.Connect(h.ctx, clientID, back); err != nil {
		t.Fatal(err)
	}
	notes := back.waitFrom(t, m, "the context's values", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id
	})
	for _, u := range updatesOf(notes, id) {
		if !u.FromCache {
			t.Errorf("%s resent with fromCache false", u.ExpressionID)
		}
	}
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run := back.waitRun(t, m, id)
	expect(t, "the first run ending after the reconnect", run.updates.Computed(), []string{"main:main/x", "main:main/y", "main:main/z"})
	waitIdle(t, h.e)
	if n := back.count(m, protocol.NotifyExecutionComplete); n != 1 {
		t.Errorf("%d executionComplete since the reconnect, want 1 (the recompute's)", n)
	}
}
