package lsp_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/lsp"
)

const mainPy = "def main():\n    a = 6\n    b = a * 7\n    return b\n"

// bundle is a running engine on a temp project, served to one in-process
// LSP client over a pipe.
type bundle struct {
	t      *testing.T
	dir    string
	eng    *engine.Engine
	server lsproto.Server
	conn   jsonrpc2.Conn
	ed     *recorder
	served chan error // Serve's result
	toSrv  io.Closer  // the client's write end: closing it is end of input
}

// setup starts an engine on a project whose main.py is mainPy and serves
// it to an LSP client. The kernels get a temp dir of their own (TMPDIR): the
// project, under the system temp dir as every t.TempDir() is, would
// otherwise be all temp, where an automatic run's writes are allowed
// (PROTOCOL.md 8.2).
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupWith(t, mainPy)
}

// setupWith is setup with main.py holding text (written before the engine
// starts: a write under a running engine is a change on disk, whose
// explicit run could join the test's own).
func setupWith(t *testing.T, text string) *bundle {
	t.Helper()
	base := t.TempDir()
	dir, tmp := filepath.Join(base, "project"), filepath.Join(base, "tmp")
	for _, d := range []string{dir, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("TMPDIR", tmp) // the kernels inherit it
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	eng, err := engine.New(ctx, engine.Config{Root: dir, Kernels: 1, Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = eng.Stop(sctx)
	})
	b := &bundle{t: t, dir: dir, eng: eng, ed: &recorder{changed: make(chan struct{}, 1)}, served: make(chan error, 1)}
	b.connect(func(ctx context.Context, rw rwc) error {
		return lsp.Serve(ctx, eng, rw, lsp.Config{ClientID: t.Name()})
	})
	return b
}

// connect runs serve on one end of two pipes and connects the bundle's
// client to the other.
func (b *bundle) connect(serve func(context.Context, rwc) error) {
	t := b.t
	ctx := t.Context()
	// Two pipes: client -> server and server -> client.
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	b.toSrv = cw
	go func() {
		b.served <- serve(context.WithoutCancel(ctx), rwc{sr, sw})
	}()
	_, b.conn, b.server = lsproto.NewClient(ctx, b.ed, jsonrpc2.NewHeaderStream(rwc{cr, cw}))
	t.Cleanup(func() {
		_ = cw.Close()
		_ = b.conn.Close()
		select {
		case <-b.served:
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return after the end of input")
		}
	})
}

type rwc struct {
	io.ReadCloser
	io.WriteCloser
}

func (p rwc) Close() error { return errors.Join(p.ReadCloser.Close(), p.WriteCloser.Close()) }

func (b *bundle) initialize(encodings ...lsproto.PositionEncodingKind) *lsproto.InitializeResult {
	b.t.Helper()
	t := true
	res, err := b.server.Initialize(b.t.Context(), &lsproto.InitializeParams{Capabilities: lsproto.ClientCapabilities{
		General:   &lsproto.GeneralClientCapabilities{PositionEncodings: encodings},
		Workspace: &lsproto.WorkspaceClientCapabilities{InlayHint: &lsproto.InlayHintWorkspaceClientCapabilities{RefreshSupport: &t}},
	}})
	if err != nil {
		b.t.Fatalf("initialize: %v", err)
	}
	if err := b.server.Initialized(b.t.Context(), &lsproto.InitializedParams{}); err != nil {
		b.t.Fatal(err)
	}
	return res
}

func (b *bundle) uri(rel string) uri.URI { return uri.File(filepath.Join(b.dir, rel)) }

// labels returns line -> hint labels of a document.
func (b *bundle) labels(rel string) map[int][]string {
	b.t.Helper()
	hs, err := b.server.InlayHint(b.t.Context(), &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri(rel)},
		Range: lsproto.Range{End: lsproto.Position{Line: 1000}}})
	if err != nil {
		b.t.Fatalf("inlayHint: %v", err)
	}
	m := make(map[int][]string)
	for _, h := range hs {
		l, _ := h.Label.(lsproto.String)
		m[int(h.Position.Line)] = append(m[int(h.Position.Line)], string(l))
	}
	return m
}

