package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

const provenanceMain = `import ripple


def first():
    x = 6
    print("first ran")
    ripple.display(x)
    y = x * 2


def second():
    a = 5
    print("second ran")
    ripple.display(a)
    b = a / 0
`

// provenanceMethods are the notifications that carry kernelId
// (PROTOCOL.md 7.5).
var provenanceMethods = []string{
	protocol.NotifyExpressionUpdates, protocol.NotifyOutput, protocol.NotifyDisplayData,
	protocol.NotifyVisualizationUpdate, protocol.NotifyVisualizationEvaluationFailed,
	protocol.NotifyExecutionComplete, protocol.NotifyExecutionFailed,
}

// Provenance over the wire (PROTOCOL.md 7.5): two kernels, two contexts,
// one on each; every notification of a context carries the kernelId that
// runtime/status lists the context under, and runtime/status names each
// kernel's launcher and lists no agents.
func TestProvenanceKernelIDs(t *testing.T) {
	t.Parallel()
	s := serveProject(t, map[string]string{"main.py": provenanceMain}, engine.Config{Kernels: 2})
	c, _ := connect(t, s.url, "ide")

	var messages []servertest.Message
	a, r := c.newContext("main:first")
	messages = append(messages, r.messages...)
	if r.failed != nil {
		t.Fatalf("first failed: %+v", r.failed)
	}
	b, r := c.newContext("main:second")
	messages = append(messages, r.messages...)
	if r.failed != nil {
		t.Fatalf("second failed: %+v", r.failed)
	}
	// A visualization that works on a's kernel, one that raises on b's.
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:first/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: a, Expression: "lambda v: v * 2"}}, nil)
	r = c.waitRun(a)
	messages = append(messages, r.messages...)
	expect(t, "a's visualization data", r.visData, []string{"12"})
	c.call(protocol.MethodAttachVisualization, protocol.AttachVisualizationParams{VisualizationID: protocol.NewVisualizationID(), ExpressionID: "main:second/a",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: b, Expression: "lambda v: v / 0"}}, nil)
	r = c.waitRun(b)
	messages = append(messages, r.messages...)
	if len(r.visFail) != 1 {
		t.Fatalf("b's visualization: got failures %v, want one", r.visFail)
	}

	// A's kernel is replaced: the re-run is on the new kernel of the same
	// slot, so its kernelId does not change (runtime/kernelRestarted names
	// it too).
	c.call(protocol.MethodRestartKernel, protocol.RestartKernelParams{ContextID: a}, nil)
	r = c.waitRun(a)
	messages = append(messages, r.messages...)
	if r.failed != nil {
		t.Fatalf("a's re-run after the restart failed: %+v", r.failed)
	}
	restarted := -1
	for _, m := range r.messages {
		if m.IsNotification() && m.Method == protocol.NotifyKernelRestarted {
			var p protocol.KernelRestartedParams
			mustDecode(t, m.Params, &p)
			if slices.Contains(p.ContextIDs, a) {
				restarted = p.KernelID
			}
		}
	}

	// A syntax error fails the next run of both, each on its kernel.
	c.setText("main.py", provenanceMain+"\ndef broken(:\n")
	failed := map[protocol.ContextID]bool{}
	for len(failed) < 2 {
		m, err := c.c.Next(stepCtx(t))
		if err != nil {
			t.Fatalf("waiting for executionFailed of both contexts (got %v): %v", failed, err)
		}
		messages = append(messages, m)
		if m.IsNotification() && m.Method == protocol.NotifyExecutionFailed {
			var p protocol.ExecutionFailedParams
			mustDecode(t, m.Params, &p)
			failed[p.ContextID] = true
		}
	}

	var raw json.RawMessage
	c.call(protocol.MethodRuntimeStatus, nil, &raw)
	var status struct {
		Kernels []struct {
			ID       int                  `json:"id"`
			Launcher *string              `json:"launcher"`
			Contexts []protocol.ContextID `json:"contexts"`
		} `json:"kernels"`
		Agents *[]json.RawMessage `json:"agents"`
	}
	mustDecode(t, raw, &status)
	if status.Agents == nil || len(*status.Agents) != 0 {
		t.Errorf("runtime/status agents: want [], got %s", trim(string(raw)))
	}
	kernelOf := map[protocol.ContextID]int{}
	for _, k := range status.Kernels {
		if k.Launcher == nil || *k.Launcher != protocol.LauncherLocal {
			t.Errorf("kernel %d: launcher want %q: %s", k.ID, protocol.LauncherLocal, trim(string(raw)))
		}
		for _, id := range k.Contexts {
			kernelOf[id] = k.ID
		}
	}
	ka, okA := kernelOf[a]
	kb, okB := kernelOf[b]
	if !okA || !okB || ka == kb {
		t.Fatalf("want the two contexts on two kernels, runtime/status: %s", raw)
	}

	if restarted != ka {
		t.Errorf("runtime/kernelRestarted of a: kernelId %d, want %d (a's kernel)", restarted, ka)
	}

	// Every notification of a or b names its context's kernel; each kind
	// the runs produce was seen.
	seen := map[string]bool{}
	for _, m := range messages {
		if !m.IsNotification() || !slices.Contains(provenanceMethods, m.Method) {
			continue
		}
		var head struct {
			ContextID            protocol.ContextID `json:"contextId"`
			VisualizationContext struct {
				ContextID protocol.ContextID `json:"contextId"`
			} `json:"visualizationContext"`
			KernelID *int `json:"kernelId"`
		}
		mustDecode(t, m.Params, &head)
		id := head.ContextID
		if id == "" {
			id = head.VisualizationContext.ContextID
		}
		want, ok := kernelOf[id]
		if !ok {
			t.Errorf("%s of unknown context %q", m.Method, id)
			continue
		}
		switch {
		case head.KernelID == nil:
			t.Errorf("%s without kernelId: %s", m.Method, trim(string(m.Params)))
		case *head.KernelID != want:
			t.Errorf("%s of context on kernel %d says kernelId %d: %s", m.Method, want, *head.KernelID, trim(string(m.Params)))
		}
		name := "a"
		if id == b {
			name = "b"
		}
		seen[fmt.Sprintf("%s %s", name, m.Method)] = true
	}
	for _, want := range []string{
		"a " + protocol.NotifyExpressionUpdates, "a " + protocol.NotifyOutput, "a " + protocol.NotifyDisplayData,
		"a " + protocol.NotifyVisualizationUpdate, "a " + protocol.NotifyExecutionComplete, "a " + protocol.NotifyExecutionFailed,
		"b " + protocol.NotifyExpressionUpdates, "b " + protocol.NotifyOutput, "b " + protocol.NotifyDisplayData,
		"b " + protocol.NotifyVisualizationEvaluationFailed, "b " + protocol.NotifyExecutionComplete, "b " + protocol.NotifyExecutionFailed,
	} {
		if !seen[want] {
			t.Errorf("no %s notification (seen %v)", want, seen)
		}
	}
}
