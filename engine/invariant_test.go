package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// THE invariant of PROTOCOL.md 5.3, end to end through the Go engine: for
// deterministic code, after any sequence of edits, recomputes, pushes, pops
// and interrupts, the values a client holds equal what a fresh run of the
// current sources reports.
//
// A session drives a real engine (real kernel, queue, coalescing, store)
// with a random program and random operations, and keeps the view an IDE
// keeps: every expressionUpdates notification applied in order to the
// frame on top of the stack. After every step whose run was not
// interrupted, the view is compared with a brand-new engine (its own
// project directory, its own kernel process, its own context) that runs the
// current sources from scratch with the same stack: every expression the
// fresh run reports must be held by the client with the same type and
// preview (or Panic message and trace, or "not reached"), the same
// methodCall and the same range, and the run must end the same way.
//
// Programs and edits come from the Python engine's own generator
// (kernel/python/tests/fuzzprog.py, through testdata/invariant/gen.py);
// the operations are chosen here with a seeded PCG. Interrupts are sent
// while a run is in progress, so where they land depends on timing: the
// script of a failing session records every operation concretely and is
// written to testdata/invariant/failure-seed-N.json; copy it into
// testdata/invariant/regressions/ to keep it (TestInvariantRegressions
// replays every file there).
//
// RIPPLE_INVARIANT_SEED picks the first seed (default 1) and
// RIPPLE_INVARIANT_STEPS the number of steps (default 510, in sessions of
// invariantStepsPerProgram steps, one program and one seed each).

const (
	invariantStepsPerProgram = 30
	invariantDefaultSteps    = 510
)

// invScript is a concrete session: the initial files, then the steps.
type invScript struct {
	Name  string            `json:"name,omitempty"`
	Seed  uint64            `json:"seed"`
	Files map[string]string `json:"files"`
	Steps []invStep         `json:"steps"`
}

// invStep is one operation of a session, then its run.
type invStep struct {
	// Op is edit, recompute, push or pop.
	Op string `json:"op"`
	// Edit: the file and its full new text (sent as a minimal
	// text/applyEdit; Split sends it as two edits, the first with
	// execute:false); Kind is the generator's name for the edit.
	Path  string `json:"path,omitempty"`
	Text  string `json:"text,omitempty"`
	Kind  string `json:"kind,omitempty"`
	Split bool   `json:"split,omitempty"`
	// Recompute: nil recomputes only what is invalid.
	Invalidate *protocol.InvalidatedExpressions `json:"invalidate,omitempty"`
	// Push: the LocalCall's expression.
	ExpressionID protocol.ExpressionID `json:"expressionId,omitempty"`
	// Interrupt: "" none, "now" right after the call returns, "running"
	// once the run has sent its first expression updates.
	Interrupt string `json:"interrupt,omitempty"`
	// Concurrent (edit): the edit comes from a second client while a
	// recompute "all" of the first client runs (sent once that run has
	// started), so the two overlap.
	Concurrent bool `json:"concurrent,omitempty"`
}

func (s invStep) String() string {
	out := s.Op
	switch s.Op {
	case "edit":
		out += " " + s.Path + " (" + s.Kind + ")"
		if s.Split {
			out += " in two parts"
		}
	case "recompute":
		if s.Invalidate != nil {
			b, _ := json.Marshal(s.Invalidate)
			out += " " + string(b)
		}
	case "push":
		out += " " + string(s.ExpressionID)
	}
	if s.Concurrent {
		out += ", by a second client during a recompute"
	}
	if s.Interrupt != "" {
		out += ", interrupt " + s.Interrupt
	}
	return out
}

func invariantSettings(t *testing.T) (seed uint64, steps int) {
	seed, steps = 1, invariantDefaultSteps
	if v := os.Getenv("RIPPLE_INVARIANT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("RIPPLE_INVARIANT_SEED=%q: %v", v, err)
		}
		seed = n
	}
	if v := os.Getenv("RIPPLE_INVARIANT_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("RIPPLE_INVARIANT_STEPS=%q: want a positive number", v)
		}
		steps = n
	}
	return seed, steps
}

