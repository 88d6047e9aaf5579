package lsp

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// stmt is an update of main:main's statement label at line (0-based).
func stmt(label string, line int, p protocol.Payload) protocol.ExpressionUpdate {
	r := protocol.Range{Start: protocol.Position{Line: line}, End: protocol.Position{Line: line, Character: 9}}
	return protocol.ExpressionUpdate{ExpressionID: protocol.ExpressionID("main:main/" + label), Range: &r, Payload: p}
}

func testEntry(us ...protocol.ExpressionUpdate) *entry {
	mp := protocol.MethodPointer{Module: "main", Name: "main"}
	e := &entry{pointer: mp, id: "ctx"}
	e.setFrames([]protocol.MethodPointer{mp})
	for _, u := range us {
		e.updates[u.ExpressionID] = u
	}
	return e
}

// TestHintLabels: each run state has its own mark and says why; a
// not-reached statement names the line of the one that ended the run
// (1-based) when the frame shows it.
func TestHintLabels(t *testing.T) {
	t.Parallel()
	raiser := stmt("b", 2, protocol.PanicPayload("ZeroDivisionError: division by zero"))
	held := stmt("w", 3, protocol.HeldPayload("open('published.txt', 'w')", "open", "'published.txt'", "'w'"))
	e := testEntry(raiser, held)
	long := "shutil.rmtree('" + strings.Repeat("x", 100) + "')"
	for _, c := range []struct {
		name string
		p    protocol.Payload
		want string
	}{
		{"value", protocol.ValuePayload("42"), "= 42"},
		{"waiting", protocol.PendingPayload(""), "⏳"},
		{"running", protocol.RunningPayload(time.Unix(0, 0)), "▶ running"},
		{"held", held.Payload, "⏸ held: open('published.txt', 'w')"},
		{"held, cut", protocol.HeldPayload(long, "shutil.rmtree", "'x'"), "⏸ " + cut("held: "+long, heldMax)},
		{"after an exception", protocol.NotReachedPayload(protocol.ReasonException, raiser.ExpressionID), "∅ not reached: line 3 raised"},
		{"after an exception not shown", protocol.NotReachedPayload(protocol.ReasonException, "main:other/x"), "∅ not reached: an exception ended the run"},
		{"after a held statement", protocol.NotReachedPayload(protocol.ReasonHeld, held.ExpressionID), "∅ not reached (held at line 4)"},
		{"interrupted", protocol.NotReachedPayload(protocol.ReasonInterrupted, ""), "∅ not reached (interrupted)"},
		{"kernel died", protocol.NotReachedPayload(protocol.ReasonKernelDied, ""), "∅ not reached (kernel died)"},
		{"a kind this version does not know", protocol.NotReachedPayload("cosmicRay", ""), "∅ not reached (cosmicRay)"},
		{"after a return", protocol.PendingPayload(protocol.MessageNotReached), "… not reached"},
	} {
		if got := e.hintLabel(stmt("x", 5, c.p)); got != c.want {
			t.Errorf("%s: label %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDetailsSayWhyAndKeepTheLastValue: the tooltip of a statement
// without a fresh value says why, gives its last value and the effects of
// its last run.
func TestDetailsSayWhyAndKeepTheLastValue(t *testing.T) {
	t.Parallel()
	raiser := stmt("b", 2, protocol.PanicPayload("ZeroDivisionError: division by zero"))
	e := testEntry(raiser)
	e.last["main:main/c"] = "7"
	got := e.details(stmt("c", 3, protocol.NotReachedPayload(protocol.ReasonException, raiser.ExpressionID)))
	for _, want := range []string{"not reached: line 3 raised", "last value `7`"} {
		if !strings.Contains(got, want) {
			t.Errorf("not reached details %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "main:main/") {
		t.Errorf("not reached details %q show an internal id", got)
	}
	running := protocol.RunningPayload(time.Date(2026, 11, 29, 1, 2, 3, 456e6, time.UTC))
	if got := e.details(stmt("c", 3, running)); !strings.Contains(got, "running since 2026-11-29T01:02:03.456Z") {
		t.Errorf("running details %q lack the start time", got)
	}
	v := protocol.ValuePayload("3")
	v.Effects = []string{"open('out.csv', 'w')"}
	if got := e.details(stmt("c", 3, v)); !strings.Contains(got, "effects: `open('out.csv', 'w')`") || strings.Contains(got, "last value") {
		t.Errorf("value details %q: want its effects and no last value", got)
	}
}

// TestEndWaitingLeavesNoPending: after an interrupt or a kernel death, no
// statement of the frame is left waiting or running; the others keep
// their state.
func TestEndWaitingLeavesNoPending(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{protocol.ReasonInterrupted, protocol.ReasonKernelDied} {
		e := testEntry(
			stmt("a", 1, protocol.ValuePayload("6")),
			stmt("s", 2, protocol.RunningPayload(time.Now())),
			stmt("b", 3, protocol.PendingPayload("")),
			stmt("w", 4, protocol.HeldPayload("os.system('ls')", "os.system", "'ls'")),
		)
		e.endWaiting(kind)
		for id, u := range e.updates {
			if isWaiting(u) {
				t.Errorf("%s: %s still waiting: %+v", kind, id, u.Payload)
			}
		}
		for _, id := range []protocol.ExpressionID{"main:main/s", "main:main/b"} {
			p := e.updates[id].Payload
			if r := p.Reason; r == nil || r.Kind != kind || !p.IsNotReached() {
				t.Errorf("%s: %s is %+v, want not reached (%s)", kind, id, p, kind)
			}
		}
		if e.updates["main:main/a"].Payload.Preview != "6" || !isHeld(e.updates["main:main/w"]) {
			t.Errorf("%s: the value and the held statement changed: %+v", kind, e.updates)
		}
	}
}

// TestRunDelayOption: absent or null options give the default; 0 runs
// at each change; other keys are left alone.
func TestRunDelayOption(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts string
		want time.Duration
	}{
		{``, DefaultRunDelay},
		{`null`, DefaultRunDelay},
		{`{}`, DefaultRunDelay},
		{`{"ripple": {}}`, DefaultRunDelay},
		{`{"ripple": {"runDelayMs": null}}`, DefaultRunDelay},
		{`{"ripple": {"runDelayMs": 0}}`, 0},
		{`{"ripple": {"runDelayMs": 400, "theme": "dark"}, "pyright": {}}`, 400 * time.Millisecond},
		{`{"ripple": {"runDelayMs": 60000}}`, time.Minute},
	} {
		got, err := runDelayOption([]byte(c.opts))
		if err != nil || got != c.want {
			t.Errorf("runDelayOption(%s) = %v, %v; want %v", c.opts, got, err, c.want)
		}
	}
}
