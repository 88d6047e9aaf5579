// Command lsp measures `ripple lsp` over a real stdio pipe and prints a
// table of these figures against their targets: a keystroke (textDocument/didChange of
// one trivial statement of a 1,000-statement main) until
//
//   - the server's workspace/inlayHint/refresh request, and
//   - an inlayHint request (the editor's visible range around the line)
//     answering the statement's hint with its new value
//
// (targets p50 <= 15 ms, p99 <= 50 ms). It builds ./cmd/ripple (unless
// -bin is given), starts `ripple lsp --kernels 1` on a generated project
// and drives it with go.lsp.dev/protocol's client over the process's
// stdin and stdout, as an editor does. Run it from the repository root:
//
//	go run ./bench/lsp              # -edits, -statements, -bin
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

func main() {
	bin := flag.String("bin", "", "ripple binary (default: go build ./cmd/ripple into a temp dir)")
	edits := flag.Int("edits", 300, "keystrokes to time")
	statements := flag.Int("statements", 1000, "statements of main")
	flag.Parse()
	if err := run(*bin, *edits, *statements); err != nil {
		fmt.Fprintln(os.Stderr, "bench/lsp:", err)
		os.Exit(1)
	}
}

func run(bin string, edits, statements int) error {
	tmp, err := os.MkdirTemp("", "ripple-bench-lsp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "ripple")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/ripple-run/ripple/cmd/ripple").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	dir := filepath.Join(tmp, "project")
	lines, err := writeMain(dir, statements)
	if err != nil {
		return err
	}
	refresh, hint, err := keystroke(bin, dir, lines, edits)
	if err != nil {
		return err
	}
	rows := [][3]string{
		{fmt.Sprintf("didChange -> inlayHint/refresh p50 (%d-statement main, %d edits)", statements, edits), ms(percentile(refresh, 50)), "<= 15 ms"},
		{"didChange -> inlayHint/refresh p99", ms(percentile(refresh, 99)), "<= 50 ms"},
		{"didChange -> inlayHint/refresh max", ms(percentile(refresh, 100)), ""},
		{"didChange -> hint with the new value p50", ms(percentile(hint, 50)), "<= 15 ms"},
		{"didChange -> hint with the new value p99", ms(percentile(hint, 99)), "<= 50 ms"},
		{"didChange -> hint with the new value max", ms(percentile(hint, 100)), ""},
	}
	fmt.Printf("%-72s %-12s %s\n", "ripple lsp over a stdio pipe", "measured", "target")
	for _, r := range rows {
		fmt.Printf("%-72s %-12s %s\n", r[0], r[1], r[2])
	}
	return nil
}

func writeMain(dir string, n int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lines := []string{"def main():"}
	for i := range n {
		lines = append(lines, fmt.Sprintf("    v%d = %d", i, i))
	}
	lines = append(lines, "")
	return lines, os.WriteFile(filepath.Join(dir, "main.py"), []byte(strings.Join(lines, "\n")), 0o644)
}

// editor is the client side: it answers the server's requests and
// records when refreshes and run ends arrive.
type editor struct {
	lsproto.UnimplementedClient
	refreshes chan time.Time
	runs      chan struct{}
}

func (e *editor) InlayHintRefresh(context.Context) error {
	select {
	case e.refreshes <- time.Now():
	default: // nobody waits: the benchmark reads the latest refresh anyway
	}
	return nil
}

func (e *editor) CodeLensRefresh(context.Context) error { return nil }

func (e *editor) LogMessage(_ context.Context, p *lsproto.LogMessageParams) error {
	if p.Type == lsproto.MessageTypeInfo && strings.Contains(p.Message, ": done in") {
		select {
		case e.runs <- struct{}{}:
		default:
		}
	}
	return nil
}

func (e *editor) ShowMessage(context.Context, *lsproto.ShowMessageParams) error { return nil }
func (e *editor) PublishDiagnostics(context.Context, *lsproto.PublishDiagnosticsParams) error {
	return nil
}
func (e *editor) Progress(context.Context, *lsproto.ProgressParams) error { return nil }
func (e *editor) WorkDoneProgressCreate(context.Context, *lsproto.WorkDoneProgressCreateParams) error {
	return nil
}

// pipe is the client's end of the server's stdin and stdout.
type pipe struct {
	io.Reader
	io.WriteCloser
}

