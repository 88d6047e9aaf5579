package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// journalMain prints, aliases and mutates one list through two names, and
// binds a value that cannot be pickled (a lock) with a dependent.
const journalMain = `import os
import threading


def main():
    xs = []
    print("one")
    xs.append(1)
    ys = xs
    ys.append(2)
    n = len(xs)
    print("two", n)
    lock = threading.Lock()
    b = n + 1
    c = (lock is not None, b)
`

// unpicklable are the statements of journalMain that are never journalled:
// the lock and its dependent.
var unpicklable = []string{"main:main/lock", "main:main/c"}

// journalConfig is an engine on dir with the value journal of dir's state
// directory, written right after each result (so the next request to the
// kernel finds it written).
func journalConfig(dir string) engine.Config {
	return engine.Config{ValueJournal: filepath.Join(dir, ".ripple", durable.ValuesFileName), ValueJournalIdle: -1}
}

// freshValues runs pointer on files in a brand-new engine without a
// journal: what the caching invariant compares with.
func freshValues(t *testing.T, files map[string]string, pointer string) map[string]string {
	t.Helper()
	h := setup(t, files, engine.Config{})
	_, run := h.newContext(pointer)
	if run.failed != nil {
		t.Fatalf("fresh run of %s: %s", pointer, resultString(run.failed))
	}
	return run.updates.Values()
}

// journalled starts an engine with the journal on dir and runs main:main
// once in a new context; the journal is written when it returns (a second
// request reached the kernel after the write).
func journalled(t *testing.T, dir string) (*harness, protocol.ContextID, *runResult) {
	t.Helper()
	h := &harness{t: t, e: enginetest.Start(t, dir, journalConfig(dir)), dir: dir, client: newRecorder(), ctx: t.Context()}
	must(t, firstErr(h.e.Connect(h.ctx, clientID, h.client)))
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run: %s", resultString(run.failed))
	}
	h.settle(id)
	return h, id, run
}

// view applies updates to what a client holds.
func view(held map[string]string, run *runResult) map[string]string {
	for id, v := range run.updates.Values() {
		held[id] = v
	}
	return held
}

// sameValues compares a client's values with a fresh run's (the lock's
// preview holds its address).
func sameValues(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for id, v := range want {
		if id == "main:main/lock" {
			continue
		}
		if got[id] != v {
			t.Errorf("%s: %s = %q, a fresh run says %q", what, id, got[id], v)
		}
	}
}

// TestJournalRestoresAfterServerRestart: a second engine on the project
// (as after a crash of the server) restores main's statements from the
// journal: their values come back fromCache, their prints do not repeat,
// the statements whose values cannot be pickled and their dependents run.
// An edit then re-runs the edited statement and its dependents only, and
// every value equals a fresh run's.
func TestJournalRestoresAfterServerRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{"main.py": journalMain}
	enginetest.WriteFiles(t, dir, files)
	h1, _, first := journalled(t, dir)
	expect(t, "first run's output", first.output, "one\ntwo 2\n")
	stop(t, h1.e)

	h2 := &harness{t: t, e: enginetest.Start(t, dir, journalConfig(dir)), dir: dir, client: newRecorder(), ctx: t.Context()}
	must(t, firstErr(h2.e.Connect(h2.ctx, clientID, h2.client)))
	id, run := h2.newContext("main:main")
	if run.output != "" {
		t.Errorf("restored run printed %q: its prints repeated", run.output)
	}
	// What printed them comes with the restored values (PROTOCOL.md 8.3).
	expect(t, "restored run's replayed output", run.replayed, "one\ntwo 2\n")
	expect(t, "computed after the restart", run.updates.Computed(), unpicklable)
	for _, u := range run.updates {
		if u.Payload.Type == protocol.PayloadValue && !slices.Contains(unpicklable, string(u.ExpressionID)) && !u.FromCache {
			t.Errorf("%s restored without fromCache", u.ExpressionID)
		}
	}
	held := view(map[string]string{}, run)
	sameValues(t, "restored", held, freshValues(t, files, "main:main"))

	// An edit of a mutator: the list's definition chain and its readers
	// run again (the restored mutation log says who mutated what).
	edited := strings.Replace(journalMain, "ys.append(2)", "ys.append(3)", 1)
	m := h2.client.mark()
	h2.setText("main.py", edited)
	run = h2.client.waitRun(t, m, id)
	expect(t, "output after the edit", run.output, "two 2\n")
	sameValues(t, "after the edit", view(held, run), freshValues(t, map[string]string{"main.py": edited}, "main:main"))
	if !slices.Contains(run.updates.Computed(), "main:main/xs") {
		t.Errorf("xs not computed again after its mutator changed: %v", run.updates.Computed())
	}

	// An edit of n: n and what reads it, nothing before.
	edited2 := strings.Replace(edited, "n = len(xs)", "n = len(xs) * 10", 1)
	m = h2.client.mark()
	h2.setText("main.py", edited2)
	run = h2.client.waitRun(t, m, id)
	expect(t, "computed after editing n", run.updates.Computed(), []string{"main:main/n", "main:main/#4", "main:main/b", "main:main/c"})
	expect(t, "output after editing n", run.output, "two 20\n")
	sameValues(t, "after editing n", view(held, run), freshValues(t, map[string]string{"main.py": edited2}, "main:main"))
}

