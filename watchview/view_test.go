package watchview

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

const ctxID = protocol.ContextID("c1")

// show feeds notifications to a started view and returns what it wrote
// once stopped.
func show(t *testing.T, opts Options, notes ...item) string {
	t.Helper()
	var out bytes.Buffer
	opts.Out = &out
	v := New(opts)
	if err := v.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		v.Notify(n.method, n.params)
	}
	if err := v.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func updates(us ...protocol.ExpressionUpdate) item {
	return item{protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{ContextID: ctxID, Updates: us}}
}

func complete() item {
	return item{protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: ctxID}}
}

func failed(kind protocol.ResultKind, msg string, d *protocol.Diagnostic) item {
	return item{protocol.NotifyExecutionFailed, protocol.ExecutionFailedParams{ContextID: ctxID, Result: protocol.ExecutionResult{Kind: kind, Message: msg, Diagnostic: d}}}
}

func output(stream protocol.OutputStream, text string) item {
	return item{protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, Stream: stream, Text: text}}
}

func fileEvent(path string, kind protocol.FileEventKind) item {
	return item{protocol.NotifyFileEvent, protocol.FileEventParams{Path: protocol.Path(path), Kind: kind}}
}

// firstRun is a run of main with x, y (calls helper:foo), a print and a
// statement that raised.
func firstRun() []item {
	y := value("y", 5, "30", 2_500_000)
	y.MethodCall = &protocol.MethodCall{MethodPointer: protocol.MethodPointer{Module: "helper", Name: "foo"}}
	print1 := upd("#1", 6, "builtins.NoneType", protocol.ValuePayload("None"), false, 900)
	w := upd("w", 7, "", protocol.PanicPayload("ZeroDivisionError: division by zero", "main:main/w"), false, 0)
	return []item{
		updates(pending("x", 4), pending("y", 5), pending("#1", 6), pending("w", 7)),
		updates(value("x", 4, "6", 12_000), y),
		output(protocol.Stdout, "partial "),
		output(protocol.Stdout, "line\n"),
		updates(print1, w),
		complete(),
	}
}