func TestInvariantRandomSessions(t *testing.T) {
	first, total := invariantSettings(t)
	python := findPython(t)
	ref := newReference(t, python)
	checked, interrupted, done := 0, 0, 0
	ops := map[string]int{}
	for seed := first; done < total; seed++ {
		steps := min(invariantStepsPerProgram, total-done)
		s := newInvSession(t, python, ref, seed)
		s.generate(steps)
		checked += s.checked
		interrupted += s.interrupted
		for _, st := range s.script.Steps {
			switch {
			case st.Op == "restart":
				ops["kernel restarts"]++
			case st.Op == "serverRestart":
				ops["server restarts"]++
			case st.Concurrent:
				ops["edits by a second client during a run"]++
			case st.Interrupt != "":
				ops["interrupts"]++
			}
		}
		done += steps
		s.close()
		if t.Failed() {
			return
		}
	}
	t.Logf("%d steps from seed %d: %d compared with a fresh engine, %d interrupted; %v", total, first, checked, interrupted, ops)
	// Interrupted steps are not compared, but most steps must be.
	if checked <= total/2 {
		t.Errorf("only %d of %d steps were compared", checked, total)
	}
}

func TestInvariantRegressions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "invariant", "regressions", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no regression scripts in testdata/invariant/regressions")
	}
	python := findPython(t)
	ref := newReference(t, python)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var script invScript
			if err := json.Unmarshal(raw, &script); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			s := newInvSessionFiles(t, python, ref, script.Seed, script.Files)
			defer s.close()
			for _, step := range script.Steps {
				s.step(step)
				if t.Failed() {
					return
				}
			}
			if s.checked == 0 {
				t.Errorf("%s: no step was compared", f)
			}
		})
	}
}

func findPython(t *testing.T) kernel.Interpreter {
	t.Helper()
	py, err := kernel.FindPython(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return py
}

// generated is gen.py's output.
type generated struct {
	Seed     uint64 `json:"seed"`
	Versions []struct {
		Kind  string            `json:"kind"`
		Files map[string]string `json:"files"`
	} `json:"versions"`
}

func generate(t *testing.T, python kernel.Interpreter, seed uint64, edits int) generated {
	t.Helper()
	cmd := exec.Command(python.Path, filepath.Join("testdata", "invariant", "gen.py"), strconv.FormatUint(seed, 10), strconv.Itoa(edits))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gen.py %d: %v", seed, err)
	}
	var g generated
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatalf("gen.py %d: %v", seed, err)
	}
	return g
}

// frameView is what the IDE holds for one frame of the stack.
type frameView struct {
	item protocol.StackItem
	// function is the frame's "module:qualname": updates of other
	// functions (a superseded run of the frame below, flushed after the
	// push returned) are not this frame's.
	function string
	values   map[protocol.ExpressionID]protocol.ExpressionUpdate
}

// take applies one update sent while f is the top frame; below is the
// function of the frame under f ("" for the bottom frame).
//
// A LocalCall frame is a call of a statement of the frame below, and an
// edit can make that statement call another function (seed 6032: an
// inserted a = helpers.h0(k, n) takes the label main:main/a from
// a = h3(c), so the pushed frame main:main/a now enters h0, in the
// fresh engine as in this one). Updates are sent for the top frame
// (PROTOCOL.md 5.4), so updates of a function that is neither the
// frame's nor the frame below's (a superseded run of it) mean the frame
// now runs that function: the IDE's view of the frame starts over with
// them, as it would for a frame it had just entered.
func (f *frameView) take(u protocol.ExpressionUpdate, below string) {
	fn, _, err := u.ExpressionID.Split()
	if err != nil {
		return
	}
	if name := fn.String(); name != f.function {
		if f.item.Type != protocol.LocalCall || name == below {
			return
		}
		f.function = name
		f.values = map[protocol.ExpressionID]protocol.ExpressionUpdate{}
	}
	f.values[u.ExpressionID] = u
}

