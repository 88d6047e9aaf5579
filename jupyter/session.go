package jupyter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// SessionConfig configures a Session.
type SessionConfig struct {
	// StateDir holds the notebook's script, its state file and its value
	// journal; it is the engine's project root. Required.
	StateDir string
	// WorkDir is the kernel's working directory (the notebook's
	// directory, where Jupyter starts the kernel); "" = the process's.
	WorkDir string
	// Python and Kernels are ripple's --python and --kernels.
	Python  string
	Kernels int
	Version string // ripple's version, for kernel_info
	Logger  *slog.Logger
}

// StateDirFor is the state directory of a kernel started with a
// connection file: one per kernel id (a restart reuses the connection
// file, so it finds its journal), under the user's cache directory.
func StateDirFor(connectionFile string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	name := strings.TrimSuffix(filepath.Base(connectionFile), ".json")
	if name == "" || name == "." {
		sum := sha256.Sum256([]byte(connectionFile))
		name = hex.EncodeToString(sum[:8])
	}
	return filepath.Join(base, "ripple", "jupyter", name), nil
}

// Session is the ripple side of a Jupyter kernel: an engine with one
// context whose stack is the notebook's script (cells.go). It implements
// Backend. Start and Stop own the engine, the stdin socket's goroutine
// and the restore run.
//
// Invariants:
//   - state, history of a run (runState) and the script file are touched
//     only by the shell goroutine (Execute) and by Start before serving.
//   - notes (the engine's notifications) is filled by the engine's
//     goroutines under notesMu and drained by Execute; the engine never
//     waits on it.
//   - current (the Output of the running cell, for input()) is guarded by
//     curMu.
type Session struct {
	cfg    SessionConfig
	log    *slog.Logger
	eng    *engine.Engine
	ctxID  protocol.ContextID
	client *notes

	state   notebookState
	lastSrc string // the script last written

	// restore: what the start's run brought back (ids) or ran again.
	restored, reran []string
	restoreErr      string

	curMu   sync.Mutex
	current Output

	stdin *stdinServer
}

const clientID = "jupyter"

// NewSession makes a session; Start starts its engine.
func NewSession(cfg SessionConfig) *Session {
	if cfg.Kernels <= 0 {
		cfg.Kernels = 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Session{cfg: cfg, log: log, client: newNotes()}
}

// Start starts the engine, creates the notebook's context and, when the
// state directory holds cells of an earlier kernel (a restart), runs
// them: values come back from the journal, nothing is shown.
func (s *Session) Start(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("jupyter: state directory: %w", err)
	}
	st, err := loadState(s.cfg.StateDir)
	if err != nil {
		s.log.Warn("jupyter: state file ignored", "err", err)
	}
	s.state = st
	script, _ := s.state.script()
	if err := writeAtomic(filepath.Join(s.cfg.StateDir, cellsFile), []byte(script)); err != nil {
		return fmt.Errorf("jupyter: %w", err)
	}
	s.lastSrc = script
	s.stdin, err = startStdin(s.cfg.StateDir, s.input)
	if err != nil {
		return err
	}
	workDir := s.cfg.WorkDir
	if workDir == "" {
		workDir, _ = os.Getwd()
	}
	e, err := engine.New(ctx, engine.Config{
		Root: s.cfg.StateDir, Python: s.cfg.Python, Kernels: s.cfg.Kernels, Logger: s.log,
		ValueJournal:  filepath.Join(s.cfg.StateDir, "values.db"),
		KernelEnv:     []string{"RIPPLE_JUPYTER_CWD=" + workDir, "RIPPLE_JUPYTER_STDIN=" + s.stdin.path},
		KernelPreload: []string{"ripple_kernel.jupyter_boot"},
	})
	if err != nil {
		s.stdin.stop()
		return err
	}
	if err := e.Start(ctx); err != nil {
		s.stdin.stop()
		return err
	}
	s.eng = e
	if _, err := e.Connect(ctx, clientID, s.client); err != nil {
		return s.failStart(ctx, err)
	}
	res, err := e.CreateContext(ctx, clientID, protocol.CreateContextParams{ContextID: "notebook"})
	if err != nil {
		return s.failStart(ctx, err)
	}
	s.ctxID = res.ContextID
	mark := s.client.mark()
	if err := e.Push(ctx, clientID, protocol.PushParams{ContextID: s.ctxID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: cellsModule, Name: "__main__"})}); err != nil {
		return s.failStart(ctx, err)
	}
	s.restoreRun(ctx, mark, len(s.state.Slots) > 0)
	return nil
}

