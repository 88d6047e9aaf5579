package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// Automatic and explicit runs (PROTOCOL.md 8.2), as the kernel sees them:
// the effects of each execute request the engine sends, for each way a
// run comes about, against real kernels.

// effectsLauncher is the local launcher, recording the effects field of
// every execute request, by context, in order.
type effectsLauncher struct {
	mu      sync.Mutex
	effects map[protocol.ContextID][]string // guarded by mu
}

func newEffectsLauncher() *effectsLauncher {
	return &effectsLauncher{effects: map[protocol.ContextID][]string{}}
}

func (*effectsLauncher) Name() string { return protocol.LauncherLocal }

func (l *effectsLauncher) Kernels(cfg kernel.PoolConfig) engine.Kernels {
	return &effectsKernels{Kernels: engine.LocalLauncher{}.Kernels(cfg), l: l}
}

// requests returns the effects of context id's execute requests so far.
func (l *effectsLauncher) requests(id protocol.ContextID) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.effects[id]...)
}

// last returns the effects of context id's last execute request.
func (l *effectsLauncher) last(t testing.TB, id protocol.ContextID) string {
	t.Helper()
	rs := l.requests(id)
	if len(rs) == 0 {
		t.Fatalf("no execute request of context %s", id)
	}
	return rs[len(rs)-1]
}

type effectsKernels struct {
	engine.Kernels
	l *effectsLauncher
}