// waitUntil re-checks cond each time the client hears from the server,
// until it holds or the test's wait deadline (testenv.Deadline) passes.
// Not testenv.Eventually: a message from the server wakes it at once.
func (b *bundle) waitUntil(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.NewTimer(time.Until(testenv.Deadline(b.t)))
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond) // hints asked without a refresh (the first run may end before didOpen)
	defer tick.Stop()
	for !cond() {
		select {
		case <-b.ed.changed:
		case <-tick.C:
		case <-deadline.C:
			b.ed.mu.Lock()
			logs, shows := b.ed.logs, b.ed.shows
			b.ed.mu.Unlock()
			b.t.Fatalf("timed out waiting for %s; main.py's hints: %v; logs: %q; messages: %q", what, b.labels("main.py"), logs, shows)
		}
	}
}

// recorder is the editor: it records what the server sends.
type recorder struct {
	lsproto.UnimplementedClient
	changed chan struct{}

	mu        sync.Mutex
	diags     map[uri.URI][]lsproto.Diagnostic
	logs      []string
	logTypes  []lsproto.MessageType // of each of logs
	shows     []string
	refreshes int
}

func (r *recorder) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) InlayHintRefresh(context.Context) error {
	r.mu.Lock()
	r.refreshes++
	r.mu.Unlock()
	r.poke()
	return nil
}

func (r *recorder) LogMessage(_ context.Context, p *lsproto.LogMessageParams) error {
	r.mu.Lock()
	r.logs = append(r.logs, p.Message)
	r.logTypes = append(r.logTypes, p.Type)
	r.mu.Unlock()
	r.poke()
	return nil
}

func (r *recorder) PublishDiagnostics(_ context.Context, p *lsproto.PublishDiagnosticsParams) error {
	r.mu.Lock()
	if r.diags == nil {
		r.diags = make(map[uri.URI][]lsproto.Diagnostic)
	}
	r.diags[p.URI] = p.Diagnostics
	r.mu.Unlock()
	r.poke()
	return nil
}

func (r *recorder) ShowMessage(_ context.Context, p *lsproto.ShowMessageParams) error {
	r.mu.Lock()
	r.shows = append(r.shows, p.Message)
	r.mu.Unlock()
	r.poke()
	return nil
}

func (r *recorder) shown(substr string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.shows, func(m string) bool { return strings.Contains(m, substr) })
}

func (r *recorder) CodeLensRefresh(context.Context) error { return nil }

func (r *recorder) diagnostics(u uri.URI) ([]lsproto.Diagnostic, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.diags[u]
	return d, ok
}

func TestRequestBeforeInitialize(t *testing.T) {
	b := setup(t)
	_, err := b.server.InlayHint(t.Context(), &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}})
	var je *jsonrpc2.Error
	if !errors.As(err, &je) || je.Code != jsonrpc2.ServerNotInitialized || !strings.Contains(je.Message, "not initialized") {
		t.Fatalf("inlayHint before initialize: %v, want ServerNotInitialized", err)
	}
}

// TestEditsRunUnsavedAndSaveWrites: the editor's unsaved text is what
// runs and the file on disk is untouched until didSave, which writes what
// the editor has; the default encoding is utf-16.
func TestEditsRunUnsavedAndSaveWrites(t *testing.T) {
	b := setup(t)
	res := b.initialize() // no encodings offered
	if res.Capabilities.PositionEncoding != lsproto.PositionEncodingKindUTF16 {
		t.Errorf("positionEncoding = %q, want utf-16", res.Capabilities.PositionEncoding)
	}
	doc := b.uri("main.py")
	// The editor's text differs from the disk's from the start.
	text := strings.Replace(mainPy, "a * 7", "a * 2", 1)
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{
		URI: doc, LanguageID: "python", Version: 1, Text: text}}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("b = 12 from the editor's text", func() bool { return slices.Contains(b.labels("main.py")[2], "= 12") })
	// An incremental change: 2 -> 5.
	if err := b.server.DidChange(t.Context(), &lsproto.DidChangeTextDocumentParams{
		TextDocument: lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: doc}, Version: 2},
		ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangePartial{
			Range: lsproto.Range{Start: lsproto.Position{Line: 2, Character: 12}, End: lsproto.Position{Line: 2, Character: 13}}, Text: "5"}},
	}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("b = 30", func() bool { return slices.Contains(b.labels("main.py")[2], "= 30") })
	if got, _ := os.ReadFile(filepath.Join(b.dir, "main.py")); string(got) != mainPy {
		t.Fatalf("main.py on disk changed before save:\n%s", got)
	}
	if err := b.server.DidSave(t.Context(), &lsproto.DidSaveTextDocumentParams{TextDocument: lsproto.TextDocumentIdentifier{URI: doc}}); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(mainPy, "a * 7", "a * 5", 1)
	b.waitUntil("main.py saved with the editor's text", func() bool { // didSave is a notification
		got, _ := os.ReadFile(filepath.Join(b.dir, "main.py"))
		return string(got) == want
	})
	// A document outside the project is ignored, not an error, and
	// changes to a document never opened are refused by name.
	outside := uri.File(filepath.Join(t.TempDir(), "other.py"))
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: outside, Text: "x = 1\n"}}); err != nil {
		t.Fatalf("didOpen outside the root: %v", err)
	}
	hs, err := b.server.InlayHint(t.Context(), &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: outside}})
	if err != nil || len(hs) != 0 {
		t.Fatalf("hints outside the root: %v, %v; want none", hs, err)
	}
}

