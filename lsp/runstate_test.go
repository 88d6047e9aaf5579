package lsp_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
	lsproto "go.lsp.dev/protocol"
)

// initializeWith initializes with initializationOptions opts (JSON) and
// utf-32 positions.
func (b *bundle) initializeWith(opts string) {
	b.t.Helper()
	t := true
	if _, err := b.server.Initialize(b.t.Context(), &lsproto.InitializeParams{
		InitializationOptions: lsproto.LSPAny(opts),
		Capabilities: lsproto.ClientCapabilities{
			General:   &lsproto.GeneralClientCapabilities{PositionEncodings: []lsproto.PositionEncodingKind{lsproto.PositionEncodingKindUTF32}},
			Workspace: &lsproto.WorkspaceClientCapabilities{InlayHint: &lsproto.InlayHintWorkspaceClientCapabilities{RefreshSupport: &t}},
		}}); err != nil {
		b.t.Fatalf("initialize with %s: %v", opts, err)
	}
	if err := b.server.Initialized(b.t.Context(), &lsproto.InitializedParams{}); err != nil {
		b.t.Fatal(err)
	}
}

// open opens main.py in the editor with text.
func (b *bundle) open(text string) {
	b.t.Helper()
	if err := b.server.DidOpen(b.t.Context(), &lsproto.DidOpenTextDocumentParams{TextDocument: lsproto.TextDocumentItem{
		URI: b.uri("main.py"), LanguageID: "python", Version: 1, Text: text}}); err != nil {
		b.t.Fatal(err)
	}
}

// insert sends one didChange of main.py inserting s at line:character.
func (b *bundle) insert(version int32, line, character uint32, s string) {
	b.t.Helper()
	b.replace(version, line, character, character, s)
}

// replace sends one didChange of main.py replacing line:from..to by s.
func (b *bundle) replace(version int32, line, from, to uint32, s string) {
	b.t.Helper()
	r := lsproto.Range{Start: lsproto.Position{Line: line, Character: from}, End: lsproto.Position{Line: line, Character: to}}
	if err := b.server.DidChange(b.t.Context(), &lsproto.DidChangeTextDocumentParams{
		TextDocument:   lsproto.VersionedTextDocumentIdentifier{TextDocumentIdentifier: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}, Version: version},
		ContentChanges: []lsproto.TextDocumentContentChangeEvent{&lsproto.TextDocumentContentChangePartial{Range: r, Text: s}},
	}); err != nil {
		b.t.Fatal(err)
	}
}

// start initializes (main:main's first run, explicit, runs main.py as on
// disk) and opens main.py in the editor with that text.
func (b *bundle) start() {
	b.t.Helper()
	text, err := os.ReadFile(filepath.Join(b.dir, "main.py"))
	if err != nil {
		b.t.Fatal(err)
	}
	b.initialize(lsproto.PositionEncodingKindUTF32)
	b.open(string(text))
}

func (b *bundle) save() {
	b.t.Helper()
	if err := b.server.DidSave(b.t.Context(), &lsproto.DidSaveTextDocumentParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}}); err != nil {
		b.t.Fatal(err)
	}
}

// label returns the first hint label on a line of main.py ("" for none).
func (b *bundle) label(line int) string {
	b.t.Helper()
	if l := b.labels("main.py")[line]; len(l) > 0 {
		return l[0]
	}
	return ""
}

// tooltip returns the tooltip of the first hint on a line of main.py.
func (b *bundle) tooltip(line int) string {
	b.t.Helper()
	hs, err := b.server.InlayHint(b.t.Context(), &lsproto.InlayHintParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")},
		Range: lsproto.Range{End: lsproto.Position{Line: 1000}}})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, h := range hs {
		if int(h.Position.Line) == line {
			if m, ok := h.Tooltip.(*lsproto.MarkupContent); ok {
				return m.Value
			}
		}
	}
	return ""
}

// shows reports whether a hint label is the value v, computed or cached.
func shows(label, v string) bool { return label == "= "+v || label == "≡ "+v }

