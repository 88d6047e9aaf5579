package lsp_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/lsp"
)

// initializeNoRefresh initializes as Neovim 0.10 and Eglot do: no
// inlayHint refresh support (they never redraw on it), utf-32 positions,
// with initializationOptions opts.
func (b *bundle) initializeNoRefresh(opts string) {
	b.t.Helper()
	f := false
	if _, err := b.server.Initialize(b.t.Context(), &lsproto.InitializeParams{
		InitializationOptions: lsproto.LSPAny(opts),
		Capabilities: lsproto.ClientCapabilities{
			General:   &lsproto.GeneralClientCapabilities{PositionEncodings: []lsproto.PositionEncodingKind{lsproto.PositionEncodingKindUTF32}},
			Workspace: &lsproto.WorkspaceClientCapabilities{InlayHint: &lsproto.InlayHintWorkspaceClientCapabilities{RefreshSupport: &f}},
		}}); err != nil {
		b.t.Fatalf("initialize: %v", err)
	}
	if err := b.server.Initialized(b.t.Context(), &lsproto.InitializedParams{}); err != nil {
		b.t.Fatal(err)
	}
}

// TestHintAfterEditWaitsForTheRun: an editor that never honours refresh
// asks for hints once after an edit; that one answer has the edit's value,
// not the previous one labelled current (the issue: `= 1003` shown after
// typing 1004, 150 of 150 samples). The budget is long here so that the
// answer cannot come from the budget running out.
func TestHintAfterEditWaitsForTheRun(t *testing.T) {
	b := setup(t)
	b.initializeNoRefresh(`{"ripple": {"hintWaitMs": 30000}}`)
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(2) == "= 42" })
	for i, v := range []string{"8", "9", "3"} {
		b.replace(int32(2+i), 1, 8, 9, v) // a = 6 -> a = v
		// One request, right after the change: what the editor shows.
		got := b.labels("main.py")
		want := map[string]string{"8": "= 56", "9": "= 63", "3": "= 21"}[v]
		if len(got[2]) != 1 || got[2][0] != want {
			t.Fatalf("after a = %s the one inlayHint answer shows %q on line 3, want [%s]", v, got[2], want)
		}
	}
}

// TestHintPastBudgetIsPending: past the budget (0 here: answer at once)
// with the run not asked yet (the run delay is a minute), the statements
// show ⏳, never the old value as if current; the old value is in the
// tooltip as the last one.
func TestHintPastBudgetIsPending(t *testing.T) {
	b := setup(t)
	b.initializeNoRefresh(`{"ripple": {"hintWaitMs": 0, "runDelayMs": 60000}}`)
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(2) == "= 42" })
	b.replace(2, 1, 8, 9, "7")
	if got := b.label(2); got != "⏳" {
		t.Fatalf("line 3 past the budget = %q, want ⏳", got)
	}
	if tip := b.tooltip(2); !strings.Contains(tip, "last value `42`") {
		t.Errorf("tooltip %q lacks the last value", tip)
	}
}

// TestHintWaitCancelled: a waiting request answers RequestCancelled as
// soon as the client cancels it, and the server goes on.
func TestHintWaitCancelled(t *testing.T) {
	b := setup(t)
	b.initializeNoRefresh(`{"ripple": {"hintWaitMs": 30000, "runDelayMs": 60000}}`)
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(2) == "= 42" })
	b.replace(2, 1, 8, 9, "7")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.server.InlayHint(ctx, &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")},
			Range: lsproto.Range{End: lsproto.Position{Line: 100}}})
		done <- err
	}()
	// The server reads on while the request waits: a hover answers.
	if _, err := b.server.Hover(t.Context(), &lsproto.HoverParams{TextDocumentPositionParams: lsproto.TextDocumentPositionParams{
		TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}, Position: lsproto.Position{Line: 2, Character: 4}}}); err != nil {
		t.Fatalf("hover while a hint request waits: %v", err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled inlayHint request answered without an error")
	}
	b.save() // runs at once
	b.waitUntil("b = 49", func() bool { return b.label(2) == "= 49" })
}