func keystroke(bin, dir string, lines []string, edits int) (refresh, hint []time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "lsp", "--kernels", "1", dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	var waitOnce sync.Once
	wait := func() { waitOnce.Do(func() { _ = cmd.Wait() }) }
	defer func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	ed := &editor{refreshes: make(chan time.Time, 1), runs: make(chan struct{}, 1)}
	_, conn, server := lsproto.NewClient(ctx, ed, jsonrpc2.NewHeaderStream(pipe{stdout, stdin}))
	defer conn.Close()
	t := true
	if _, err := server.Initialize(ctx, &lsproto.InitializeParams{Capabilities: lsproto.ClientCapabilities{
		General:   &lsproto.GeneralClientCapabilities{PositionEncodings: []lsproto.PositionEncodingKind{lsproto.PositionEncodingKindUTF32}},
		Workspace: &lsproto.WorkspaceClientCapabilities{InlayHint: &lsproto.InlayHintWorkspaceClientCapabilities{RefreshSupport: &t}},
	}}); err != nil {
		return nil, nil, fmt.Errorf("initialize: %w", err)
	}
	if err := server.Initialized(ctx, &lsproto.InitializedParams{}); err != nil {
		return nil, nil, err
	}
	doc := uri.File(filepath.Join(dir, "main.py"))
	if err := server.DidOpen(ctx, &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{
		URI: doc, LanguageID: "python", Version: 1, Text: strings.Join(lines, "\n")}}); err != nil {
		return nil, nil, err
	}
	// The first run: every statement computed.
	last := len(lines) - 2
	if err := waitHint(ctx, server, ed, doc, last, fmt.Sprintf("= %d", last-1)); err != nil {
		return nil, nil, fmt.Errorf("first run: %w", err)
	}
	drainRuns(ed)

	r := rand.New(rand.NewPCG(1, 2))
	for i := range edits + 10 { // 10 warm-up edits
		k := r.IntN(len(lines) - 2)
		row := k + 1
		old := lines[row]
		value := 1_000_000 + i
		lines[row] = fmt.Sprintf("    v%d = %d", k, value)
		drainRefreshes(ed)
		start := time.Now()
		if err := server.DidChange(ctx, &lsproto.DidChangeTextDocumentParams{
			TextDocument: lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: doc}, Version: int32(i + 2)},
			ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangePartial{
				Range: lsproto.Range{Start: lsproto.Position{Line: uint32(row)}, End: lsproto.Position{Line: uint32(row), Character: uint32(len(old))}},
				Text:  lines[row]}},
		}); err != nil {
			return nil, nil, err
		}
		var first time.Time
		select {
		case first = <-ed.refreshes:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		if err := waitHint(ctx, server, ed, doc, row, fmt.Sprintf("= %d", value)); err != nil {
			return nil, nil, fmt.Errorf("edit %d (v%d = %d): %w", i, k, value, err)
		}
		got := time.Since(start)
		if i >= 10 {
			refresh = append(refresh, first.Sub(start))
			hint = append(hint, got)
		}
		select { // the run's end, so that runs do not overlap
		case <-ed.runs:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if err := server.Shutdown(ctx); err != nil {
		return nil, nil, err
	}
	_ = server.Exit(ctx)
	return refresh, hint, nil
}

// waitHint asks for the hints of the editor's visible range around row
// (50 lines) until the hint at row reads want, asking again at each
// refresh.
func waitHint(ctx context.Context, server lsproto.Server, ed *editor, doc uri.URI, row int, want string) error {
	for {
		hs, err := server.InlayHint(ctx, &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: doc},
			Range: lsproto.Range{Start: lsproto.Position{Line: uint32(max(row-25, 0))}, End: lsproto.Position{Line: uint32(row + 25)}}})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(hs, func(h lsproto.InlayHint) bool {
			l, ok := h.Label.(lsproto.String)
			return ok && int(h.Position.Line) == row && string(l) == want
		}) {
			return nil
		}
		select {
		case <-ed.refreshes:
		case <-ctx.Done():
			return errors.New("no hint " + want + " at line " + fmt.Sprint(row))
		}
	}
}

func drainRefreshes(ed *editor) {
	for {
		select {
		case <-ed.refreshes:
		default:
			return
		}
	}
}

func drainRuns(ed *editor) {
	for {
		select {
		case <-ed.runs:
		default:
			return
		}
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p/100)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