func (s *Session) failStart(ctx context.Context, err error) error {
	s.eng.Stop(ctx)
	s.stdin.stop()
	return err
}

// restoreRun waits for the push's run and notes which statements came
// back from the journal (fromCache) and which ran again.
func (s *Session) restoreRun(ctx context.Context, mark int, had bool) {
	r := newRun(s, nil, -1, nil)
	r.wait(ctx, mark)
	if !had {
		return
	}
	for id, u := range r.last {
		if u.Payload.Type != protocol.PayloadValue {
			continue
		}
		if r.computed[id] {
			s.reran = append(s.reran, id)
		} else {
			s.restored = append(s.restored, id)
		}
	}
	if r.failed != nil {
		s.restoreErr = r.failed.Message
	}
}

// Stop stops the engine (its kernels write what the journal lacks) and
// the stdin socket.
func (s *Session) Stop(ctx context.Context) error {
	var err error
	if s.eng != nil {
		err = s.eng.Stop(ctx)
	}
	if s.stdin != nil {
		s.stdin.stop()
	}
	return err
}

// Info implements Backend.
func (s *Session) Info() KernelInfo {
	py := s.eng.Python()
	version := strings.Fields(py.Version + " ")[0]
	return KernelInfo{
		Version: s.cfg.Version,
		Banner:  "ripple " + s.cfg.Version + ": Python " + py.Version + " with per-statement caching and a value journal\n",
		LanguageInfo: map[string]any{
			"name": "python", "version": version, "mimetype": "text/x-python", "file_extension": ".py",
			"pygments_lexer": "ipython3", "codemirror_mode": map[string]any{"name": "ipython", "version": 3},
			"nbconvert_exporter": "python",
		},
	}
}

// Complete implements Backend (engine.Complete in the notebook's frame).
func (s *Session) Complete(ctx context.Context, code string, cursor int) (Completions, error) {
	c, err := s.eng.Complete(ctx, s.ctxID, code, cursor)
	if err != nil {
		return Completions{}, err
	}
	out := Completions{CursorStart: c.CursorStart, CursorEnd: c.CursorEnd, Matches: []string{}}
	for _, m := range c.Matches {
		out.Matches = append(out.Matches, m.Text)
		t := map[string]any{"start": c.CursorStart, "end": c.CursorEnd, "text": m.Text, "type": m.Type}
		if m.Signature != "" {
			t["signature"] = m.Signature
		}
		out.Types = append(out.Types, t)
	}
	return out, nil
}

// Inspect implements Backend.
func (s *Session) Inspect(ctx context.Context, code string, cursor, detail int) (Inspection, error) {
	in, err := s.eng.Inspect(ctx, s.ctxID, code, cursor, detail)
	if err != nil {
		return Inspection{}, err
	}
	return Inspection{Found: in.Found, Text: in.Text}, nil
}

// IsComplete implements Backend: IPython's check (or codeop) in the kernel;
// "unknown" while the kernel runs a cell.
func (s *Session) IsComplete(ctx context.Context, code string) (string, string) {
	raw, err := s.eng.KernelCall(ctx, s.ctxID, "jupyterCell", map[string]any{"code": code, "mode": "isComplete"})
	if err != nil {
		return "unknown", ""
	}
	var v struct {
		Status string `json:"status"`
		Indent string `json:"indent"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Status == "" {
		return "unknown", ""
	}
	return v.Status, v.Indent
}

// Interrupt implements Backend: the running cell's run ends interrupted;
// the kernel and the values computed so far stay.
func (s *Session) Interrupt() {
	if s.eng == nil {
		return
	}
	if err := s.eng.Interrupt(context.Background(), clientID, s.ctxID); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Info("jupyter: interrupt", "err", err)
	}
}

// input is the stdin socket's question: the running cell's frontend
// answers it.
func (s *Session) input(ctx context.Context, prompt string, password bool) (string, error) {
	s.curMu.Lock()
	out := s.current
	s.curMu.Unlock()
	if out == nil {
		return "", errors.New("input() outside a cell's execution")
	}
	return out.Input(ctx, prompt, password)
}