// logged counts the log messages equal to s.
func (r *recorder) logged(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.logs {
		if l == s {
			n++
		}
	}
	return n
}

// printMain prints a, so that each run of the statement is seen.
const printMain = "def main():\n    a = 6\n    print(f'a is {a}')  # one write: one log message\n    return a\n"

// TestTypingRunsWhenChangesPause: several quick changes are applied at
// once but run once, after they pause: the kernel prints the last text's
// value only, never a half-typed one's.
func TestTypingRunsWhenChangesPause(t *testing.T) {
	b := setup(t)
	// Long enough that three in-process notifications in a row cannot
	// straddle it.
	b.initializeWith(`{"ripple": {"runDelayMs": 1500}, "other": true}`)
	b.open(printMain)
	b.waitUntil("the first run's print", func() bool { return b.ed.logged("a is 6") > 0 })
	b.insert(2, 1, 9, "1")  // a = 61
	b.insert(3, 1, 10, "2") // a = 612
	b.insert(4, 1, 11, "3") // a = 6123
	b.waitUntil("a = 6123 printed", func() bool { return b.ed.logged("a is 6123") > 0 })
	b.waitUntil("6123 returned", func() bool { return b.label(3) == "= 6123" }) // `a = 6123` itself has no hint: the value is on screen
	if n, m := b.ed.logged("a is 61"), b.ed.logged("a is 612"); n+m != 0 {
		t.Fatalf("half-typed values ran: a is 61 printed %d times, a is 612 %d times", n, m)
	}
	if n := b.ed.logged("a is 6123"); n != 1 {
		t.Fatalf("a is 6123 printed %d times, want once: one run after the pause", n)
	}
}

// TestSaveRunsAtOnce: a save does not wait for the pause: the edits run
// with it (here the pause would be a minute).
func TestSaveRunsAtOnce(t *testing.T) {
	b := setup(t)
	b.initializeWith(`{"ripple": {"runDelayMs": 60000}}`)
	b.open(printMain)
	b.waitUntil("the first run's print", func() bool { return b.ed.logged("a is 6") > 0 })
	b.insert(2, 1, 9, "7") // a = 67
	b.save()
	b.waitUntil("a = 67 printed after the save", func() bool { return b.ed.logged("a is 67") > 0 })
}

// TestRunDelayOptionRefusedByName: a runDelayMs ripple cannot use fails
// initialize with InvalidParams naming the setting and the value.
func TestRunDelayOptionRefusedByName(t *testing.T) {
	b := setup(t)
	for _, bad := range []string{`{"ripple": {"runDelayMs": "soon"}}`, `{"ripple": {"runDelayMs": -5}}`,
		`{"ripple": {"runDelayMs": 2.5}}`, `{"ripple": {"runDelayMs": 600000}}`, `{"ripple": 3}`} {
		_, err := b.server.Initialize(t.Context(), &lsproto.InitializeParams{InitializationOptions: lsproto.LSPAny(bad)})
		var je *jsonrpc2.Error
		if !errors.As(err, &je) || je.Code != jsonrpc2.InvalidParams || !strings.Contains(je.Message, "initializationOptions") {
			t.Errorf("initialize with %s: %v, want InvalidParams naming initializationOptions", bad, err)
			continue
		}
		var v struct {
			Ripple struct {
				RunDelayMs json.RawMessage `json:"runDelayMs"`
			} `json:"ripple"`
		}
		if json.Unmarshal([]byte(bad), &v) == nil && (!strings.Contains(je.Message, "runDelayMs") || !strings.Contains(je.Message, string(v.Ripple.RunDelayMs))) {
			t.Errorf("initialize with %s: %q does not name runDelayMs and its value", bad, je.Message)
		}
	}
}

// pubMain is typed into: a write the typing adds is held.
const pubMain = "def main():\n    n = 3\n    total = n + 1\n    return total\n"

