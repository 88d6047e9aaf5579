package engine_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/protocol/protocoltest"
)

// An uncaught exception ends the frame's run, as in Python (PROTOCOL.md
// 8.1), with real kernels: a failing assert then a file write (the file
// is not written, the statements after it are not reached, naming the
// assert), a try/except that goes on, the same in a script frame and in a
// LocalCall frame, and the caching invariant after fixing the exception.

// checkEndedAt checks a run that an exception in raiser ended: raiser's
// Panic, each of after not reached with reason exception naming raiser,
// and an executionComplete end.
func checkEndedAt(t *testing.T, run *runResult, raiser protocol.ExpressionID, after ...protocol.ExpressionID) {
	t.Helper()
	if run.failed != nil {
		t.Errorf("run ended %s, want executionComplete", resultString(run.failed))
	}
	if u := run.updates.Latest(string(raiser)); u == nil || u.Payload.Type != protocol.PayloadPanic {
		t.Errorf("%s is %+v, want its Panic", raiser, u)
	}
	for _, id := range after {
		u := run.updates.Latest(string(id))
		if u == nil || !u.Payload.IsNotReached() || u.Payload.Reason == nil ||
			u.Payload.Reason.Kind != protocol.ReasonException || u.Payload.Reason.ExpressionID != raiser {
			t.Errorf("%s is %+v, want not reached, exception in %s", id, u, raiser)
		}
	}
}

const assertThenWrite = `def main():
    rows = []
    assert len(rows) > 0
    open("published.txt", "w").write("x")
    n = 2
    return n
`

func TestExceptionEndsTheFunction(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": assertThenWrite}, engine.Config{})
	_, run := h.newContext("main:main")
	checkEndedAt(t, run, "main:main/#1", "main:main/#2", "main:main/n", "main:main/return")
	if exists(h.dir, "published.txt") {
		t.Error("published.txt was written after the failing assert")
	}
}

const tryMain = `def fail():
    raise ValueError("no")


def main():
    try:
        fail()
    except ValueError:
        caught = True
    n = 2
    return n
`

func TestCaughtExceptionGoesOn(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": tryMain}, engine.Config{})
	_, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run: %s", resultString(run.failed))
	}
	expect(t, "n", run.updates.Values()["main:main/n"], "2")
	expect(t, "return", run.updates.Values()["main:main/return"], "2")
}

const assertThenWriteScript = `rows = []
assert len(rows) > 0
open("published.txt", "w").write("x")
n = 2
`

func TestExceptionEndsTheScript(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": assertThenWriteScript}, engine.Config{})
	_, run := h.newContext("main:__main__")
	checkEndedAt(t, run, "main:__main__/#1", "main:__main__/#2", "main:__main__/n")
	if exists(h.dir, "published.txt") {
		t.Error("published.txt was written after the failing assert")
	}
}

const publishMain = `import os


def publish(rows):
    assert os.path.exists("ready")
    open("published.txt", "w").write("x")
    n = len(rows)
    return n


def main():
    rows = [1]
    y = publish(rows)
    return y
`

func TestExceptionEndsTheLocalCallFrame(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": publishMain, "ready": ""}, engine.Config{})
	id, first := h.newContext("main:main")
	expect(t, "y", first.updates.Values()["main:main/y"], "1")
	m := h.client.mark()
	must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: protocol.NewLocalCall("main:main/y")}))
	if run := h.client.waitRun(t, m, id); run.updates.Values()["main:publish/n"] != "1" {
		t.Fatalf("publish's frame: %v", run.updates.Values())
	}
	must(t, os.Remove(filepath.Join(h.dir, "ready")))
	must(t, os.Remove(filepath.Join(h.dir, "published.txt")))

	m = h.client.mark()
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id, InvalidatedExpressions: protocol.InvalidateAll()}))
	run := h.client.waitRun(t, m, id)
	checkEndedAt(t, run, "main:publish/#1", "main:publish/#2", "main:publish/n", "main:publish/return")
	if exists(h.dir, "published.txt") {
		t.Error("published.txt was written after the failing assert")
	}
}

// shown folds a client's updates into what it shows of each statement:
// "Value: preview", "Panic: message", "Pending: message (reason kind at
// origin)".
func shown(us protocoltest.Updates) map[protocol.ExpressionID]string {
	out := map[protocol.ExpressionID]string{}
	for _, u := range us {
		p := u.Payload
		s := string(p.Type) + ": " + p.Preview + p.Message
		if p.Reason != nil {
			s += " (" + p.Reason.Kind + " at " + string(p.Reason.ExpressionID) + ")"
		}
		out[u.ExpressionID] = s
	}
	return out
}

const fixableMain = `def main():
    x = 1
    assert x > 1
    y = x + 1
    return y
`

// The invariant of 5.3 with 8.1: after an exception and its fix (and
// back), a context shows what a fresh run of the current source shows,
// which stops at the exception.
func TestExceptionCachingInvariant(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": fixableMain}, engine.Config{})
	id, m := h.startContext("main:main")
	first := h.client.waitRun(t, m, id)
	checkEndedAt(t, first, "main:main/#1", "main:main/y", "main:main/return")
	acc := first.updates

	fresh := func() map[protocol.ExpressionID]string {
		t.Helper()
		_, run := h.newContext("main:main")
		return shown(run.updates)
	}
	for _, src := range []string{
		"assert x > 0", // fixed
		"assert x > 5", // failing again
		"assert x >= 1",
	} {
		m := h.client.mark()
		h.setText("main.py", strings.Replace(fixableMain, "assert x > 1", src, 1))
		run := h.client.waitRun(t, m, id)
		acc = append(acc, run.updates...)
		if got, want := shown(acc), fresh(); !maps.Equal(got, want) {
			t.Errorf("after %q:\n got %v\nwant %v (a fresh run)", src, got, want)
		}
	}
}