// TestSyntaxErrorClearsBeforeTheRunEnds: the diagnostic of a syntax error
// goes as soon as the fixed text runs, while a slow statement after the
// fix still runs.
func TestSyntaxErrorClearsBeforeTheRunEnds(t *testing.T) {
	slow := "import time\ndef main():\n    a = 6\n    b = a * 7\n    time.sleep(60)\n    return b\n"
	b := setupWith(t, slow)
	b.initializeWith(`{"ripple": {"runDelayMs": 0}}`)
	b.open(slow)
	doc := b.uri("main.py")
	b.waitUntil("the sleep running", func() bool { return b.label(4) == "▶ running" })
	b.replace(2, 3, 13, 13, " +") // b = a * 7 + (a syntax error)
	b.waitUntil("the syntax error's diagnostic", func() bool {
		ds, _ := b.ed.diagnostics(doc)
		return len(ds) > 0
	})
	b.replace(3, 3, 13, 15, "") // fixed
	b.waitUntil("the diagnostic cleared", func() bool {
		ds, ok := b.ed.diagnostics(doc)
		return ok && len(ds) == 0
	})
	if got := b.label(4); got != "▶ running" {
		t.Errorf("the sleep after the fix = %q, want ▶ running: the diagnostic should clear before the run ends", got)
	}
}

// TestOneHintPerStatement: inserting and deleting a line above moves the
// statements; each line still has at most one hint, and an expression
// statement's None, a for header's and a print's show none; an augmented
// assignment shows its target's new value, of a name as of a subscript.
func TestOneHintPerStatement(t *testing.T) {
	text := "def main():\n    xs = [1, 2]\n    print(xs)\n    for x in xs:\n        xs.append(x) if x > 5 else None\n    len(xs)\n" +
		"    d = {'q': 1}\n    d['q'] += 4\n    n = 1\n    n += 4\n    return d\n"
	b := setupWith(t, text)
	b.initializeWith(`{"ripple": {"runDelayMs": 0}}`)
	b.open(text)
	b.waitUntil("the return", func() bool { return shows(b.label(10), "{'q': 5}") })
	b.insert(2, 1, 0, "    y = 1\n")
	b.waitUntil("the return after the insert", func() bool { return shows(b.label(11), "{'q': 5}") })
	if err := b.server.DidChange(t.Context(), &lsproto.DidChangeTextDocumentParams{
		TextDocument: lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}, Version: 3},
		ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangePartial{
			Range: lsproto.Range{Start: lsproto.Position{Line: 1}, End: lsproto.Position{Line: 2}}, Text: ""}},
	}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("the return after the delete", func() bool { return shows(b.label(10), "{'q': 5}") && len(b.labels("main.py")[11]) == 0 })
	got := b.labels("main.py")
	for line, ls := range got {
		if len(ls) > 1 {
			t.Errorf("line %d has %d hints: %q", line+1, len(ls), ls)
		}
	}
	for _, line := range []int{1, 2, 3, 4, 6, 8} { // own values in the code; print, for, None
		if len(got[line]) > 0 {
			t.Errorf("line %d shows %q, want no hint", line+1, got[line])
		}
	}
	if l := got[5]; len(l) != 1 || !shows(l[0], "2") {
		t.Errorf("len(xs) shows %q, want 2", l)
	}
	if l := got[7]; len(l) != 1 || !shows(l[0], "5") {
		t.Errorf("d['q'] += 4 shows %q, want the new value 5", l)
	}
	if l := got[9]; len(l) != 1 || !shows(l[0], "5") {
		t.Errorf("n += 4 shows %q, want the new value 5", l)
	}
}

// TestOutputIsInfo: the program's output is a logMessage of type Info
// (Neovim drops Log at its default level); ripple.output changes it.
func TestOutputIsInfo(t *testing.T) {
	for _, c := range []struct {
		opts string
		want lsproto.MessageType
	}{{`{}`, lsproto.MessageTypeInfo}, {`{"ripple": {"output": "log"}}`, lsproto.MessageTypeLog}} {
		b := setupWith(t, printMain)
		b.initializeWith(c.opts)
		b.waitUntil("the print", func() bool { return b.ed.logged("a is 6") > 0 })
		b.ed.mu.Lock()
		i := slices.Index(b.ed.logs, "a is 6")
		typ := b.ed.logTypes[i]
		b.ed.mu.Unlock()
		if typ != c.want {
			t.Errorf("with %s the output's logMessage type = %v, want %v", c.opts, typ, c.want)
		}
	}
	b := setupWith(t, printMain)
	_, err := b.server.Initialize(t.Context(), &lsproto.InitializeParams{InitializationOptions: lsproto.LSPAny(`{"ripple": {"output": "loud"}}`)})
	if err == nil || !strings.Contains(err.Error(), "ripple.output") {
		t.Errorf("output \"loud\": %v, want an error naming ripple.output", err)
	}
}