// below is the function of the frame under frame i, "" for the bottom one.
func (s *invSession) below(i int) string {
	if i == 0 {
		return ""
	}
	return s.frames[i-1].function
}

// invSession is one random session: an engine with one context and the
// client's view of it.
type invSession struct {
	t      *testing.T
	python kernel.Interpreter
	ref    *reference
	rng    *rand.Rand
	h      *harness
	cfg    engine.Config // of h's engine, and of the next one (serverRestart)
	id     protocol.ContextID
	texts  map[string]string // path -> the buffer's text
	frames []*frameView
	script invScript
	gen    generated
	next   int // next generated version to edit to

	checked, interrupted int
}

// client2 is the second client of a session: it has the files open and
// edits them while the first client's runs are in progress.
const client2 = "test-client-2"

func newInvSession(t *testing.T, python kernel.Interpreter, ref *reference, seed uint64) *invSession {
	t.Helper()
	g := generate(t, python, seed, invariantStepsPerProgram)
	s := newInvSessionFiles(t, python, ref, seed, g.Versions[0].Files)
	s.gen = g
	s.next = 1
	return s
}

func newInvSessionFiles(t *testing.T, python kernel.Interpreter, ref *reference, seed uint64, files map[string]string) *invSession {
	t.Helper()
	// The value journal is on (written right after each run): a kernel
	// restart (restart steps) restores the frame from it.
	cfg := engine.Config{Python: python.Path, Kernels: 1, FlushInterval: time.Millisecond,
		ValueJournal: filepath.Join(t.TempDir(), "values.db"), ValueJournalIdle: -1}
	h := setup(t, files, cfg)
	s := &invSession{
		t: t, python: python, h: h, ref: ref, cfg: cfg,
		rng:    rand.New(rand.NewPCG(seed, 0x5eed)),
		texts:  map[string]string{},
		script: invScript{Seed: seed, Files: files},
	}
	for path := range files {
		text, _ := h.openFile(path)
		s.texts[path] = text
	}
	s.connectClient2()
	res, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	s.id = res.ContextID
	main := protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})
	m := h.client.mark()
	must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: s.id, StackItem: main}))
	s.frames = []*frameView{{item: main, function: "main:main", values: map[protocol.ExpressionID]protocol.ExpressionUpdate{}}}
	s.finishStep(invStep{Op: "push main:main"}, m)
	return s
}

func (s *invSession) close() { s.h.stop() }

// connectClient2 connects the second client and opens the files for it.
func (s *invSession) connectClient2() {
	t, h := s.t, s.h
	if _, err := h.e.Connect(h.ctx, client2, newRecorder()); err != nil {
		t.Fatal(err)
	}
	for path := range s.texts {
		if _, err := h.e.OpenFile(h.ctx, client2, path); err != nil {
			t.Fatal(err)
		}
	}
}

// restartServer stops the engine and starts a new one on the project (the
// buffers saved first: without a state log, the files are what a new
// server has), then builds the context's stack again in a new context:
// the kernel of the new engine restores the bottom frame from the value
// journal. It returns the mark the view starts from and the mark of the
// last push's run.
func (s *invSession) restartServer() (int, int) {
	t, h := s.t, s.h
	for path, text := range s.texts {
		write(t, h.dir, path, text)
	}
	h.stop()
	h.e = enginetest.Start(t, h.dir, s.cfg)
	h.client = newRecorder()
	if _, err := h.e.Connect(h.ctx, clientID, h.client); err != nil {
		t.Fatal(err)
	}
	for path := range s.texts {
		h.openFile(path)
	}
	s.connectClient2()
	res, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	s.id = res.ContextID
	m := h.client.mark()
	last := m
	for i, f := range s.frames {
		mark := h.client.mark()
		if err := h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: s.id, StackItem: f.item}); err != nil {
			// The statement below is not a call any more (an edit changed
			// it under the pushed frame; the old context's runs fail):
			// the new stack ends there.
			t.Logf("server restart: push of %s again: %v; the stack is cut there", f.function, err)
			s.frames = s.frames[:i]
			break
		}
		last = mark
		// What the client holds of the frame is what the new context sent.
		f.values = map[protocol.ExpressionID]protocol.ExpressionUpdate{}
		if i < len(s.frames)-1 {
			run := h.client.waitRun(t, last, s.id)
			waitIdle(t, h.e)
			for _, u := range run.updates {
				f.take(u, s.below(i))
			}
		}
	}
	if len(s.frames) == 0 {
		t.Fatal("server restart: the bottom frame could not be pushed again")
	}
	return m, last
}

