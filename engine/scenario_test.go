package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// The acceptance scenarios (enginetest.Scenarios) driven through the
// engine's Go API against a real kernel; tests/scenarios_test.go drives
// the same table over a WebSocket.
func TestScenarios(t *testing.T) {
	enginetest.RunScenarios(t, func(t *testing.T, files map[string]string) enginetest.Driver {
		return &apiDriver{h: setup(t, files, engine.Config{})}
	})
}

// apiDriver is an enginetest.Driver on the engine's Go API. A wait looks
// at the notifications from the mark taken before the last call.
type apiDriver struct {
	h    *harness
	mark int
}

func (d *apiDriver) do(err error) {
	d.h.t.Helper()
	must(d.h.t, err)
}

// marked takes the mark for the waits that follow a call.
func (d *apiDriver) marked() *apiDriver {
	d.mark = d.h.client.mark()
	return d
}

func (d *apiDriver) NewContext(pointer string) (protocol.ContextID, *enginetest.Run) {
	d.h.t.Helper()
	id := d.StartContext(pointer)
	return id, d.WaitRun(id)
}

func (d *apiDriver) StartContext(pointer string) protocol.ContextID {
	d.h.t.Helper()
	id, m := d.h.startContext(pointer)
	d.mark = m
	return id
}

func (d *apiDriver) Recompute(p protocol.RecomputeParams) {
	d.marked().do(d.h.e.Recompute(d.h.ctx, clientID, p))
}

func (d *apiDriver) Push(p protocol.PushParams) {
	d.marked().do(d.h.e.Push(d.h.ctx, clientID, p))
}

func (d *apiDriver) Pop(id protocol.ContextID) {
	d.marked().do(d.h.e.Pop(d.h.ctx, clientID, id))
}

func (d *apiDriver) Interrupt(id protocol.ContextID) {
	// The run the interrupt ends started before it: no new mark.
	d.do(d.h.e.Interrupt(d.h.ctx, clientID, id))
}

func (d *apiDriver) AttachVisualization(p protocol.AttachVisualizationParams) {
	d.marked().do(d.h.e.AttachVisualization(d.h.ctx, clientID, p))
}

func (d *apiDriver) DetachVisualization(p protocol.DetachVisualizationParams) {
	d.marked().do(d.h.e.DetachVisualization(d.h.ctx, clientID, p))
}

func (d *apiDriver) ExecuteExpression(p protocol.ExecuteExpressionParams) {
	d.marked().do(d.h.e.ExecuteExpression(d.h.ctx, clientID, p))
}

func (d *apiDriver) SetText(path, text string) {
	d.h.t.Helper()
	d.marked().h.setText(path, text)
}

func (d *apiDriver) WaitRun(id protocol.ContextID) *enginetest.Run {
	d.h.t.Helper()
	run := &enginetest.Run{}
	for _, n := range d.h.client.waitRun(d.h.t, d.mark, id).notes {
		run.Add(id, n.Method, n.Params)
	}
	return run
}

func (d *apiDriver) WaitValue(id protocol.ContextID, expr protocol.ExpressionID) {
	d.h.t.Helper()
	d.h.client.waitFrom(d.h.t, d.mark, string(expr)+" computed", func(n note) bool {
		p, ok := n.Params.(protocol.ExpressionUpdatesParams)
		return ok && p.ContextID == id && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == expr && u.Payload.Type == protocol.PayloadValue
		})
	})
}

// scenario starts the scenario project with main's body (the base body
// when none is given) and runs main:main once.
func scenario(t *testing.T, body ...string) (*harness, protocol.ContextID, *runResult) {
	t.Helper()
	h := setup(t, map[string]string{"main.py": mainWith(body...), "helper.py": scenarioHelper}, engine.Config{})
	id, run := h.newContext("main:main")
	return h, id, run
}

// visualizations returns the visualization data and failures in notes.
func visualizations(notes []note) (data []string, failed []string) {
	for _, n := range notes {
		switch p := n.Params.(type) {
		case protocol.VisualizationUpdateParams:
			data = append(data, string(p.Data))
		case protocol.VisualizationEvaluationFailedParams:
			failed = append(failed, p.Message)
		}
	}
	return
}

// An edit made with execute:false is compiled by the next recompute,
// although the recompute itself names only the bottom frame's module.
func TestDeferredEditRunsOnRecompute(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	_, v := h.openFile("helper.py")
	text := "def foo(a, b):\n    c = a * b * 10\n    return c\n"
	m := h.client.mark()
	must(t, h.e.ApplyEdit(h.ctx, clientID, protocol.ApplyEditParams{Execute: false, Edit: protocol.FileEdit{
		Path: "helper.py", Edits: []protocol.TextEdit{{Range: protocol.Range{End: endOf(scenarioHelper)}, Text: text}},
		OldVersion: v, NewVersion: versionOf(text)}}))
	must(t, h.e.Recompute(h.ctx, clientID, protocol.RecomputeParams{ContextID: id}))
	run := h.client.waitRun(t, m, id)
	expect(t, "y", run.updates.Values()["main:main/y"], "300")
}

// A visualization of a label the function does not have is refused with
// 2008 naming it (PROTOCOL.md 7.6) once the frame's expressions are known.
func TestVisualizationOfUnknownExpression(t *testing.T) {
	t.Parallel()
	h, id, _ := scenario(t)
	err := h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{
		VisualizationID: protocol.VisualizationID(protocol.NewContextID()), ExpressionID: "main:main/nope",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v"}})
	if pe := engine.ProtocolError(err); pe == nil || pe.Code != protocol.CodeExpressionNotFound || !strings.Contains(pe.Message, "main:main/nope") {
		t.Errorf("attach of main:main/nope: %v, want 2008 naming it", err)
	}
}

// file/event reports the engine's own writes too (PROTOCOL.md 4: "from any
// source"): file/write of a new and an existing file, text/save, delete.
func TestFileEventsForOwnWrites(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper, "data/a.txt": "a"}, engine.Config{})
	events := func(from int) []string {
		var out []string
		h.client.mu.Lock()
		defer h.client.mu.Unlock()
		for _, n := range h.client.notes[from:] {
			if p, ok := n.Params.(protocol.FileEventParams); ok {
				out = append(out, string(p.Kind)+" "+string(p.Path))
			}
		}
		return out
	}
	m := h.client.mark()
	must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "notes.txt", Contents: "hi"}))
	must(t, h.e.WriteFile(h.ctx, clientID, protocol.FileWriteParams{Path: "notes.txt", Contents: "hi again"}))
	h.setText("helper.py", "def foo(a, b):\n    return a\n")
	_, v := h.openFile("helper.py")
	must(t, h.e.SaveFile(h.ctx, clientID, protocol.SaveParams{Path: "helper.py", CurrentVersion: v}))
	must(t, h.e.DeleteFile(h.ctx, clientID, "data"))
	expect(t, "file events", events(m), []string{"Added notes.txt", "Modified notes.txt", "Modified helper.py", "Removed data/a.txt"})
}
