package engine_test

import (
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/protocol"
)

// debianPython is Debian's /usr/bin/python3 with python3-matplotlib,
// python3-pandas and python3-ipython (.ci/run installs them). The test
// skips without them locally and fails under CI=true.
func debianPython(t *testing.T, modules ...string) string {
	t.Helper()
	const py = "/usr/bin/python3"
	check := "import " + strings.Join(modules, ", ")
	if err := exec.Command(py, "-c", check).Run(); err != nil {
		testenv.NeedOrSkip(t, "%s cannot %q (CI installs python3-matplotlib, python3-pandas, python3-ipython): %v", py, check, err)
	}
	return py
}

const richMain = `import matplotlib.pyplot as plt
import pandas as pd
import ripple
from IPython.display import display, HTML


class Card:
    def _repr_html_(self):
        return "<b>card</b>"


def main():
    n = 3
    df = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    s = df["a"]
    fig = plt.figure(figsize=(2, 2))
    ax = fig.add_subplot()
    line = ax.plot([1, 2, 3])
    card = Card()
    print("before the plot")
    plt.show()
    display(HTML("<i>hi</i>"))
    ripple.display(card)
`

// Rich values (PROTOCOL.md 7.2) with a real kernel on Debian's python3:
// mimeTypes found without rendering, the ripple:display visualization's
// bundle, and displayData from plt.show(), IPython's display() and
// ripple.display(), each attributed to its statement, in order with the
// output.
func TestRichValuesAndDisplays(t *testing.T) {
	t.Parallel()
	py := debianPython(t, "matplotlib", "pandas", "IPython")
	h := setup(t, map[string]string{"main.py": richMain}, engine.Config{Python: py})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	mimes := map[string][]string{}
	for _, u := range run.updates {
		if u.Payload.Type == protocol.PayloadValue {
			mimes[string(u.ExpressionID)] = u.Payload.MimeTypes
		}
	}
	for id, want := range map[string][]string{
		"main:main/n":    nil,
		"main:main/df":   {"text/html"},
		"main:main/s":    {"text/html"},
		"main:main/fig":  {"image/png", "image/svg+xml"},
		"main:main/ax":   {"image/png", "image/svg+xml"},
		"main:main/card": {"text/html"},
	} {
		if !slices.Equal(mimes[id], want) {
			t.Errorf("mimeTypes of %s: %q, want %q", id, mimes[id], want)
		}
	}

	// displayData: plt.show() (one PNG), display(HTML) and ripple.display,
	// each under its statement, the show after the print before it.
	var order []string
	displays := map[protocol.ExpressionID]map[string]any{}
	for _, n := range run.notes {
		switch p := n.Params.(type) {
		case protocol.OutputParams:
			// A print may come in more than one chunk.
			if last := len(order) - 1; last >= 0 && strings.HasPrefix(order[last], "output:") {
				order[last] += p.Text
			} else {
				order = append(order, "output:"+p.Text)
			}
		case protocol.DisplayDataParams:
			var bundle map[string]any
			if err := json.Unmarshal(p.Data, &bundle); err != nil {
				t.Fatalf("displayData %s: %v", p.Data, err)
			}
			displays[p.ExpressionID] = bundle
			order = append(order, "display:"+string(p.ExpressionID))
		}
	}
	wantOrder := []string{"output:before the plot\n", "display:main:main/#2", "display:main:main/#3", "display:main:main/#4"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("output and displays in the order %q, want %q", order, wantOrder)
	}
	if png, _ := displays["main:main/#2"]["image/png"].(string); !isPNG(png) {
		t.Errorf("plt.show() displayed %v, want a base64 PNG", keys(displays["main:main/#2"]))
	}
	if html := displays["main:main/#3"]["text/html"]; html != "<i>hi</i>" {
		t.Errorf("display(HTML(...)) sent text/html %v", html)
	}
	if html := displays["main:main/#4"]["text/html"]; html != "<b>card</b>" {
		t.Errorf("ripple.display(card) sent text/html %v", html)
	}

	// The ripple:display visualization: the value's bundle.
	for expr, check := range map[protocol.ExpressionID]func(map[string]any) bool{
		"main:main/df": func(b map[string]any) bool {
			html, _ := b["text/html"].(string)
			return strings.Contains(html, "<table") && strings.Contains(b["text/plain"].(string), "a  b")
		},
		"main:main/ax": func(b map[string]any) bool {
			png, _ := b["image/png"].(string)
			svg, _ := b["image/svg+xml"].(string)
			return isPNG(png) && strings.Contains(svg, "<svg")
		},
	} {
		visID := protocol.VisualizationID("0a0b0c0d-0000-4000-8000-" + strings.Repeat("0", 12))
		if expr == "main:main/ax" {
			visID = protocol.VisualizationID("0a0b0c0d-0000-4000-8000-" + strings.Repeat("1", 12))
		}
		m := h.client.mark()
		must(t, h.e.AttachVisualization(h.ctx, clientID, protocol.AttachVisualizationParams{
			VisualizationID: visID, ExpressionID: expr,
			VisualizationConfig: protocol.VisualizationConfiguration{ExecutionContextID: id, Expression: "ripple:display"},
		}))
		n := h.client.waitFrom(t, m, "the display bundle of "+string(expr), func(n note) bool {
			p, ok := n.Params.(protocol.VisualizationUpdateParams)
			return ok && p.VisualizationContext.VisualizationID == visID
		})
		p := n[len(n)-1].Params.(protocol.VisualizationUpdateParams)
		var bundle map[string]any
		if err := json.Unmarshal(p.Data, &bundle); err != nil || !check(bundle) {
			t.Errorf("ripple:display of %s: %v, bundle with %q", expr, err, keys(bundle))
		}
	}
}

func isPNG(b64 string) bool {
	raw, err := base64.StdEncoding.DecodeString(b64)
	return err == nil && strings.HasPrefix(string(raw), "\x89PNG")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