// TestPanicDiagnosticClears: a statement that raises becomes an error
// diagnostic at its line; fixing it publishes an empty list.
func TestPanicDiagnosticClears(t *testing.T) {
	b := setup(t)
	b.initialize(lsproto.PositionEncodingKindUTF32)
	doc := b.uri("main.py")
	text := strings.Replace(mainPy, "a * 7", "a // 0", 1)
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: doc, Version: 1, Text: text}}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("the ZeroDivisionError diagnostic", func() bool {
		ds, _ := b.ed.diagnostics(doc)
		return slices.ContainsFunc(ds, func(d lsproto.Diagnostic) bool {
			m, _ := d.Message.(lsproto.String)
			return d.Range.Start.Line == 2 && strings.Contains(string(m), "ZeroDivisionError")
		})
	})
	if err := b.server.DidChange(t.Context(), &lsproto.DidChangeTextDocumentParams{
		TextDocument:   lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: doc}, Version: 2},
		ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangeWholeDocument{Text: mainPy}},
	}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("the diagnostics to clear", func() bool {
		ds, ok := b.ed.diagnostics(doc)
		return ok && len(ds) == 0
	})
	b.waitUntil("b = 42", func() bool { return slices.Contains(b.labels("main.py")[2], "= 42") })
}

// TestSupersededRunsDiagnosticIsReplaced: an edit lands while a run that
// raised is still going; the statement raises something else in the new
// run. Only the new error is shown once the new run ends: the superseded
// run's is not carried into it.
func TestSupersededRunsDiagnosticIsReplaced(t *testing.T) {
	b := setup(t)
	b.initialize(lsproto.PositionEncodingKindUTF32)
	doc := b.uri("main.py")
	slow := "import time\n\n\ndef main():\n    a = 6\n    b = a // 0\n    time.sleep(60)\n    return a\n"
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: doc, Version: 1, Text: slow}}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("the ZeroDivisionError diagnostic while the run sleeps", func() bool {
		ds, _ := b.ed.diagnostics(doc)
		return len(ds) == 1 && strings.Contains(diagnosticMessage(ds[0]), "ZeroDivisionError")
	})
	fixed := strings.Replace(strings.Replace(slow, "a // 0", "a * nosuch", 1), "    time.sleep(60)\n", "", 1)
	if err := b.server.DidChange(t.Context(), &lsproto.DidChangeTextDocumentParams{
		TextDocument:   lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: doc}, Version: 2},
		ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangeWholeDocument{Text: fixed}},
	}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("the NameError alone, at b's line", func() bool {
		ds, _ := b.ed.diagnostics(doc)
		return len(ds) == 1 && ds[0].Range.Start.Line == 5 && strings.Contains(diagnosticMessage(ds[0]), "NameError")
	})
}

func diagnosticMessage(d lsproto.Diagnostic) string {
	m, _ := d.Message.(lsproto.String)
	return string(m)
}