// generate runs steps random steps.
func (s *invSession) generate(steps int) {
	for range steps {
		s.step(s.randomStep())
		if s.t.Failed() {
			return
		}
	}
}

// randomStep picks the next operation (the mix of the Python test: edits
// most often, then recomputes, stack changes and interrupted runs).
func (s *invSession) randomStep() invStep {
	r := s.rng
	roll := r.Float64()
	switch {
	case roll < 0.04:
		return invStep{Op: "restart"}
	case roll < 0.06:
		return invStep{Op: "serverRestart"}
	case roll < 0.12:
		st := s.randomEdit()
		st.Concurrent = st.Op == "edit"
		return st
	case roll < 0.45:
		return s.randomEdit()
	case roll < 0.6:
		return s.randomRecompute()
	case roll < 0.75:
		top := s.frames[len(s.frames)-1]
		var calls []protocol.ExpressionID
		for id, u := range top.values {
			if u.MethodCall != nil && u.Payload.Type == protocol.PayloadValue {
				calls = append(calls, id)
			}
		}
		slices.Sort(calls)
		if len(calls) > 0 && len(s.frames) < 3 && r.Float64() < 0.7 {
			return invStep{Op: "push", ExpressionID: calls[r.IntN(len(calls))]}
		}
		if len(s.frames) > 1 {
			return invStep{Op: "pop"}
		}
		return s.randomRecompute()
	case roll < 0.9:
		var st invStep
		if r.Float64() < 0.5 {
			st = s.randomEdit()
		} else {
			st = invStep{Op: "recompute", Invalidate: protocol.InvalidateAll()}
		}
		st.Interrupt = "running"
		if r.Float64() < 0.3 {
			st.Interrupt = "now"
		}
		return st
	default:
		if len(s.frames) > 1 {
			return invStep{Op: "pop"}
		}
		return s.randomRecompute()
	}
}

func (s *invSession) randomRecompute() invStep {
	r := s.rng
	choice := r.Float64()
	switch {
	case choice < 0.3:
		return invStep{Op: "recompute"}
	case choice < 0.5:
		return invStep{Op: "recompute", Invalidate: protocol.InvalidateAll()}
	}
	ids := slices.Sorted(maps.Keys(s.frames[len(s.frames)-1].values))
	if len(ids) == 0 {
		return invStep{Op: "recompute"}
	}
	n := min(len(ids), 1+r.IntN(3))
	inv := &protocol.InvalidatedExpressions{}
	for _, i := range r.Perm(len(ids))[:n] {
		inv.IDs = append(inv.IDs, ids[i])
	}
	return invStep{Op: "recompute", Invalidate: inv}
}

// randomEdit moves to the next generated program version.
func (s *invSession) randomEdit() invStep {
	for s.next < len(s.gen.Versions) {
		v := s.gen.Versions[s.next]
		s.next++
		for _, path := range slices.Sorted(maps.Keys(v.Files)) {
			if v.Files[path] != s.texts[path] {
				return invStep{Op: "edit", Path: path, Text: v.Files[path], Kind: v.Kind, Split: s.rng.Float64() < 0.2}
			}
		}
	}
	// The generated edits are used up (or made no change): recompute.
	return invStep{Op: "recompute", Invalidate: protocol.InvalidateAll()}
}