// TestJournalRestoresAfterKernelCrash: a statement added to main kills
// the kernel once; the pool starts a new one and the engine runs the
// context again there: what ran before the crash comes from the journal.
func TestJournalRestoresAfterKernelCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": journalMain})
	h, id, _ := journalled(t, dir)
	crashing := journalMain + `    if not os.path.exists("../died"):  # beside the project: typing may not write into it
        open("../died", "w").close()
        os._exit(3)
    d = b + 1
`
	m := h.client.mark()
	h.setText("main.py", crashing)
	h.client.waitFrom(t, m, "runtime/kernelRestarted", isRestarted)
	h.client.waitFrom(t, m, "the re-run to complete", isComplete(id))
	notes := h.client.all()[m:]
	var after []note
	for i, n := range notes {
		if isRestarted(n) {
			after = notes[i:]
		}
	}
	run := &runResult{}
	for _, n := range after {
		switch p := n.Params.(type) {
		case protocol.ExpressionUpdatesParams:
			if p.ContextID == id {
				run.updates = append(run.updates, p.Updates...)
			}
		case protocol.OutputParams:
			if p.ContextID == id && !p.Replayed {
				run.output += p.Text
			}
		}
	}
	if strings.Contains(run.output, "one") || strings.Contains(run.output, "two") {
		t.Errorf("re-run on the new kernel printed %q: restored statements ran again", run.output)
	}
	computed := run.updates.Computed()
	for _, want := range []string{"main:main/lock", "main:main/c", "main:main/d"} {
		if !slices.Contains(computed, want) {
			t.Errorf("%s not computed on the new kernel: %v", want, computed)
		}
	}
	for _, restored := range []string{"main:main/xs", "main:main/#1", "main:main/n", "main:main/#4", "main:main/b"} {
		if slices.Contains(computed, restored) {
			t.Errorf("%s computed again on the new kernel, want it from the journal: %v", restored, computed)
		}
	}
	expect(t, "d", run.updates.Values()["main:main/d"], "4")
}

// TestJournalDamagedFile: a values.db that is not a database is moved
// aside by the kernel, which makes a new one and goes on: values are
// computed, journalled and restored as usual.
func TestJournalDamagedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": journalMain, ".ripple/values.db": strings.Repeat("not a database\n", 500)})
	h1, _, first := journalled(t, dir)
	expect(t, "first run's output", first.output, "one\ntwo 2\n")
	stop(t, h1.e)
	aside, _ := filepath.Glob(filepath.Join(dir, ".ripple", durable.ValuesFileName+".corrupt-*"))
	if len(aside) != 1 {
		t.Fatalf("files moved aside: %v, want one", aside)
	}
	if b, err := os.ReadFile(aside[0]); err != nil || !strings.HasPrefix(string(b), "not a database") {
		t.Errorf("moved-aside file %s: %v, %.20q", aside[0], err, b)
	}
	h2 := &harness{t: t, e: enginetest.Start(t, dir, journalConfig(dir)), dir: dir, client: newRecorder(), ctx: t.Context()}
	must(t, firstErr(h2.e.Connect(h2.ctx, clientID, h2.client)))
	_, run := h2.newContext("main:main")
	expect(t, "computed after the restart", run.updates.Computed(), unpicklable)
}

// TestJournalRecomputeRunsAgain: runtime/restartKernel is reset
// (PROTOCOL.md): every statement runs again, the journal is not used; a
// recompute of a statement restored from the journal runs it again (its
// print repeats: the user asked for it).
func TestJournalRecomputeRunsAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": journalMain})
	h1, id, _ := journalled(t, dir)
	m := h1.client.mark()
	must(t, h1.e.RestartKernel(h1.ctx, clientID, id))
	// The restart re-runs the context on the new kernel, from scratch.
	run := h1.client.waitRun(t, m, id)
	if got := run.updates.Computed(); len(got) != 10 {
		t.Errorf("computed after restartKernel: %v, want all 10 statements", got)
	}
	expect(t, "output after restartKernel", run.output, "one\ntwo 2\n")
	stop(t, h1.e)

	h2 := &harness{t: t, e: enginetest.Start(t, dir, journalConfig(dir)), dir: dir, client: newRecorder(), ctx: t.Context()}
	must(t, firstErr(h2.e.Connect(h2.ctx, clientID, h2.client)))
	res, err := h2.e.CreateContext(h2.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	m = h2.client.mark()
	must(t, h2.e.Push(h2.ctx, clientID, protocol.PushParams{ContextID: res.ContextID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}))
	h2.client.waitRun(t, m, res.ContextID)
	m = h2.client.mark()
	must(t, h2.e.Recompute(h2.ctx, clientID, protocol.RecomputeParams{ContextID: res.ContextID,
		InvalidatedExpressions: &protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/#1"}}}))
	run = h2.client.waitRun(t, m, res.ContextID)
	expect(t, "output of the recompute", run.output, "one\n")
}

func stop(t *testing.T, e *engine.Engine) {
	t.Helper()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	must(t, e.Stop(sctx))
}