// TestHeldStatementRunsFromItsLens: a typed write an automatic run held
// shows ⏸ held with a ▶ Run lens, the statements after it not reached; the
// file is written only when the lens's command runs, and then the rest
// runs too. A save runs a held statement the same way.
func TestHeldStatementRunsFromItsLens(t *testing.T) {
	b := setupWith(t, pubMain)
	b.start()
	b.waitUntil("main's first run", func() bool { return b.label(2) == "= 4" })
	published := filepath.Join(b.dir, "published.txt")
	b.insert(2, 2, 0, "    open('published.txt', 'w').write(str(n))\n")
	b.waitUntil("the write held", func() bool { return b.label(2) == "⏸ held: open('published.txt', 'w')" })
	if got := b.label(3); got != "∅ not reached (held at line 3)" {
		t.Errorf("total's hint = %q, want not reached, held at line 3", got)
	}
	if got := b.label(4); got != "∅ not reached (held at line 3)" {
		t.Errorf("return's hint = %q, want not reached, held at line 3", got)
	}
	if _, err := os.Stat(published); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("published.txt after the automatic run: %v, want it absent", err)
	}
	var run *lsproto.CodeLens
	b.waitUntil("the ▶ Run lens on the held line", func() bool {
		ls, err := b.server.CodeLens(t.Context(), &lsproto.CodeLensParams{TextDocument: lsproto.TextDocumentIdentifier{URI: b.uri("main.py")}})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(ls, func(l lsproto.CodeLens) bool { return l.Range.Start.Line == 2 && l.Command.Title == "▶ Run" })
		if i >= 0 {
			run = &ls[i]
		}
		return run != nil
	})
	if run.Command.Command != "ripple.run" || len(run.Command.Arguments) == 0 || !strings.Contains(string(run.Command.Arguments[0]), "main:main/") {
		t.Fatalf("the held line's lens runs %s %s, want ripple.run with its expression id", run.Command.Command, run.Command.Arguments)
	}
	if _, err := os.Stat(published); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("published.txt before the lens's command: %v, want it absent", err)
	}
	if _, err := b.server.ExecuteCommand(t.Context(), &lsproto.ExecuteCommandParams{Command: run.Command.Command, Arguments: run.Command.Arguments}); err != nil {
		t.Fatalf("the lens's command: %v", err)
	}
	// From the cache, or computed: the explicit run goes on past the held
	// statement.
	b.waitUntil("total = 4 after the explicit run", func() bool { return shows(b.label(3), "4") })
	// Written (its content may wait for the file object's collection).
	if _, err := os.Stat(published); err != nil {
		t.Fatalf("published.txt after the lens's command: %v, want it written", err)
	}

	// Typed: a write is held again (the new one, or the one above it when
	// the kernel runs it again); saving runs the held one explicitly, and
	// the rest of the function after it.
	b.insert(3, 3, 0, "    open('other.txt', 'w').write('x')\n")
	other := filepath.Join(b.dir, "other.txt")
	b.waitUntil("a typed-in run held", func() bool {
		return strings.HasPrefix(b.label(2), "⏸ held: ") || strings.HasPrefix(b.label(3), "⏸ held: ")
	})
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("other.txt after typing: %v, want it absent", err)
	}
	b.save()
	b.waitUntil("other.txt written after the save", func() bool { _, err := os.Stat(other); return err == nil })
	b.waitUntil("total = 4 after the save", func() bool { return shows(b.label(4), "4") })
}