// step applies one operation, waits for its run to end and for the engine
// to be idle, applies the notifications to the view and, unless the run
// was interrupted, compares the view with a fresh engine.
func (s *invSession) step(st invStep) {
	t, h := s.t, s.h
	t.Helper()
	m := h.client.mark()
	runMark := m
	switch st.Op {
	case "edit":
		if st.Concurrent {
			// The first client's recompute runs; the second client's edit
			// lands in it.
			must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: s.id, InvalidatedExpressions: protocol.InvalidateAll()}))
			h.client.waitFrom(t, m, "the recompute to start", func(n note) bool {
				p, ok := n.Params.(protocol.ExpressionUpdatesParams)
				return ok && p.ContextID == s.id || isEnd(s.id)(n)
			})
			runMark = h.client.mark()
		}
		s.edit(st)
	case "restart":
		// runtime/restartKernel: a new kernel. The engine recomputes the
		// contexts on it, but not always (seen: kernelRestarted and no run,
		// 1 in ~2,000 steps), so the client asks for a recompute too and
		// the view is compared after both.
		must(t, h.e.RestartKernel(h.ctx, clientID, s.id))
		must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: s.id}))
	case "serverRestart":
		m, runMark = s.restartServer()
		h = s.h
	case "recompute":
		must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: s.id, InvalidatedExpressions: st.Invalidate}))
	case "push":
		top := s.frames[len(s.frames)-1]
		u, ok := top.values[st.ExpressionID]
		if !ok || u.MethodCall == nil {
			t.Logf("step %d: %s: the client holds no call there now; skipped", len(s.script.Steps), st)
			return
		}
		item := protocol.NewLocalCall(st.ExpressionID)
		must(t, h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: s.id, StackItem: item}))
		s.frames = append(s.frames, &frameView{item: item, function: u.MethodCall.MethodPointer.String(),
			values: map[protocol.ExpressionID]protocol.ExpressionUpdate{}})
	case "pop":
		if len(s.frames) < 2 {
			// Its push was skipped (an exception ended the frame before
			// the call, PROTOCOL.md 8.1): popping the base frame would
			// leave nothing to run.
			t.Logf("step %d: pop: no call was pushed; skipped", len(s.script.Steps))
			return
		}
		must(t, h.e.Pop(h.ctx, clientID, s.id))
		s.frames = s.frames[:len(s.frames)-1]
	default:
		t.Fatalf("unknown step %q", st.Op)
	}
	switch st.Interrupt {
	case "now":
		must(t, h.e.Interrupt(h.ctx, clientID, s.id))
	case "running":
		h.client.waitFrom(t, m, "the run to start", func(n note) bool {
			p, ok := n.Params.(protocol.ExpressionUpdatesParams)
			return ok && p.ContextID == s.id || isEnd(s.id)(n)
		})
		must(t, h.e.Interrupt(h.ctx, clientID, s.id))
	}
	s.script.Steps = append(s.script.Steps, st)
	s.finishStepFrom(st, m, runMark)
}

// edit sends an edit step as text/applyEdit: the smallest replacement that
// turns the buffer into the new text, or that replacement in two parts
// (insert the new text with execute:false, then delete the old).
func (s *invSession) edit(st invStep) {
	t, h := s.t, s.h
	old := s.texts[st.Path]
	start, oldEnd, newEnd := diffRunes(old, st.Text)
	oldRunes, newRunes := []rune(old), []rune(st.Text)
	startPos := positionAt(oldRunes, start)
	insert := string(newRunes[start:newEnd])
	apply := func(text string, edit protocol.TextEdit, execute bool) string {
		next := applyTextEdit(text, edit)
		who := clientID
		if st.Concurrent {
			who = client2
		}
		must(t, h.e.ApplyEdit(h.ctx, who, protocol.ApplyEditParams{Execute: execute, Edit: protocol.FileEdit{
			Path: protocol.Path(st.Path), Edits: []protocol.TextEdit{edit},
			OldVersion: versionOf(text), NewVersion: versionOf(next)}}))
		return next
	}
	if st.Split && insert != "" && oldEnd > start {
		mid := apply(old, protocol.TextEdit{Range: protocol.Range{Start: startPos, End: startPos}, Text: insert}, false)
		// The old text now starts after the insert.
		midRunes := []rune(mid)
		from := start + len([]rune(insert))
		to := from + (oldEnd - start)
		s.texts[st.Path] = apply(mid, protocol.TextEdit{Range: protocol.Range{
			Start: positionAt(midRunes, from), End: positionAt(midRunes, to)}}, true)
	} else {
		s.texts[st.Path] = apply(old, protocol.TextEdit{Range: protocol.Range{Start: startPos, End: positionAt(oldRunes, oldEnd)}, Text: insert}, true)
	}
	if s.texts[st.Path] != st.Text {
		t.Fatalf("edit of %s: the buffer is not the generated text", st.Path)
	}
}

