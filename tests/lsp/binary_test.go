package lsp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/internal/testenv"
)

// logEditor records the server's log messages.
type logEditor struct {
	quietEditor
	mu   sync.Mutex
	logs []string
}

func (e *logEditor) LogMessage(_ context.Context, p *lsproto.LogMessageParams) error {
	e.mu.Lock()
	e.logs = append(e.logs, p.Message)
	e.mu.Unlock()
	return nil
}

// logged reports whether the output logged holds s (a print may come in
// more than one message).
func (e *logEditor) logged(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Contains(strings.Join(e.logs, "\n"), s)
}

// binSession is `ripple lsp` started with no PROJECT_DIR in cwd, driven
// by an in-process LSP client that names root as its workspace.
type binSession struct {
	cmd    *exec.Cmd
	ed     *logEditor
	server lsproto.Server
	conn   jsonrpc2.Conn
}

func startLSP(t *testing.T, bin, cwd, root string) *binSession {
	t.Helper()
	ctx := t.Context()
	cmd := exec.CommandContext(ctx, bin, "lsp")
	cmd.Dir = cwd
	cmd.Env = kernelTemp(t)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 10 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &binSession{cmd: cmd, ed: &logEditor{}}
	_, s.conn, s.server = lsproto.NewClient(ctx, s.ed, jsonrpc2.NewHeaderStream(stdioPipe{stdout, stdin}))
	t.Cleanup(func() { _ = s.conn.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	u := uri.File(root)
	if _, err := s.server.Initialize(ctx, &lsproto.InitializeParams{
		WorkspaceFoldersInitializeParams: lsproto.WorkspaceFoldersInitializeParams{
			WorkspaceFolders: lsproto.NewNullable([]lsproto.WorkspaceFolder{{URI: u, Name: "proj"}})}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := s.server.Initialized(ctx, &lsproto.InitializedParams{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// hint returns the first hint label on a line of a file ("" for none).
func (s *binSession) hint(t *testing.T, file string, line uint32) string {
	t.Helper()
	hs, err := s.server.InlayHint(t.Context(), &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: uri.File(file)},
		Range: lsproto.Range{End: lsproto.Position{Line: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Position.Line == line {
			l, _ := h.Label.(lsproto.String)
			return string(l)
		}
	}
	return ""
}

// stop shuts the server down and waits for it to exit.
func (s *binSession) stop(t *testing.T) {
	t.Helper()
	if err := s.server.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	_ = s.server.Exit(t.Context())
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("ripple lsp after exit: %v", err)
	}
}

// kernels counts the kernel processes below pid (a process started by any
// of its threads is listed under that thread).
func kernels(pid int) int {
	n := 0
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, task := range tasks {
		kids, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(kids)) {
			c, _ := strconv.Atoi(f)
			argv, _ := os.ReadFile("/proc/" + f + "/cmdline")
			if strings.Contains(string(argv), "ripple_kernel") && strings.Contains(string(argv), "\x00kernel\x00") {
				n++
			}
			n += kernels(c)
		}
	}
	return n
}

const journalMain = "def noisy(v):\n    print(f'computing {v}')\n    return v * 7\n\n\ndef main():\n    b = noisy(6)\n    return b\n"

// TestBinaryRootKernelsJournal: `cd parent && ripple lsp` with the
// editor's workspace folder parent/proj serves proj (not the working
// directory); it runs one kernel plus a spare; it keeps the value journal,
// so the editor's restart shows the values without computing them again.
func TestBinaryRootKernelsJournal(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		testenv.NeedOrSkip(t, "%s counts kernels in /proc: %v", t.Name(), err)
	}
	bin := ripple(t)
	parent := t.TempDir()
	proj := filepath.Join(parent, "proj")
	if err := os.Mkdir(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(proj, "main.py")
	if err := os.WriteFile(main, []byte(journalMain), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := testenv.Deadline(t)
	s := startLSP(t, bin, parent, proj)
	if !testenv.PollEvery(deadline, 50*time.Millisecond, func() bool { return s.hint(t, main, 6) == "= 42" }) {
		t.Fatalf("no values for proj/main.py: the project is not the editor's folder (hint %q)", s.hint(t, main, 6))
	}
	if !testenv.PollEvery(deadline, 50*time.Millisecond, func() bool { return s.ed.logged("computing 6") }) {
		t.Fatalf("the first run's output was not logged: %q", s.ed.logs)
	}
	// The spare comes a second after the start: wait for it, then the
	// count is what the editor window costs.
	testenv.PollEvery(deadline, 50*time.Millisecond, func() bool { return kernels(s.cmd.Process.Pid) >= 2 })
	// An edit's run later (the spare, started a second after the
	// kernels, is up by then): still the kernel and its spare.
	if err := s.server.DidOpen(t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{
		URI: uri.File(main), LanguageID: "python", Version: 1, Text: strings.Replace(journalMain, "noisy(6)", "noisy(5)", 1)}}); err != nil {
		t.Fatal(err)
	}
	if !testenv.PollEvery(deadline, 50*time.Millisecond, func() bool { return s.hint(t, main, 6) == "= 35" }) {
		t.Fatalf("the editor's text did not run (hint %q)", s.hint(t, main, 6))
	}
	if n := kernels(s.cmd.Process.Pid); n != 2 {
		t.Errorf("%d kernel processes, want 2 (one kernel and a spare)", n)
	}
	if err := s.server.DidClose(t.Context(), &lsproto.DidCloseTextDocumentParams{TextDocument: lsproto.TextDocumentIdentifier{URI: uri.File(main)}}); err != nil {
		t.Fatal(err)
	}
	if !testenv.PollEvery(deadline, 50*time.Millisecond, func() bool { return s.hint(t, main, 6) == "= 42" }) {
		t.Fatalf("closing without saving did not bring the disk's text back (hint %q)", s.hint(t, main, 6))
	}
	s.stop(t)
	if st, err := os.Stat(filepath.Join(proj, ".ripple", durable.ValuesFileName)); err != nil || st.Size() == 0 {
		t.Fatalf("no value journal in proj/.ripple: %v", err)
	}
	// The editor restarts: the value is there, not computed again.
	s = startLSP(t, bin, parent, proj)
	if !testenv.PollEvery(deadline, 50*time.Millisecond, func() bool { return strings.HasSuffix(s.hint(t, main, 6), " 42") }) {
		t.Fatalf("no values after the restart (hint %q)", s.hint(t, main, 6))
	}
	if h := s.hint(t, main, 6); h != "≡ 42" {
		t.Errorf("hint after the restart %q, want \"≡ 42\" (taken from the journal)", h)
	}
	// What computed it comes with it (PROTOCOL.md 8.3): kept for the
	// hover, not logged as if the program printed it now.
	if s.ed.logged("computing 6") {
		t.Error("the restart logged b's output again: computed again, or its replayed output logged")
	}
	h, err := s.server.Hover(t.Context(), &lsproto.HoverParams{TextDocumentPositionParams: lsproto.TextDocumentPositionParams{
		TextDocument: lsproto.TextDocumentIdentifier{URI: uri.File(main)}, Position: lsproto.Position{Line: 6, Character: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if h == nil || !strings.Contains(h.Contents.(*lsproto.MarkupContent).Value, "computing 6") {
		t.Errorf("hover on b after the restart does not show what it printed: %+v", h)
	}
	s.stop(t)
}
