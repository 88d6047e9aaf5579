package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// Completion and inspection in a context's top frame, on its kernel:
// names the script bound complete, their docs inspect; an unknown
// context is named.
func TestCompleteInContext(t *testing.T) {
	t.Parallel()
	src := "def shipping_cost(weight):\n    \"\"\"Cost of a parcel.\"\"\"\n    return weight * 2\nparcel_weight = 3\n"
	h := setup(t, map[string]string{"main.py": src}, engine.Config{})
	id, run := h.newContext("main:__main__")
	if run.failed != nil {
		t.Fatalf("script run failed: %+v", run.failed)
	}
	c, err := h.e.Complete(h.ctx, id, "parcel_", 7)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range c.Matches {
		texts = append(texts, m.Text)
	}
	if !slices.Equal(texts, []string{"parcel_weight"}) || c.CursorStart != 0 || c.CursorEnd != 7 {
		t.Fatalf("completions %+v, want parcel_weight over [0,7)", c)
	}
	in, err := h.e.Inspect(h.ctx, id, "shipping_cost(1)", 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !in.Found || in.Signature != "shipping_cost(weight)" || !strings.Contains(in.Text, "Cost of a parcel.") {
		t.Fatalf("inspection %+v", in)
	}
	_, err = h.e.Complete(h.ctx, "no-such-context", "x", 1)
	if !errors.Is(err, contexts.ErrContextNotFound) {
		t.Fatalf("unknown context: %v, want ErrContextNotFound", err)
	}
	if engine.ErrBusy != kernel.ErrBusy {
		t.Fatal("engine.ErrBusy is kernel.ErrBusy")
	}
}