// finishStep waits for the end of the step's run and for the engine to be
// idle, applies the step's notifications to the view and compares.
func (s *invSession) finishStep(st invStep, m int) { s.finishStepFrom(st, m, m) }

// finishStepFrom is finishStep where the step's own run ends after the
// mark runMark (an earlier run, the one a concurrent edit landed in, may
// end first); the view takes every notification from m on. The outcome
// compared is the last run's of the context once the engine is idle.
func (s *invSession) finishStepFrom(st invStep, m, runMark int) {
	t, h := s.t, s.h
	t.Helper()
	run := h.client.waitRun(t, runMark, s.id)
	waitIdle(t, h.e)
	if runMark != m {
		run = lastRun(h.client, runMark, s.id)
	}
	end := h.client.mark()
	h.client.mu.Lock()
	notes := slices.Clone(h.client.notes[m:end])
	h.client.mu.Unlock()
	top := s.frames[len(s.frames)-1]
	for _, n := range notes {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		if !ok || p.ContextID != s.id {
			continue
		}
		for _, u := range p.Updates {
			top.take(u, s.below(len(s.frames)-1))
		}
	}
	if run.failed != nil && run.failed.Kind == protocol.ResultInterrupted {
		s.interrupted++
		return
	}
	s.compare(st, run.failed)
}

// lastRun is the outcome of the last run of id that ended after mark from.
func lastRun(r *recorder, from int, id protocol.ContextID) *runResult {
	r.mu.Lock()
	notes := slices.Clone(r.notes[from:])
	r.mu.Unlock()
	rr := &runResult{}
	for _, n := range notes {
		switch p := n.Params.(type) {
		case protocol.ExecutionCompleteParams:
			if p.ContextID == id {
				rr.failed = nil
			}
		case protocol.ExecutionFailedParams:
			if p.ContextID == id {
				res := p.Result
				rr.failed = &res
			}
		}
	}
	return rr
}

// waitIdle waits until the engine's queue has nothing pending or running.
func waitIdle(t testing.TB, e *engine.Engine) {
	t.Helper()
	var last protocol.RuntimeStatusResult
	if !testenv.Poll(testenv.Deadline(t), func() bool {
		st, err := e.Status(context.Background())
		must(t, err)
		last = st
		return st.Queue.Pending == 0 && st.Queue.Running == 0
	}) {
		t.Fatalf("engine not idle: %+v", last.Queue)
	}
}