// TestHoverShape: the hover starts with the value, has the type, no
// internal id, and answers only on the assignment's target: on a name of
// its right-hand side another server's hover shows.
func TestHoverShape(t *testing.T) {
	b := setup(t)
	b.initializeWith(`{}`)
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(3) == "= 42" })
	hover := func(line, ch uint32) *lsproto.Hover {
		h, err := b.server.Hover(t.Context(), &lsproto.HoverParams{TextDocumentPositionParams: lsproto.TextDocumentPositionParams{
			TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}, Position: lsproto.Position{Line: line, Character: ch}}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := hover(2, 4) // the b of b = a * 7
	if h == nil {
		t.Fatal("no hover on b's target")
	}
	m := h.Contents.(*lsproto.MarkupContent).Value
	if !strings.HasPrefix(m, "```python\n42\n```") || !strings.Contains(m, "builtins.int") || strings.Contains(m, "main:main") {
		t.Errorf("hover = %q, want the value first, the type, no internal id", m)
	}
	if h := hover(2, 8); h != nil { // the a of a * 7
		t.Errorf("hover on a name of the right-hand side = %v, want none (another server's)", h.Contents)
	}
}

// TestStopClosesEntry: ripple.stop destroys the entry's context; its
// hints go and the lens is offered.
func TestStopClosesEntry(t *testing.T) {
	b := setup(t)
	b.initializeWith(`{}`)
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(3) == "= 42" })
	lenses, err := b.server.CodeLens(t.Context(), &lsproto.CodeLensParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}})
	if err != nil {
		t.Fatal(err)
	}
	var args []lsproto.LSPAny
	for _, l := range lenses {
		if l.Command.Command == "ripple.stop" {
			args = l.Command.Arguments
		}
	}
	if args == nil {
		t.Fatalf("no ripple.stop lens among %+v", lenses)
	}
	if _, err := b.server.ExecuteCommand(t.Context(), &lsproto.ExecuteCommandParams{Command: "ripple.stop", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	if n := contexts(t, b.eng); n != 0 {
		t.Errorf("%d contexts after ripple.stop, want 0", n)
	}
	b.waitUntil("no hints", func() bool { return len(b.labels("main.py")) == 0 })
	_, err = b.server.ExecuteCommand(t.Context(), &lsproto.ExecuteCommandParams{Command: "ripple.stop", Arguments: args})
	if err == nil || !strings.Contains(err.Error(), "unknown execution context") {
		t.Errorf("ripple.stop of a closed entry: %v, want unknown execution context", err)
	}
}

// TestCrashContained: an entry whose run kills the kernel pops up once;
// edits of main.py do not run it again (no more pop-ups, no more deaths);
// ▶ Run of it runs it again (one more pop-up).
func TestCrashContained(t *testing.T) {
	b := setup(t)
	if err := os.WriteFile(filepath.Join(b.dir, "crash.py"), []byte("import os\nimport main\n\n\ndef boom():\n    os._exit(3)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.initializeWith(`{"ripple": {"runDelayMs": 0}}`)
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(3) == "= 42" })
	run := func() {
		if _, err := b.server.ExecuteCommand(t.Context(), &lsproto.ExecuteCommandParams{Command: "ripple.run", Arguments: []lsproto.LSPAny{lsproto.LSPAny(`"crash:boom"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	deaths := func() int {
		b.ed.mu.Lock()
		defer b.ed.mu.Unlock()
		n := 0
		for _, m := range b.ed.shows {
			if strings.Contains(m, "crash:boom") {
				n++
			}
		}
		return n
	}
	run()
	b.waitUntil("one pop-up", func() bool { return deaths() == 1 })
	for i, v := range []string{"1", "2", "3", "4"} {
		b.replace(int32(2+i), 2, 12, 13, v) // b = a * v
		want := map[string]string{"1": "= 6", "2": "= 12", "3": "= 18", "4": "= 24"}[v]
		b.waitUntil("main's new value", func() bool { return b.label(3) == want })
	}
	if n := deaths(); n != 1 {
		t.Fatalf("%d pop-ups about crash:boom after 4 edits of main.py, want 1: %q", n, b.ed.shows)
	}
	if n := contexts(t, b.eng); n != 1 {
		t.Errorf("%d contexts, want 1 (main's; crash:boom's parked)", n)
	}
	run()
	b.waitUntil("a second pop-up after running it again", func() bool { return deaths() == 2 })
}

// TestEditorRootWins: ServeProject opens the project the editor names in
// rootUri, not the fallback (the server's working directory); a file
// outside it is told why it has no values.
func TestEditorRootWins(t *testing.T) {
	base := t.TempDir()
	proj, tmp := filepath.Join(base, "proj"), filepath.Join(base, "tmp")
	for _, d := range []string{proj, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp)
	if err := os.WriteFile(filepath.Join(proj, "main.py"), []byte(mainPy), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var opened []string
	open := func(ctx context.Context, root string) (*engine.Engine, func(), error) {
		mu.Lock()
		opened = append(opened, root)
		mu.Unlock()
		eng, err := engine.New(ctx, engine.Config{Root: root, Kernels: 1, Watch: true})
		if err != nil {
			return nil, nil, err
		}
		if err := eng.Start(ctx); err != nil {
			return nil, nil, err
		}
		return eng, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_ = eng.Stop(sctx)
		}, nil
	}
	b := &bundle{t: t, dir: proj, ed: &recorder{changed: make(chan struct{}, 1)}, served: make(chan error, 1)}
	b.connect(func(ctx context.Context, rw rwc) error {
		return lsp.ServeProject(ctx, open, base, rw, lsp.Config{ClientID: t.Name()})
	})
	root := uri.File(proj)
	//lint:ignore SA1019 rootUri alone is what the test is about (Neovim 0.7 sends it so)
	if _, err := b.server.Initialize(t.Context(), &lsproto.InitializeParams{RootURI: &root}); err != nil {
		t.Fatal(err)
	}
	if err := b.server.Initialized(t.Context(), &lsproto.InitializedParams{}); err != nil {
		t.Fatal(err)
	}
	b.open(mainPy)
	b.waitUntil("b = 42", func() bool { return b.label(3) == "= 42" })
	mu.Lock()
	if len(opened) != 1 || opened[0] != proj {
		t.Errorf("opened %q, want [%s] (the editor's rootUri, not the fallback %s)", opened, proj, base)
	}
	mu.Unlock()
	outside := uri.File(filepath.Join(base, "other.py"))
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: outside, Text: "x = 1\n"}}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("the message about other.py", func() bool { return b.ed.shown("other.py has no values: it is outside the project " + proj) })
}

// TestNotebookHasNoRunLens: a notebook opened in an editor is its JSON,
// while the engine runs its code cells as a script; a ▶ Run lens there
// would put values on the JSON's lines, so a notebook gets none (it runs
// from the page, ripple watch and ripple run).
func TestNotebookHasNoRunLens(t *testing.T) {
	b := setup(t)
	b.initialize()
	nb := `{"cells": [{"cell_type": "code", "metadata": {}, "source": ["x = 1\n"], "outputs": [], "execution_count": null}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
`
	if err := os.WriteFile(filepath.Join(b.dir, "nb.ipynb"), []byte(nb), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{
		URI: b.uri("nb.ipynb"), LanguageID: "json", Version: 1, Text: nb}}); err != nil {
		t.Fatal(err)
	}
	lenses, err := b.server.CodeLens(t.Context(), &lsproto.CodeLensParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("nb.ipynb")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lenses {
		if l.Command.Command == "ripple.run" {
			t.Errorf("notebook got a run lens %q", l.Command.Title)
		}
	}
	// The same request on main.py does offer one: the rule is the notebook's.
	lenses, err = b.server.CodeLens(t.Context(), &lsproto.CodeLensParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(lenses, func(l lsproto.CodeLens) bool { return l.Command.Command == "ripple.run" }) {
		t.Errorf("main.py got no run lens: %+v", lenses)
	}
}