func TestTextTable(t *testing.T) {
	t.Parallel()
	got := show(t, Options{Entry: "main:main", Width: 60}, firstRun()...)
	want := strings.Join([]string{
		"partial line",
		"── main:main · run 1 · 4 recomputed · 2.5ms ──",
		"  * x   int       6                                     12µs",
		"  * y   int       30                                   2.5ms",
		"  * #1  NoneType  None                                 900ns",
		"  ! w   ZeroDivisionError: division by zero  line 8",
		"",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	for _, line := range strings.Split(got, "\n") {
		if n := len([]rune(line)); n > 60 {
			t.Errorf("line of %d columns, want at most 60: %q", n, line)
		}
	}
	if strings.Contains(got, "\x1b[") {
		t.Error("colour codes without Color")
	}
}

func TestTextOnlyChangedRowsAfterTheFirstRun(t *testing.T) {
	t.Parallel()
	notes := append(firstRun(),
		fileEvent("helper.py", protocol.FileModified),
		fileEvent("notes.txt", protocol.FileAdded),
		updates(pending("y", 5), cached("x", 4, "6")),
		output(protocol.Stdout, "no newline at the end"),
		updates(value("y", 5, "31", 1_000)),
		updates(upd("z", 9, "", protocol.PanicPayload("NameError: name 'q' is not defined", "main:main/y"), false, 0)),
		complete(),
	)
	got := show(t, Options{Entry: "main:main", Width: 60}, notes...)
	_, second, _ := strings.Cut(got, "line 8\n")
	want := strings.Join([]string{
		"· helper.py modified, notes.txt added",
		"no newline at the end",
		"── main:main · run 2 · 2 recomputed, 1 cached · 1µs ──",
		"  * y  int  31                                           1µs",
		"  ! z  NameError: name 'q' is not defined  line 10 (from y)",
		"",
	}, "\n")
	if second != want {
		t.Errorf("second run got:\n%s\nwant:\n%s", second, want)
	}
}

func TestTextFailures(t *testing.T) {
	t.Parallel()
	diag := &protocol.Diagnostic{Kind: protocol.DiagnosticError, Message: "SyntaxError: '(' was never closed", Path: "main.py",
		Location: &protocol.Range{Start: protocol.Position{Line: 5}}}
	got := show(t, Options{Entry: "main:main"},
		failed(protocol.ResultCompileError, "module main failed to compile: SyntaxError: '(' was never closed", diag),
		updates(pending("x", 4), pending("y", 5)),
		updates(value("x", 4, "6", 1000)),
		failed(protocol.ResultInterrupted, "interrupted by the user", nil),
	)
	want := strings.Join([]string{
		"── main:main · run 1 · failed (compileError) ──",
		"  module main failed to compile: SyntaxError: '(' was never closed",
		"  at main.py:6",
		"── main:main · run 2 · interrupted ──",
		"  * x  int  6" + strings.Repeat(" ", 80) + "    1µs",
		"  - y  not computed",
		"  interrupted by the user",
		"",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTextColoursAndWidth(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("ab", 100) + "\nsecond line"
	got := show(t, Options{Entry: "main:main", Width: 50, Color: true},
		updates(value("x", 4, long, 10), upd("w", 5, "", protocol.PanicPayload("ValueError: bad", "main:main/w"), false, 0)),
		complete(),
	)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("lines %q", lines)
	}
	if !strings.Contains(lines[1], sgrGreen+markRecomputed+sgrReset) || !strings.Contains(lines[1], "…") {
		t.Errorf("x row %q: want a green mark and a cut preview", lines[1])
	}
	if plain := stripSGR(lines[1]); len([]rune(plain)) > 50 {
		t.Errorf("x row is %d columns wide, want at most 50: %q", len([]rune(plain)), plain)
	}
	if !strings.HasPrefix(lines[2], sgrRed) || !strings.Contains(lines[2], "ValueError: bad") {
		t.Errorf("panic row %q: want it red", lines[2])
	}
}

func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestTextStderrGoesToErr(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	v := New(Options{Out: &out, Err: &errOut, Entry: "main:main"})
	must(t, v.Start(context.Background()))
	v.Notify(protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, Stream: protocol.Stderr, Text: "warning!\n"})
	v.Notify(protocol.NotifyOutput, protocol.OutputParams{ContextID: ctxID, Stream: protocol.Stdout, Text: "hello\n"})
	must(t, v.Stop(context.Background()))
	if out.String() != "hello\n" || errOut.String() != "warning!\n" {
		t.Errorf("out %q err %q", out.String(), errOut.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// decodeLines parses JSON lines into generic maps, failing on anything
// that is not one object per line.
func decodeLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	notes := []item{{methodWatching, WatchInfo{Root: "/p", Entry: "main:main", Python: "/usr/bin/python3", PythonVersion: "3.11.7"}}}
	notes = append(notes, firstRun()...)
	notes = append(notes,
		fileEvent("helper.py", protocol.FileModified),
		item{protocol.NotifyExecutionStatus, protocol.ExecutionStatusParams{ContextID: ctxID, Diagnostics: []protocol.Diagnostic{{Kind: protocol.DiagnosticError, Message: "boom"}}}},
		failed(protocol.ResultFailure, "function main:main not found in module main (main.py)", nil),
		item{methodInterrupt, nil},
		item{methodStopped, nil},
	)
	got := decodeLines(t, show(t, Options{JSON: true, Color: true}, notes...))
	var events []string
	for _, m := range got {
		events = append(events, m["event"].(string))
	}
	want := "watching update update update update update update output update update complete file diagnostic failed interrupt stopped"
	if strings.Join(events, " ") != want {
		t.Fatalf("events %v\nwant %s", events, want)
	}
	if got[0]["root"] != "/p" || got[0]["pythonVersion"] != "3.11.7" {
		t.Errorf("watching %v", got[0])
	}
	// y's value: flattened update with the protocol payload.
	y := got[6]
	if y["expressionId"] != "main:main/y" || y["label"] != "y" || y["line"] != 6.0 || y["type"] != "builtins.int" ||
		y["fromCache"] != false || y["nanoTime"] != 2.5e6 || y["methodCall"] != "helper:foo" || y["run"] != 1.0 {
		t.Errorf("y update %v", y)
	}
	if p := y["payload"].(map[string]any); p["type"] != "Value" || p["preview"] != "30" {
		t.Errorf("y payload %v", p)
	}
	if got[1]["payload"].(map[string]any)["type"] != "Pending" {
		t.Errorf("first update %v, want Pending", got[1])
	}
	// The output chunks were merged while queued or written one by one:
	// either way the text is whole and in order.
	if got[7]["text"] != "partial line\n" || got[7]["stream"] != "stdout" {
		t.Errorf("output %v", got[7])
	}
	if w := got[9]; w["payload"].(map[string]any)["message"] != "ZeroDivisionError: division by zero" {
		t.Errorf("w %v", w)
	}
	if c := got[10]; c["run"] != 1.0 || c["recomputed"] != 4.0 || c["cached"] != 0.0 {
		t.Errorf("complete %v", c)
	}
	if f := got[11]; f["path"] != "helper.py" || f["kind"] != "Modified" {
		t.Errorf("file %v", f)
	}
	if f := got[13]; f["run"] != 2.0 || f["kind"] != "failure" || !strings.Contains(f["message"].(string), "not found") {
		t.Errorf("failed %v", f)
	}
	if strings.Contains(fmt.Sprint(got), "\x1b[") {
		t.Error("colour codes in JSON")
	}
}

// blockingWriter blocks every Write until released, like a terminal
// whose output is paused.
type blockingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
	writing chan struct{} // closed at the first Write
	once    sync.Once
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.writing) })
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func TestNotifyNeverBlocksAndBoundsOutput(t *testing.T) {
	t.Parallel()
	w := &blockingWriter{release: make(chan struct{}), writing: make(chan struct{})}
	v := New(Options{Out: w, MaxQueuedOutput: 1000})
	must(t, v.Start(context.Background()))
	v.Notify(protocol.NotifyOutput, protocol.OutputParams{Stream: protocol.Stdout, Text: "first\n"})
	<-w.writing // the render goroutine is stuck in Write
	// Notify returns although nothing can be written: 100 KB of output,
	// most of it dropped.
	chunk := strings.Repeat("x", 99) + "\n"
	for range 1000 {
		v.Notify(protocol.NotifyOutput, protocol.OutputParams{Stream: protocol.Stdout, Text: chunk})
	}
	v.Notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{})
	close(w.release)
	must(t, v.Stop(context.Background()))
	got := w.buf.String()
	kept := strings.Count(got, chunk)
	if kept != 10 {
		t.Errorf("kept %d chunks, want the 10 that fit in 1000 bytes", kept)
	}
	if !strings.Contains(got, fmt.Sprintf("[ripple: %d bytes dropped]", 990*100)) {
		t.Errorf("no drop marker in %q", got[len(got)-200:])
	}
	if !strings.Contains(got, "run 1") {
		t.Error("the end of the run was dropped with the output")
	}
}

func TestViewLifecycle(t *testing.T) {
	t.Parallel()
	// Stop before Start, twice; Start after Stop fails.
	v := New(Options{Out: io.Discard})
	must(t, v.Stop(context.Background()))
	must(t, v.Stop(context.Background()))
	if err := v.Start(context.Background()); err != ErrStopped {
		t.Errorf("start after stop: %v", err)
	}
	// Notifications after Stop are ignored; Stop is idempotent.
	var out bytes.Buffer
	v = New(Options{Out: &out})
	must(t, v.Start(context.Background()))
	if err := v.Start(context.Background()); err == nil {
		t.Error("second start succeeded")
	}
	v.Notify(protocol.NotifyOutput, protocol.OutputParams{Stream: protocol.Stdout, Text: "a\n"})
	must(t, v.Stop(context.Background()))
	v.Notify(protocol.NotifyOutput, protocol.OutputParams{Stream: protocol.Stdout, Text: "b\n"})
	must(t, v.Stop(context.Background()))
	if out.String() != "a\n" {
		t.Errorf("out %q", out.String())
	}
	// Stop gives up when ctx ends while a write is stuck.
	w := &blockingWriter{release: make(chan struct{}), writing: make(chan struct{})}
	v = New(Options{Out: w})
	must(t, v.Start(context.Background()))
	v.Notify(protocol.NotifyOutput, protocol.OutputParams{Stream: protocol.Stdout, Text: "stuck\n"})
	<-w.writing
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := v.Stop(ctx); err == nil {
		t.Error("stop returned nil with the render goroutine stuck")
	}
	close(w.release)
	must(t, v.Stop(context.Background()))
}

func TestConcurrentNotify(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	v := New(Options{Out: &out, JSON: true})
	must(t, v.Start(context.Background()))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				v.Notify(protocol.NotifyFileEvent, protocol.FileEventParams{Path: protocol.Path(fmt.Sprintf("g%d/f%d.txt", g, i)), Kind: protocol.FileAdded})
			}
		}()
	}
	wg.Wait()
	must(t, v.Stop(context.Background()))
	if n := len(decodeLines(t, out.String())); n != 1600 {
		t.Errorf("%d lines, want 1600", n)
	}
}