// compare checks the client's view of the top frame against a fresh engine.
func (s *invSession) compare(st invStep, failed *protocol.ExecutionResult) {
	t := s.t
	t.Helper()
	stack := make([]protocol.StackItem, len(s.frames))
	for i, f := range s.frames {
		stack[i] = f.item
	}
	fresh := s.ref.run(t, s.texts, stack)
	s.checked++
	var problems []string
	switch {
	case fresh.refused != "":
		// The fresh engine cannot even enter the frame: the incremental run
		// must have failed to (a failure, or the module's compile error
		// when an edit broke it under a pushed frame).
		if failed == nil || failed.Kind != protocol.ResultFailure && failed.Kind != protocol.ResultCompileError {
			problems = append(problems, fmt.Sprintf("fresh engine refused the stack (%s); incremental run ended %s", fresh.refused, resultString(failed)))
		}
	case resultString(failed) != resultString(fresh.failed):
		problems = append(problems, fmt.Sprintf("result: incremental %s, fresh %s", resultString(failed), resultString(fresh.failed)))
	case failed == nil:
		top := s.frames[len(s.frames)-1]
		for _, id := range slices.Sorted(maps.Keys(fresh.values)) {
			want := viewString(fresh.values[id])
			have := "(nothing)"
			if u, ok := top.values[id]; ok {
				have = viewString(u)
			}
			if have != want {
				problems = append(problems, fmt.Sprintf("%s: client holds %s, fresh %s", id, have, want))
			}
		}
	}
	if len(problems) == 0 {
		return
	}
	path := filepath.Join("testdata", "invariant", fmt.Sprintf("failure-seed-%d.json", s.script.Seed))
	raw, _ := json.MarshalIndent(s.script, "", " ")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Logf("write %s: %v", path, err)
	}
	t.Errorf("invariant violated: seed %d, step %d (%s); script written to %s (copy it into testdata/invariant/regressions to keep it; "+
		"or run the seed again: RIPPLE_INVARIANT_SEED=%d RIPPLE_INVARIANT_STEPS=%d go test -run TestInvariantRandomSessions ./engine/)\n%s",
		s.script.Seed, len(s.script.Steps), st, path, s.script.Seed, invariantStepsPerProgram, strings.Join(problems, "\n"))
}

var hexAddress = regexp.MustCompile(` at 0x[0-9a-f]+`)

// viewString is what the invariant compares of an update.
func viewString(u protocol.ExpressionUpdate) string {
	var b strings.Builder
	switch u.Payload.Type {
	case protocol.PayloadValue:
		fmt.Fprintf(&b, "Value %s %s", u.Type, hexAddress.ReplaceAllString(u.Payload.Preview, " at 0x?"))
	case protocol.PayloadPanic:
		fmt.Fprintf(&b, "Panic %q trace %v", u.Payload.Message, u.Payload.Trace)
	default:
		fmt.Fprintf(&b, "%s %q", u.Payload.Type, u.Payload.Message)
	}
	if u.MethodCall != nil {
		fmt.Fprintf(&b, " methodCall %s", u.MethodCall.MethodPointer)
	}
	if u.Range != nil {
		fmt.Fprintf(&b, " at %d:%d-%d:%d", u.Range.Start.Line, u.Range.Start.Character, u.Range.End.Line, u.Range.End.Character)
	}
	return b.String()
}

func resultString(r *protocol.ExecutionResult) string {
	if r == nil {
		return "complete"
	}
	return fmt.Sprintf("failed %s: %s", r.Kind, r.Message)
}

// freshResult is what a fresh engine reports for a stack.
type freshResult struct {
	refused string // a push of the stack was refused (why)
	failed  *protocol.ExecutionResult
	values  map[protocol.ExpressionID]protocol.ExpressionUpdate // the top frame
}

// reference is the engine the invariant compares with. Each comparison is
// a fresh run: the reference's project files are set to the current
// sources, its kernel is restarted (a new Python process: no module, value
// or cache survives; the warm spare makes this cheap) and a new context
// runs the stack from scratch. Only the Go side of the reference engine is
// kept between comparisons, which costs a kernel start per comparison
// instead of an engine start (two kernels: the slot and the spare).
type reference struct {
	h     *harness
	files map[string]string // what its project holds
}

func newReference(t *testing.T, python kernel.Interpreter) *reference {
	t.Helper()
	h := setup(t, nil, engine.Config{Python: python.Path, Kernels: 1, FlushInterval: time.Millisecond})
	return &reference{h: h, files: map[string]string{}}
}

