package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
	"github.com/ripple-run/ripple/workspace"
)

// quietEditor answers the server's requests, hands on the edits it is
// asked to apply and ignores the server's notifications.
type quietEditor struct {
	lsproto.UnimplementedClient
	edits chan *lsproto.ApplyWorkspaceEditParams
}

func (e quietEditor) ApplyEdit(_ context.Context, p *lsproto.ApplyWorkspaceEditParams) (*lsproto.ApplyWorkspaceEditResult, error) {
	select {
	case e.edits <- p:
	default:
	}
	return &lsproto.ApplyWorkspaceEditResult{Applied: true}, nil
}

func (quietEditor) InlayHintRefresh(context.Context) error                        { return nil }
func (quietEditor) CodeLensRefresh(context.Context) error                         { return nil }
func (quietEditor) LogMessage(context.Context, *lsproto.LogMessageParams) error   { return nil }
func (quietEditor) ShowMessage(context.Context, *lsproto.ShowMessageParams) error { return nil }
func (quietEditor) PublishDiagnostics(context.Context, *lsproto.PublishDiagnosticsParams) error {
	return nil
}

type stdioPipe struct {
	io.Reader
	io.WriteCloser
}

var serveLine = regexp.MustCompile(`ripple: serving .+ at (ws://\S+) and the web page at (http://\S+)`)

// TestServeSharesTheEngine: `ripple lsp --serve` prints the WebSocket and
// page URLs on stderr, and a WebSocket client sees the editor's context
// (runtime/status), joins it and gets its values: one engine for both.
func TestServeSharesTheEngine(t *testing.T) {
	bin := ripple(t)
	dir := project(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "lsp", "--serve", "--kernels", "1", dir)
	cmd.Env = append(os.Environ(), "RIPPLE_TOKEN=")
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan []string, 1)
	stderrDone := make(chan struct{})
	var logged []string // written by the reader until stderrDone
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logged = append(logged, sc.Text())
			if m := serveLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1:]
			}
		}
	}()
	exited := false
	defer func() {
		if !exited {
			cancel() // kills the process: its stderr ends
			<-stderrDone
			_ = cmd.Wait()
		}
		t.Logf("ripple lsp stderr:\n%s", strings.Join(logged, "\n"))
	}()

	ed := quietEditor{edits: make(chan *lsproto.ApplyWorkspaceEditParams, 4)}
	_, conn, server := lsproto.NewClient(ctx, ed, jsonrpc2.NewHeaderStream(stdioPipe{stdout, stdin}))
	defer conn.Close()
	yes := true
	if _, err := server.Initialize(ctx, &lsproto.InitializeParams{Capabilities: lsproto.ClientCapabilities{
		Workspace: &lsproto.WorkspaceClientCapabilities{ApplyEdit: &yes}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := server.Initialized(ctx, &lsproto.InitializedParams{}); err != nil {
		t.Fatal(err)
	}
	var u []string
	select {
	case u = <-urls:
	case <-ctx.Done():
		t.Fatal("no URL line on stderr")
	}
	if !strings.Contains(u[1], "token=") {
		t.Errorf("page URL %s has no token", u[1])
	}

	ws, _, err := servertest.Dial(ctx, u[0], nil)
	if err != nil {
		t.Fatalf("dial %s: %v", u[0], err)
	}
	defer ws.Close()
	if err := ws.Call(ctx, protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "browser"}, nil); err != nil {
		t.Fatal(err)
	}
	// The editor's main:main context is on the engine the WebSocket serves.
	// (The context is created at initialized, which is a notification:
	// ask until it is there.)
	deadline, _ := ctx.Deadline()
	var shared protocol.ContextID
	if !testenv.PollEvery(deadline, 20*time.Millisecond, func() bool {
		var st protocol.RuntimeStatusResult
		if err := ws.Call(ctx, protocol.MethodRuntimeStatus, struct{}{}, &st); err != nil {
			t.Fatal(err)
		}
		for _, k := range st.Kernels {
			if len(k.Contexts) > 0 {
				shared = k.Contexts[0]
			}
		}
		return shared != ""
	}) {
		t.Fatal("no context in runtime/status")
	}
	if err := ws.Call(ctx, protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: shared}, nil); err != nil {
		t.Fatalf("join the editor's context: %v", err)
	}
	if err := ws.Call(ctx, protocol.MethodRecompute, protocol.RecomputeParams{ContextID: shared, InvalidatedExpressions: protocol.InvalidateAll()}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WaitFor(ctx, func(m servertest.Message) bool {
		if m.Method != protocol.NotifyExpressionUpdates {
			return false
		}
		var p protocol.ExpressionUpdatesParams
		if json.Unmarshal(m.Params, &p) != nil || p.ContextID != shared {
			return false
		}
		for _, up := range p.Updates {
			if up.ExpressionID == "main:main/d" && up.Payload.Type == protocol.PayloadValue && up.Payload.Preview == "24" {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the browser's view of the editor's context: %v", err)
	}
	// And the editor has the same values.
	doc := uri.File(filepath.Join(dir, "main.py"))
	text, _ := os.ReadFile(filepath.Join(dir, "main.py"))
	if err := server.DidOpen(ctx, &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{URI: doc, Version: 1, Text: string(text)}}); err != nil {
		t.Fatal(err)
	}
	// (The recompute may still be running: ask until the run is over.)
	var hs []lsproto.InlayHint
	if !testenv.PollEvery(deadline, 20*time.Millisecond, func() bool {
		var err error
		hs, err = server.InlayHint(ctx, &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: doc}, Range: lsproto.Range{End: lsproto.Position{Line: 100}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if l, _ := h.Label.(lsproto.String); h.Position.Line == 7 && strings.HasSuffix(string(l), " 24") {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the editor's hints lack d = 24: %+v", hs)
	}

	// An edit in the page (another client of the same buffer) reaches the
	// editor as workspace/applyEdit: d = b * 2 -> d = b * 5.
	var of protocol.OpenFileResult
	if err := ws.Call(ctx, protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &of); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(of.Content, "\n")
	lines[7] = strings.Replace(lines[7], "* 2", "* 5", 1)
	newText := strings.Join(lines, "\n")
	if err := ws.Call(ctx, protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path: "main.py", OldVersion: of.CurrentVersion, NewVersion: string(workspace.VersionOf(newText)),
		Edits: []protocol.TextEdit{{Range: protocol.Range{Start: protocol.Position{Line: 7, Character: 12}, End: protocol.Position{Line: 7, Character: 13}}, Text: "5"}},
	}}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-ed.edits:
		tes := p.Edit.Changes[doc]
		if len(tes) != 1 || tes[0].NewText != "5" || tes[0].Range.Start != (lsproto.Position{Line: 7, Character: 12}) || tes[0].Range.End != (lsproto.Position{Line: 7, Character: 13}) {
			t.Fatalf("workspace/applyEdit from the page's edit: %+v, want 7:12-7:13 -> \"5\"", p.Edit.Changes)
		}
	case <-ctx.Done():
		t.Fatal("the page's edit did not reach the editor")
	}

	if err := server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_ = server.Exit(ctx)
	<-stderrDone // all of stderr read before Wait (os/exec's rule)
	exited = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ripple lsp --serve: %v", err)
	}
}