// A "#k" row names its statement (its first line, from the file under the
// root) and a Panic row shows its traceback.
func TestTextSourceOfHashRowsAndTracebacks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lines := []string{"def main():", "    x = 1", "    for i in range(3):", "        pass", "    w = 1 / 0"}
	if err := os.WriteFile(filepath.Join(root, "main.py"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	diag := &protocol.Diagnostic{Kind: protocol.DiagnosticError, Message: "ZeroDivisionError: division by zero", Path: "main.py",
		ExpressionID: "main:main/w", Stack: []protocol.StackTraceElement{
			{FunctionName: "main", Path: "main.py", Location: &protocol.Range{Start: protocol.Position{Line: 4}}},
			{FunctionName: "helper", Path: "util.py", Location: &protocol.Range{Start: protocol.Position{Line: 9}}},
		}}
	got := show(t, Options{Entry: "main:main", Width: 80},
		item{methodWatching, WatchInfo{Root: root, Entry: "main:main", PythonVersion: "3.11.7"}},
		updates(value("x", 1, "1", 1000), upd("#1", 2, "builtins.NoneType", protocol.ValuePayload("None"), false, 1000)),
		item{protocol.NotifyExecutionStatus, protocol.ExecutionStatusParams{ContextID: ctxID, Diagnostics: []protocol.Diagnostic{*diag}}},
		updates(upd("w", 4, "", protocol.PanicPayload("ZeroDivisionError: division by zero", "main:main/w"), false, 0)),
		complete(),
	)
	for _, want := range []string{"#1 for i in range(3):", "main.py:5 in main", "util.py:10 in helper"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

// Held and not-reached rows have their own marks and say why
// (PROTOCOL.md 8.1, 8.2, 8.4); the header counts the held ones.
func TestTextHeldAndNotReached(t *testing.T) {
	t.Parallel()
	notReached := func(label string, line int, kind string, origin protocol.ExpressionID) protocol.ExpressionUpdate {
		u := pending(label, line)
		u.Payload = protocol.NotReachedPayload(kind, origin)
		return u
	}
	held := pending("#1", 5)
	held.Payload = protocol.HeldPayload("shutil.rmtree('out')", "shutil.rmtree", "'out'")
	got := show(t, Options{Entry: "main:main"},
		updates(pending("x", 4), pending("#1", 5), pending("y", 6)),
		updates(value("x", 4, "6", 1000), held, notReached("y", 6, protocol.ReasonHeld, "main:main/#1")),
		complete(),
		updates(pending("x", 4), pending("#1", 5), pending("y", 6)),
		updates(upd("x", 4, "", protocol.PanicPayload("AssertionError", "main:main/x"), false, 5),
			notReached("#1", 5, protocol.ReasonException, "main:main/x"), notReached("y", 6, protocol.ReasonException, "main:main/x")),
		complete(),
		updates(notReached("#1", 5, protocol.ReasonKernelDied, ""), notReached("y", 6, protocol.ReasonInterrupted, "")),
		failed(protocol.ResultKernelDied, "the kernel died (exit status 3) while running this context", nil),
		updates(pending("y", 6)),
		updates(upd("y", 6, "", protocol.PendingPayload(protocol.MessageNotReached), false, 0)),
		complete(),
	)
	want := strings.Join([]string{
		"── main:main · run 1 · 1 recomputed, 1 held · 1µs ──",
		"  * x   int  6" + strings.Repeat(" ", 79) + "    1µs",
		"  ⏸ #1  held: shutil.rmtree('out')  line 6",
		"  · y   not reached: held at #1 (line 6)",
		"── main:main · run 2 · 1 recomputed · 5ns ──",
		"  ! x   AssertionError  line 5",
		"  · #1  not reached: exception in x (line 5)",
		"  · y   not reached: exception in x (line 5)",
		"── main:main · run 3 · failed (kernelDied) ──",
		"  · #1  not reached: the kernel died",
		"  · y   not reached: interrupted",
		"  the kernel died (exit status 3) while running this context",
		"── main:main · run 4 · 0 recomputed ──",
		"  · y  not reached",
		"",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// The JSON form carries the payload's reason, startedAt and effects as
// the protocol writes them, and the count of held statements.
func TestJSONHeldAndNotReached(t *testing.T) {
	t.Parallel()
	held := pending("#1", 5)
	held.Payload = protocol.HeldPayload("open('a.txt', 'w')", "open", "'a.txt'", "'w'", "524865")
	running := pending("x", 4)
	running.Payload = protocol.RunningPayload(time.Date(2026, 11, 29, 1, 2, 3, 456e6, time.UTC))
	written := value("x", 4, "6", 1)
	written.Payload.Effects = []string{"open('b.txt', 'w')"}
	after := pending("y", 6)
	after.Payload = protocol.NotReachedPayload(protocol.ReasonHeld, "main:main/#1")
	got := decodeLines(t, show(t, Options{JSON: true}, updates(running), updates(written, held, after), complete()))
	if len(got) != 5 {
		t.Fatalf("%d lines, want 5: %v", len(got), got)
	}
	if p := got[0]["payload"].(map[string]any); p["message"] != "running" || p["startedAt"] != "2026-11-29T01:02:03.456Z" {
		t.Errorf("running payload %v", p)
	}
	if p := got[1]["payload"].(map[string]any); fmt.Sprint(p["effects"]) != "[open('b.txt', 'w')]" {
		t.Errorf("value payload %v, want its effects", p)
	}
	if r := got[2]["payload"].(map[string]any)["reason"].(map[string]any); r["kind"] != "held" || r["event"] != "open" || fmt.Sprint(r["args"]) != "['a.txt' 'w' 524865]" {
		t.Errorf("held reason %v", r)
	}
	if r := got[3]["payload"].(map[string]any)["reason"].(map[string]any); r["kind"] != "held" || r["expressionId"] != "main:main/#1" {
		t.Errorf("not reached reason %v", r)
	}
	if c := got[4]; c["event"] != "complete" || c["held"] != 1.0 {
		t.Errorf("complete %v, want held 1", c)
	}
}