// TestShutdownExitDestroysContexts: after shutdown and exit Serve returns
// nil and the session's contexts are gone from the engine.
func TestShutdownExitDestroysContexts(t *testing.T) {
	b := setup(t)
	b.initialize()
	b.waitUntil("main's context to exist", func() bool { return contexts(t, b.eng) == 1 })
	if err := b.server.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.server.Exit(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.served:
		b.served <- err // for the cleanup
		if err != nil {
			t.Fatalf("Serve after shutdown and exit: %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after exit")
	}
	if n := contexts(t, b.eng); n != 0 {
		t.Fatalf("%d contexts left after exit, want 0", n)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	b := setup(t)
	b.initialize()
	if err := b.server.Exit(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.served:
		b.served <- err
		if !errors.Is(err, lsp.ErrExitWithoutShutdown) {
			t.Fatalf("Serve after exit without shutdown: %v, want ErrExitWithoutShutdown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after exit")
	}
}

// TestEndOfInput: the editor going away (its pipe closed) ends Serve
// cleanly.
func TestEndOfInput(t *testing.T) {
	b := setup(t)
	b.initialize()
	_ = b.toSrv.Close()
	select {
	case err := <-b.served:
		b.served <- err
		if err != nil {
			t.Fatalf("Serve at the end of input: %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return at the end of input")
	}
}

func contexts(t *testing.T, eng *engine.Engine) int {
	t.Helper()
	st, err := eng.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range st.Kernels {
		n += len(k.Contexts)
	}
	return n
}

// TestMessagesInWireOrder: a burst of didChange notifications followed by
// a request is handled in order: when the request's answer arrives, the
// buffer holds every change, each applied on the one before.
func TestMessagesInWireOrder(t *testing.T) {
	b := setup(t)
	b.initialize(lsproto.PositionEncodingKindUTF32)
	doc := b.uri("main.py")
	text := mainPy + "# "
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: doc, Version: 1, Text: text}}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		ch := string(rune('a' + i%26))
		if err := b.server.DidChange(t.Context(), &lsproto.DidChangeTextDocumentParams{
			TextDocument: lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: doc}, Version: int32(i + 2)},
			ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangePartial{
				Range: lsproto.Range{Start: lsproto.Position{Line: 4, Character: uint32(2 + i)}, End: lsproto.Position{Line: 4, Character: uint32(2 + i)}}, Text: ch}},
		}); err != nil {
			t.Fatal(err)
		}
		text += ch
	}
	if _, err := b.server.InlayHint(t.Context(), &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: doc}}); err != nil {
		t.Fatal(err)
	}
	res, err := b.eng.OpenFile(t.Context(), t.Name(), "main.py") // the session's buffer (same client id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != text {
		t.Fatalf("buffer after 40 changes:\n%q\nwant:\n%q", res.Content, text)
	}
}

// TestBadChangeIsRefusedByName: a change the server cannot apply (a line
// past the end, a document never opened) is reported to the editor naming
// the file and the place; nothing is applied, the file on disk is
// untouched and the server keeps serving.
func TestBadChangeIsRefusedByName(t *testing.T) {
	b := setup(t)
	b.initialize(lsproto.PositionEncodingKindUTF32)
	doc := b.uri("main.py")
	if err := b.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: doc, Version: 1, Text: mainPy}}); err != nil {
		t.Fatal(err)
	}
	change := func(u uri.URI, line uint32) {
		t.Helper()
		if err := b.server.DidChange(t.Context(), &lsproto.DidChangeTextDocumentParams{
			TextDocument: lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: u}, Version: 2},
			ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangePartial{
				Range: lsproto.Range{Start: lsproto.Position{Line: line}, End: lsproto.Position{Line: line}}, Text: "x"}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	change(doc, 99)
	b.waitUntil("the refusal naming main.py and line 99", func() bool { return b.ed.shown("main.py: change 0") && b.ed.shown("line 99") })
	other := b.uri("other.py")
	change(other, 0)
	b.waitUntil("the refusal naming other.py", func() bool { return b.ed.shown("document not open") && b.ed.shown("other.py") })
	b.waitUntil("b = 42 still served", func() bool { return slices.Contains(b.labels("main.py")[2], "= 42") })
	res, err := b.eng.OpenFile(t.Context(), t.Name(), "main.py")
	if err != nil || res.Content != mainPy {
		t.Fatalf("buffer after refused changes: %q, %v; want it unchanged", res.Content, err)
	}
	if got, _ := os.ReadFile(filepath.Join(b.dir, "main.py")); string(got) != mainPy {
		t.Fatalf("main.py on disk changed: %q", got)
	}
}