func (k *effectsKernels) Call(ctx context.Context, slot int, method string, params any, sink kernel.Sink) (json.RawMessage, error) {
	if method == "execute" {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		var p struct {
			ContextID protocol.ContextID `json:"contextId"`
			Effects   *string            `json:"effects"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, err
		}
		effects := "(absent)"
		if p.Effects != nil {
			effects = *p.Effects
		}
		k.l.mu.Lock()
		k.l.effects[p.ContextID] = append(k.l.effects[p.ContextID], effects)
		k.l.mu.Unlock()
	}
	return k.Kernels.Call(ctx, slot, method, params, sink)
}

const policyMain = "def main():\n    x = 1\n    return x\n"

// policyBody is main.py with x set to n: each edit changes the text.
func policyBody(n string) string { return strings.Replace(policyMain, "x = 1", "x = "+n, 1) }

// Typing holds, every command allows, setRunPolicy decides for the
// automatic runs of a context or of a client's contexts.
func TestRunKindDecidesEffects(t *testing.T) {
	t.Parallel()
	l := newEffectsLauncher()
	h := setup(t, map[string]string{"main.py": policyMain}, engine.Config{Watch: true, Launcher: l})
	id, first := h.newContext("main:main")
	if first.failed != nil {
		t.Fatalf("first run: %s", resultString(first.failed))
	}
	expect(t, "push", l.last(t, id), "allow")

	step := func(what, want string, act func()) {
		t.Helper()
		m := h.client.mark()
		act()
		if run := h.client.waitRun(t, m, id); run.failed != nil {
			t.Fatalf("%s: %s", what, resultString(run.failed))
		}
		expect(t, what, l.last(t, id), want)
	}
	step("typing", "hold", func() { h.setText("main.py", policyBody("2")) })
	step("recompute", "allow", func() {
		must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id}))
	})
	must(t, h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{ContextID: id, Effects: protocol.EffectsAllow}))
	step("typing under policy allow", "allow", func() { h.setText("main.py", policyBody("3")) })
	must(t, h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{ContextID: id, Effects: protocol.EffectsHold}))
	step("typing under policy hold again", "hold", func() { h.setText("main.py", policyBody("4")) })
	step("a visualization", "allow", func() {
		must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: protocol.NewVisualizationID(),
			ExpressionID: "main:main/x", VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}}))
	})

	// A client's file/write is a command; so is a change on disk (ripple
	// watch, an editor's save), seen by the watcher.
	_, version := h.openFile("main.py")
	must(t, h.e.SaveFile(h.ctx, clientID, protocol.SaveParams{Path: "main.py", CurrentVersion: version}))
	must(t, h.e.CloseFile(h.ctx, clientID, "main.py"))
	step("file/write", "allow", func() {
		must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "main.py", Contents: policyBody("5")}))
	})
	step("a change on disk", "allow", func() { write(t, h.dir, "main.py", policyBody("6")) })

	// The session's default reaches the contexts without a policy of
	// their own (a context created now), not the one that has its own.
	must(t, h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{Effects: protocol.EffectsAllow}))
	other, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("main.py", policyBody("7"))
	h.client.waitRun(t, m, id)
	h.client.waitRun(t, m, other)
	expect(t, "typing, context with its own hold", l.last(t, id), "hold")
	expect(t, "typing, context under the session's allow", l.last(t, other), "allow")
}

// runtime/setRunPolicy's errors: an unknown context, a policy that is
// neither hold nor allow; both name what is at fault.
func TestSetRunPolicyErrors(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": policyMain}, engine.Config{})
	unknown := protocol.NewContextID()
	err := h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{ContextID: unknown, Effects: protocol.EffectsAllow})
	pe := engine.ProtocolError(err)
	if pe == nil || pe.Code != protocol.CodeContextNotFound || !strings.Contains(pe.Message, string(unknown)) {
		t.Errorf("unknown context: %v, want 2002 naming %s", pe, unknown)
	}
	id, _ := h.newContext("main:main")
	err = h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{ContextID: id, Effects: "live"})
	pe = engine.ProtocolError(err)
	if pe == nil || pe.Code != protocol.CodeInvalidParams || !strings.Contains(pe.Message, "params.effects") || !strings.Contains(pe.Message, `"live"`) {
		t.Errorf("bad effects: %v, want -32602 naming params.effects and the value", pe)
	}
	if err := h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{Effects: ""}); err == nil {
		t.Error("an empty session policy was accepted")
	}
}

// A re-run the engine asks on its own keeps the kind of the run it
// replaces: the kernel dies in a run that typing caused, and the re-run
// still holds; after runtime/restartKernel, the re-run is explicit.
func TestRerunKeepsTheRunKind(t *testing.T) {
	t.Parallel()
	l := newEffectsLauncher()
	h := setup(t, map[string]string{"main.py": policyMain}, engine.Config{Launcher: l})
	id, _ := h.newContext("main:main")

	m := h.client.mark()
	h.setText("main.py", strings.Replace(dieOnceMain, "y = x + 1", "y = x + 5", 1))
	h.client.waitFrom(t, m, "executionFailed kernelDied", isFailed(id, protocol.ResultKernelDied))
	h.client.waitFrom(t, m, "the re-run to complete", isComplete(id))
	rs := l.requests(id)
	expect(t, "the typing's run and its re-run after the crash", rs[len(rs)-2:], []string{"hold", "hold"})

	m = h.client.mark()
	must(t, h.e.RestartKernel(h.ctx, clientID, id))
	h.client.waitFrom(t, m, "the run after the restart", isComplete(id))
	waitIdle(t, h.e)
	expect(t, "the re-run after runtime/restartKernel", l.last(t, id), "allow")
}

// Contexts restored after a server restart run automatically (they hold
// effects), unless their own policy, kept in the state log, says allow.
func TestRestoredContextsRunAutomatically(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	enginetest.WriteFiles(t, dir, map[string]string{"main.py": policyMain})
	sl, _, err := durable.Open(filepath.Join(dir, ".ripple"), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sl.Close()
	ctx := context.Background()
	e1 := enginetest.Start(t, dir, engine.Config{StateLog: sl})
	rec := newRecorder()
	must(t, firstErr(e1.Connect(ctx, clientID, rec)))
	h := &harness{t: t, e: e1, dir: dir, client: rec, ctx: ctx}
	held, _ := h.newContext("main:main")
	live, _ := h.newContext("main:main")
	must(t, e1.SetRunPolicy(ctx, clientID, protocol.SetRunPolicyParams{ContextID: live, Effects: protocol.EffectsAllow}))
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	must(t, e1.Stop(sctx))

	st, err := sl.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := newEffectsLauncher()
	e2 := enginetest.Start(t, dir, engine.Config{StateLog: sl, Launcher: l})
	if restored, err := e2.RestoreContexts(st); err != nil || len(restored) != 2 {
		t.Fatalf("restored %v, %v; want both contexts", restored, err)
	}
	waitIdle(t, e2)
	expect(t, "the restored run of a context under hold", l.requests(held), []string{"hold"})
	expect(t, "the restored run of a context with its own allow", l.requests(live), []string{"allow"})
	if err := e2.SetRunPolicy(ctx, clientID, protocol.SetRunPolicyParams{ContextID: live, Effects: protocol.EffectsHold}); errors.Is(err, engine.ErrNotStarted) || err != nil {
		t.Errorf("setRunPolicy on a restored context: %v", err)
	}
}

// A client's default survives a reconnect within the disconnect grace.
func TestSessionPolicySurvivesReconnect(t *testing.T) {
	t.Parallel()
	l := newEffectsLauncher()
	h := setup(t, map[string]string{"main.py": policyMain}, engine.Config{Launcher: l})
	must(t, h.e.SetRunPolicy(h.ctx, clientID, protocol.SetRunPolicyParams{Effects: protocol.EffectsAllow}))
	h.e.Disconnect(clientID, h.client)
	h.client = newRecorder()
	must(t, firstErr(h.e.Connect(h.ctx, clientID, h.client)))
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	h.setText("main.py", policyBody("2"))
	h.client.waitRun(t, m, id)
	expect(t, "typing after the reconnect", l.last(t, id), "allow")
}
