package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// A state log that cannot be written at start (a durable.Late whose
// directory cannot be created yet) refuses changes with 7001; the first
// change once it can be written opens it, and the log then holds what
// the engine restored (a buffer and a context from an earlier log) with
// the change on top, so a restart from it brings all of them back.
func TestStateLogOpenedLateHoldsRestoredState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper})
	ctx := context.Background()
	l1, _, err := durable.Open(filepath.Join(dir, ".ripple"), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e1 := enginetest.Start(t, dir, engine.Config{StateLog: l1})
	rec := newRecorder()
	must(t, firstErr(e1.Connect(ctx, clientID, rec)))
	h := &harness{t: t, e: e1, dir: dir, client: rec, ctx: ctx}
	id, _ := h.newContext("main:main")
	h.setText("helper.py", "def foo(a, b):\n    return a + b\n")
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, e1.Stop(sctx))
	st, err := l1.Load()
	if err != nil {
		t.Fatal(err)
	}
	l1.Close()

	later := filepath.Join(t.TempDir(), "later")
	late := durable.NewLate(filepath.Join(later, ".ripple"), durable.Options{}, nil, errors.New("the test's state directory is missing"))
	defer late.Close()
	e2 := enginetest.Start(t, dir, engine.Config{StateLog: late})
	if _, err := e2.RestoreBuffers(st); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.RestoreContexts(st); err != nil {
		t.Fatal(err)
	}
	h2 := &harness{t: t, e: e2, dir: dir, client: newRecorder(), ctx: ctx}
	must(t, firstErr(e2.Connect(ctx, clientID, h2.client)))
	err = firstErr(e2.CreateContext(ctx, clientID, protocol.CreateContextParams{ContextID: "c-refused"}))
	if !errors.Is(err, engine.ErrStateNotRecorded) || engine.ProtocolError(err).Code != protocol.CodeStateNotRecorded {
		t.Fatalf("a new context while the log cannot be opened: %v, want 7001", err)
	}

	if err := os.Mkdir(later, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "def foo(a, b):\n    return a - b\n"
	h2.setText("helper.py", text) // fails the test if refused
	if late.Failing() != nil || late.Unseeded() {
		t.Fatalf("after the accepted edit: Failing %v, Unseeded %v", late.Failing(), late.Unseeded())
	}
	must(t, e2.Stop(sctx))
	if err := late.Close(); err != nil {
		t.Fatal(err)
	}

	l3, _, err := durable.Open(filepath.Join(later, ".ripple"), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l3.Close()
	st3, err := l3.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st3.Get(engine.KindContext, string(id)); !ok || len(st3[engine.KindContext]) != 1 {
		t.Fatalf("the late log's contexts %v, want the restored %s", st3[engine.KindContext], id)
	}
	e3 := enginetest.Start(t, dir, engine.Config{StateLog: l3})
	if restored, err := e3.RestoreBuffers(st3); err != nil || len(restored) != 1 {
		t.Fatalf("restored %v, %v; want helper.py", restored, err)
	}
	h3 := &harness{t: t, e: e3, dir: dir, client: newRecorder(), ctx: ctx}
	must(t, firstErr(e3.Connect(ctx, clientID, h3.client)))
	if got, _ := h3.openFile("helper.py"); got != text {
		t.Fatalf("helper.py restored from the late log: %q, want the edit accepted after it opened %q", got, text)
	}
}
