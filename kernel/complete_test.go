package kernel

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/testenv"
)

func matchTexts(c Completions) []string {
	var out []string
	for _, m := range c.Matches {
		out = append(out, m.Text)
	}
	return out
}

// Completion and inspection on a real kernel, in __main__: names the code
// defined, builtins, a cursor counted in code points (a character outside
// the BMP before it is one point, two UTF-16 units, four UTF-8 bytes).
func TestCompleteAndInspectInMain(t *testing.T) {
	k := startKernel(t)
	ctx := testCtx(t)
	if err := k.Eval(ctx, "def total_price(items, tax=0.2):\n    'Sum of the items with tax.'\n    return sum(items) * (1 + tax)\nunit_count = 3\n", nil); err != nil {
		t.Fatal(err)
	}
	code := "s = '\U0001F600'; unit_"
	c, err := k.Complete(ctx, CompleteRequest{Code: code, Cursor: len([]rune(code))})
	if err != nil {
		t.Fatal(err)
	}
	if got := matchTexts(c); !slices.Equal(got, []string{"unit_count"}) {
		t.Fatalf("matches %q, want [unit_count]", got)
	}
	if want := len([]rune(code)) - len("unit_"); c.CursorStart != want || c.CursorEnd != len([]rune(code)) {
		t.Fatalf("span [%d,%d), want [%d,%d)", c.CursorStart, c.CursorEnd, want, len([]rune(code)))
	}
	c, err = k.Complete(ctx, CompleteRequest{Code: "total_", Cursor: 6})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Matches) != 1 || c.Matches[0].Type != "function" {
		t.Fatalf("total_ completes to %+v, want the function total_price", c.Matches)
	}
	in, err := k.Inspect(ctx, InspectRequest{Code: "total_price([1], ", Cursor: 17})
	if err != nil {
		t.Fatal(err)
	}
	if !in.Found || in.Name != "total_price" || in.Signature != "total_price(items, tax=0.2)" || in.Doc != "Sum of the items with tax." {
		t.Fatalf("inspect %+v", in)
	}
	if !strings.Contains(in.Text, "Signature: total_price(items, tax=0.2)") || strings.Contains(in.Text, "return sum") {
		t.Fatalf("inspect text at level 0:\n%s", in.Text)
	}
	in, err = k.Inspect(ctx, InspectRequest{Code: "total_price", Cursor: 3, DetailLevel: 1})
	if err != nil || !strings.Contains(in.Text, "return sum(items)") {
		t.Fatalf("inspect at level 1 (source): %+v, %v", in, err)
	}
}

// A cursor past the code is InvalidParams naming the cursor.
func TestCompleteBadCursor(t *testing.T) {
	k := startKernel(t)
	_, err := k.Complete(testCtx(t), CompleteRequest{Code: "abc", Cursor: 9})
	var re *RemoteError
	if !errors.As(err, &re) || re.Type != "InvalidParams" || !strings.Contains(re.Message, "cursor must be an integer from 0 to 3") {
		t.Fatalf("err %v, want InvalidParams naming the cursor", err)
	}
}

// NoWait does not queue behind a running request: it answers ErrBusy.
func TestCompleteNoWaitWhileBusy(t *testing.T) {
	k := startKernel(t)
	ctx := testCtx(t)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- k.Eval(runCtx, "import time\nwhile True: time.sleep(0.01)\n", nil) }()
	testenv.Eventually(t, "the eval to hold the kernel", k.Busy)
	_, err := k.Complete(ctx, CompleteRequest{Code: "pri", Cursor: 3, NoWait: true})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("err %v, want ErrBusy", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, ErrInterrupted) {
		t.Fatalf("eval: %v, want interrupted", err)
	}
	c, err := k.Complete(ctx, CompleteRequest{Code: "pri", Cursor: 3, NoWait: true})
	if err != nil || !slices.Contains(matchTexts(c), "print") {
		t.Fatalf("after the run: %v, %v", matchTexts(c), err)
	}
}
