package engine_test

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Inner values (kernel/PROTOCOL.md "Inner values") over a real kernel: a
// for loop's body, an if body and a try body report their last values and
// counts with their compound statement's update; a statement that only
// moved comes from the cache with its inner values moved too; an inner
// statement that raised the compound statement's exception says so.

const innerMain = `def main():
    total = 0
    for i in range(10):
        sq = i * i
        total += sq
        if i % 4 == 0:
            label = "four"
    try:
        ratio = total / 10
    except ZeroDivisionError:
        ratio = None
    return total
`

func innerOf(t *testing.T, u *protocol.ExpressionUpdate) map[int]protocol.InnerValue {
	t.Helper()
	if u == nil {
		t.Fatal("no update")
	}
	out := map[int]protocol.InnerValue{}
	for _, v := range u.Inner {
		out[v.Range.Start.Line] = v
	}
	return out
}

func expectInner(t *testing.T, inner map[int]protocol.InnerValue, line int, preview string, count int) {
	t.Helper()
	v, ok := inner[line]
	if !ok {
		t.Errorf("line %d: no inner value (have %+v)", line, inner)
		return
	}
	if v.Preview != preview || v.Count != count || v.Panic != "" {
		t.Errorf("line %d: %+v, want preview %q, count %d", line, v, preview, count)
	}
}

func TestInnerValues(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": innerMain}, engine.Config{})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run: %s", resultString(run.failed))
	}
	loop := innerOf(t, run.updates.Latest("main:main/#1"))
	expectInner(t, loop, 3, "81", 10)
	expectInner(t, loop, 4, "285", 10)
	expectInner(t, loop, 6, "'four'", 3)
	if v := loop[3]; v.Type != "builtins.int" || v.Range.Start.Character != 8 || v.Range.End != (protocol.Position{Line: 3, Character: 18}) {
		t.Errorf("sq's inner value %+v, want type builtins.int at 3:8-3:18", v)
	}
	try := innerOf(t, run.updates.Latest("main:main/#2"))
	expectInner(t, try, 8, "28.5", 1)
	if _, ok := try[10]; ok {
		t.Errorf("the except body did not run, yet has a value: %+v", try[10])
	}

	// A line above: the loop only moved; it comes from the cache with its
	// inner values one line down.
	m := h.client.mark()
	h.setText("main.py", "\n"+innerMain)
	run = h.client.waitRun(t, m, id)
	u := run.updates.Latest("main:main/#1")
	if u == nil || !u.FromCache {
		t.Fatalf("the moved loop is %+v, want it from the cache", u)
	}
	moved := innerOf(t, u)
	expectInner(t, moved, 4, "81", 10)
	expectInner(t, moved, 7, "'four'", 3)

	// The loop's body raises in its 4th iteration: the inner statement
	// that raised carries the Panic, the others their values so far.
	m = h.client.mark()
	h.setText("main.py", strings.Replace(innerMain, "sq = i * i", "sq = i * i // (3 - i)", 1))
	run = h.client.waitRun(t, m, id)
	u = run.updates.Latest("main:main/#1")
	if u == nil || u.Payload.Type != protocol.PayloadPanic {
		t.Fatalf("the loop is %+v, want its Panic", u)
	}
	failed := innerOf(t, u)
	if v := failed[3]; v.Count != 3 || v.Preview != "4" || v.Panic != "ZeroDivisionError: integer division or modulo by zero" {
		t.Errorf("the raising inner statement is %+v, want count 3, last value 4 and its Panic", v)
	}
	expectInner(t, failed, 4, "4", 3) // 0 + 0 + 4
}
