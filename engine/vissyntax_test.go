package engine_test

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// A visualization expression that does not compile is refused with 2007
// when it is sent (modify and attach), naming Python's error, and the old
// configuration stays in force (issue 27: modify answered null and failed
// at the next run).
func TestSyntaxErrorInAVisualizationIsRefused(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    x = 6\n"}, engine.Config{Kernels: 1})
	id, _ := h.newContext("main:main")
	m := h.client.mark()
	must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v1", ExpressionID: "main:main/x",
		VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "lambda v: v * 2"}}))
	h.client.waitRun(t, m, id)
	for _, bad := range []string{"lambda v: v *", "lambda v: (v", "x = 1"} {
		err := h.e.ModifyVisualization(h.ctx, clientID, protocol.ModifyVisualizationParams{VisualizationID: "v1",
			VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: bad}})
		pe := engine.ProtocolError(err)
		if pe == nil || pe.Code != protocol.CodeVisualizationExpressionError || !strings.Contains(pe.Message, "SyntaxError") {
			t.Errorf("modify to %q: %v (code %v), want 2007 naming the SyntaxError", bad, err, codeOf(pe))
		}
		err = h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{VisualizationID: "v2", ExpressionID: "main:main/x",
			VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: bad}})
		if pe := engine.ProtocolError(err); pe == nil || pe.Code != protocol.CodeVisualizationExpressionError {
			t.Errorf("attach of %q: %v, want 2007", bad, err)
		}
	}
	m = h.client.mark()
	h.setText("main.py", "def main():\n    x = 7\n")
	run := h.client.waitRun(t, m, id)
	if data, failed := visualizations(run.notes); len(data) != 1 || data[0] != "14" || len(failed) != 0 {
		t.Fatalf("after the refused modifies: data %v failures %v, want the old expression's [14]", data, failed)
	}
}