// TestRunStatementRefusedByName: ripple.run on a statement no context
// shows, in a context that does not exist, or with too many arguments is
// refused naming the thing at fault.
func TestRunStatementRefusedByName(t *testing.T) {
	b := setup(t)
	b.initialize(lsproto.PositionEncodingKindUTF32)
	b.waitUntil("main's first run", func() bool { return b.label(2) == "= 42" })
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch:f/x"}, "nosuch:f/x"},
		{[]string{"main:main/b", "no-such-context"}, "no-such-context"},
		{[]string{"main:main", "ctx"}, "takes no context"},
		{[]string{"main:main/b", "x", "y"}, "got 3 arguments"},
	} {
		var args []lsproto.LSPAny
		for _, a := range c.args {
			args = append(args, lsproto.LSPAny(`"`+a+`"`))
		}
		_, err := b.server.ExecuteCommand(t.Context(), &lsproto.ExecuteCommandParams{Command: "ripple.run", Arguments: args})
		var je *jsonrpc2.Error
		if !errors.As(err, &je) || je.Code != jsonrpc2.InvalidParams || !strings.Contains(je.Message, c.want) {
			t.Errorf("ripple.run %v: %v, want InvalidParams naming %q", c.args, err, c.want)
		}
	}
}

// raiseMain raises at line 3; the statements after it are not reached.
const raiseMain = "def main():\n    a = 6\n    b = a // 0\n    c = a + 1\n    return c\n"

// TestNotReachedAfterException: the statements after one that raised are
// not reached, naming its line, and keep their last value in the tooltip.
func TestNotReachedAfterException(t *testing.T) {
	b := setupWith(t, strings.Replace(raiseMain, "a // 0", "a // 1", 1))
	b.start()
	b.waitUntil("c = 7", func() bool { return b.label(3) == "= 7" })
	b.replace(2, 2, 13, 14, "0") // a // 0
	b.waitUntil("b raised", func() bool { return strings.HasPrefix(b.label(2), "✗ ZeroDivisionError") })
	b.waitUntil("c not reached", func() bool { return b.label(3) == "∅ not reached: line 3 raised" })
	if got := b.label(4); got != "∅ not reached: line 3 raised" {
		t.Errorf("return's hint = %q, want not reached: line 3 raised", got)
	}
	if tip := b.tooltip(3); !strings.Contains(tip, "last value `7`") {
		t.Errorf("c's tooltip %q does not give its last value 7", tip)
	}
}

// sleepMain is running at line 3 until interrupted.
const sleepMain = "import time\ndef main():\n    a = 2 * 3\n    time.sleep(120)\n    b = a + 1\n    return b\n"

// TestInterruptLeavesNoPending: the running statement is marked; after an
// interrupt no statement is left ⏳ or running, and the ones the run did
// not reach say so.
func TestInterruptLeavesNoPending(t *testing.T) {
	b := setupWith(t, sleepMain)
	b.start()
	b.waitUntil("the sleep marked running", func() bool { return strings.HasSuffix(b.label(2), " 6") && b.label(3) == "▶ running" })
	if got := b.label(4); got != "⏳" {
		t.Errorf("b's hint while the sleep runs = %q, want ⏳", got)
	}
	if _, err := b.server.ExecuteCommand(t.Context(), &lsproto.ExecuteCommandParams{Command: "ripple.interrupt"}); err != nil {
		t.Fatal(err)
	}
	b.waitUntil("b not reached (interrupted)", func() bool { return b.label(4) == "∅ not reached (interrupted)" })
	for line, ls := range b.labels("main.py") {
		for _, l := range ls {
			if strings.HasPrefix(l, "⏳") || strings.HasPrefix(l, "▶") {
				t.Errorf("line %d still shows %q after the interrupt", line+1, l)
			}
		}
	}
}

// TestKernelDeathLeavesNoPending: a statement that kills the kernel
// leaves the ones after it not reached (kernel died), none ⏳ (once the
// engine has given up re-running it on a new kernel).
func TestKernelDeathLeavesNoPending(t *testing.T) {
	b := setupWith(t, "import os\ndef main():\n    a = 6\n    os._exit(3)\n    b = a + 1\n    return b\n")
	b.start()
	b.waitUntil("b not reached (kernel died), nothing ⏳", func() bool {
		for _, ls := range b.labels("main.py") {
			if slices.ContainsFunc(ls, func(l string) bool { return strings.HasPrefix(l, "⏳") || strings.HasPrefix(l, "▶") }) {
				return false
			}
		}
		return b.label(4) == "∅ not reached (kernel died)"
	})
}
