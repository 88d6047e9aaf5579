package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/protocol/protocoltest"
)

// note is one notification a test client received.
type note struct {
	Method string
	Params any
}

// recorder is a Client that keeps every notification and lets a test wait
// for the ones it expects.
type recorder struct {
	mu    sync.Mutex
	cond  *sync.Cond
	notes []note
}

func newRecorder() *recorder {
	r := &recorder{}
	r.cond = sync.NewCond(&r.mu)
	return r
}

func (r *recorder) Notify(method string, params any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, note{method, params})
	r.cond.Broadcast()
}

// mark returns the number of notifications so far: waits start after it.
func (r *recorder) mark() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.notes)
}

// waitFrom waits until a notification at or after index from satisfies
// match, and returns the notifications from `from` up to and including it.
func (r *recorder) waitFrom(t testing.TB, from int, what string, match func(note) bool) []note {
	t.Helper()
	deadline := testenv.Deadline(t)
	stop := time.AfterFunc(time.Until(deadline), func() {
		r.mu.Lock()
		r.cond.Broadcast()
		r.mu.Unlock()
	})
	defer stop.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; ; {
		for ; i < len(r.notes); i++ {
			if match(r.notes[i]) {
				return append([]note(nil), r.notes[from:i+1]...)
			}
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, n := range r.notes[from:] {
				seen = append(seen, describe(n))
			}
			t.Fatalf("timed out waiting for %s; got after mark %d:\n%s", what, from, strings.Join(seen, "\n"))
		}
		r.cond.Wait()
	}
}

func describe(n note) string {
	b, _ := json.Marshal(n.Params)
	s := string(b)
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return n.Method + " " + s
}

// runResult is what one run of a context sent.
type runResult struct {
	notes   []note
	updates protocoltest.Updates // in arrival order
	failed  *protocol.ExecutionResult
	output  string
	// replayed is the output sent again for values the run did not
	// compute (PROTOCOL.md 8.3), not part of output.
	replayed string
}

// isEnd matches the end of a run of context id.
func isEnd(id protocol.ContextID) func(note) bool {
	return func(n note) bool {
		switch p := n.Params.(type) {
		case protocol.ExecutionCompleteParams:
			return p.ContextID == id
		case protocol.ExecutionFailedParams:
			return p.ContextID == id
		}
		return false
	}
}

// waitRun waits for the end of a run of ctxID after mark and collects it.
// outputUntilValue waits for the runs of context id from mark `from` on
// until one reports expression expr with value want, and returns what
// those runs printed; a failed run fails the test. For tests of what an
// edit made run again while a statement was running.
func (r *recorder) outputUntilValue(t testing.TB, from int, id protocol.ContextID, expr, want string) string {
	t.Helper()
	var out strings.Builder
	for {
		run := r.waitRun(t, from, id)
		out.WriteString(run.output)
		if run.failed != nil {
			t.Fatalf("run: %+v", run.failed)
		}
		if run.updates.Values()[expr] == want {
			return out.String()
		}
		from = r.mark()
	}
}

func (r *recorder) waitRun(t testing.TB, from int, id protocol.ContextID) *runResult {
	t.Helper()
	notes := r.waitFrom(t, from, "end of run of "+string(id), isEnd(id))
	rr := &runResult{notes: notes}
	for _, n := range notes {
		switch p := n.Params.(type) {
		case protocol.ExpressionUpdatesParams:
			if p.ContextID == id {
				rr.updates = append(rr.updates, p.Updates...)
			}
		case protocol.ExecutionFailedParams:
			if p.ContextID == id {
				res := p.Result
				rr.failed = &res
			}
		case protocol.OutputParams:
			if p.ContextID == id && p.Replayed {
				rr.replayed += p.Text
			} else if p.ContextID == id {
				rr.output += p.Text
			}
		}
	}
	return rr
}

// harness is a started engine on a temp project with one connected client.
type harness struct {
	t      testing.TB
	e      *engine.Engine
	dir    string
	client *recorder
	ctx    context.Context
}

const clientID = "test-client"

func setup(t testing.TB, files map[string]string, cfg engine.Config) *harness {
	t.Helper()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, files)
	e := enginetest.Start(t, dir, cfg)
	ctx := context.Background()
	h := &harness{t: t, e: e, dir: dir, client: newRecorder(), ctx: ctx}
	if _, err := e.Connect(ctx, clientID, h.client); err != nil {
		t.Fatal(err)
	}
	return h
}

func write(t testing.TB, dir, name, text string) {
	t.Helper()
	enginetest.WriteFiles(t, dir, map[string]string{name: text})
}

// newContext creates a context and pushes module:function on it; it
// returns the id and the first run.
func (h *harness) newContext(pointer string, args ...string) (protocol.ContextID, *runResult) {
	h.t.Helper()
	id, m := h.startContext(pointer, args...)
	return id, h.client.waitRun(h.t, m, id)
}

// startContext creates a context and pushes module:function on it; it
// returns the id and the mark before the push.
func (h *harness) startContext(pointer string, args ...string) (protocol.ContextID, int) {
	h.t.Helper()
	res, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	if err != nil {
		h.t.Fatal(err)
	}
	mp, err := protocol.ParseMethodPointer(pointer)
	if err != nil {
		h.t.Fatal(err)
	}
	m := h.client.mark()
	if err := h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: res.ContextID, StackItem: protocol.NewExplicitCall(mp, args...)}); err != nil {
		h.t.Fatal(err)
	}
	return res.ContextID, m
}

// edit replaces the whole text of an open file through text/applyEdit and
// returns the run it causes.
func (h *harness) openFile(path string) (string, string) {
	h.t.Helper()
	res, err := h.e.OpenFile(h.ctx, clientID, path)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Content, res.CurrentVersion
}

// setText replaces the buffer's content (opened if needed) with text.
func (h *harness) setText(path, text string) {
	h.t.Helper()
	old, version := h.openFile(path)
	end := endOf(old)
	err := h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
		Path:       protocol.Path(path),
		Edits:      []protocol.TextEdit{{Range: protocol.Range{End: end}, Text: text}},
		OldVersion: version,
		NewVersion: versionOf(text),
	}})
	if err != nil {
		h.t.Fatal(err)
	}
}

func endOf(s string) protocol.Position {
	lines := strings.Split(s, "\n")
	return protocol.Position{Line: len(lines) - 1, Character: len([]rune(lines[len(lines)-1]))}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func expect(t testing.TB, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// The scenario project (enginetest.Scenarios): main.py runs
// x = 6; y = foo(x, 5); z = y + 5 and returns z, helper.py has foo.
const scenarioMain = `from helper import foo


def main():
    x = 6
    y = foo(x, 5)
    z = y + 5
    return z
`

const scenarioHelper = enginetest.ScenarioHelper

// mainWith is main.py with main's body made of the given statements.
func mainWith(body ...string) string { return enginetest.MainWith(body...) }

var baseBody = enginetest.ScenarioBody