// run runs the stack on files from scratch.
func (r *reference) run(t *testing.T, files map[string]string, stack []protocol.StackItem) freshResult {
	t.Helper()
	h := r.h
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if text, ok := r.files[path]; !ok || text != files[path] {
			must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: protocol.Path(path), Contents: files[path]}))
			r.files[path] = files[path]
		}
	}
	res, err := h.e.CreateContext(h.ctx, clientID, protocol.CreateContextParams{})
	must(t, err)
	id := res.ContextID
	defer func() { must(t, h.e.DestroyContext(h.ctx, clientID, id)) }()
	before := kernelPID(t, h.e, 0)
	must(t, h.e.RestartKernel(h.ctx, clientID, id))
	if after := kernelPID(t, h.e, 0); after == before {
		t.Fatalf("reference kernel not replaced by the restart: pid %d", after)
	}
	var out freshResult
	function := ""
	for depth, item := range stack {
		m := h.client.mark()
		if item.Type == protocol.ExplicitCall {
			function = item.MethodPointer.String()
		} else {
			u, ok := out.values[item.ExpressionID]
			if !ok || u.MethodCall == nil {
				out.refused = fmt.Sprintf("%s at depth %d is not a call of a project function", item.ExpressionID, depth)
				return out
			}
			function = u.MethodCall.MethodPointer.String()
		}
		if err := h.e.Push(h.ctx, clientID, protocol.PushParams{ContextID: id, StackItem: item}); err != nil {
			out.refused = err.Error()
			return out
		}
		run := h.client.waitRun(t, m, id)
		out.failed = run.failed
		out.values = map[protocol.ExpressionID]protocol.ExpressionUpdate{}
		for _, u := range run.updates {
			if fn, _, err := u.ExpressionID.Split(); err == nil && fn.String() == function {
				out.values[u.ExpressionID] = u
			}
		}
		if run.failed != nil && depth < len(stack)-1 {
			out.refused = fmt.Sprintf("the run at depth %d failed: %s", depth, resultString(run.failed))
			return out
		}
	}
	return out
}

// diffRunes returns the smallest replacement turning a into b: a[start:aEnd]
// becomes b[start:bEnd] (indices in runes).
func diffRunes(a, b string) (start, aEnd, bEnd int) {
	ar, br := []rune(a), []rune(b)
	for start < len(ar) && start < len(br) && ar[start] == br[start] {
		start++
	}
	aEnd, bEnd = len(ar), len(br)
	for aEnd > start && bEnd > start && ar[aEnd-1] == br[bEnd-1] {
		aEnd--
		bEnd--
	}
	return start, aEnd, bEnd
}

// positionAt is the Position of rune offset off.
func positionAt(text []rune, off int) protocol.Position {
	var p protocol.Position
	for _, r := range text[:off] {
		if r == '\n' {
			p.Line++
			p.Character = 0
		} else {
			p.Character++
		}
	}
	return p
}

// applyTextEdit applies one edit as the protocol defines it (code points).
func applyTextEdit(text string, e protocol.TextEdit) string {
	r := []rune(text)
	offset := func(p protocol.Position) int {
		line, i := 0, 0
		for i < len(r) && line < p.Line {
			if r[i] == '\n' {
				line++
			}
			i++
		}
		return i + p.Character
	}
	return string(r[:offset(e.Range.Start)]) + e.Text + string(r[offset(e.Range.End):])
}

// stop stops the engine now (Stop is idempotent: the cleanup's call is a
// no-op afterwards).
func (h *harness) stop() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.e.Stop(ctx); err != nil {
		h.t.Errorf("stop: %v", err)
	}
}

// kernelPID is the pid of slot's kernel (runtime/status).
func kernelPID(t testing.TB, e *engine.Engine, slot int) int {
	t.Helper()
	st, err := e.Status(context.Background())
	must(t, err)
	for _, k := range st.Kernels {
		if k.ID == slot {
			return k.PID
		}
	}
	t.Fatalf("runtime/status has no kernel %d: %+v", slot, st.Kernels)
	return 0
}
