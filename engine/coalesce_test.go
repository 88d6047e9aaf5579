package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// Output coalescing (PROTOCOL.md 8.3, issue 27): a thread a run started
// prints 30 lines after the run ended, each print four writes ("tick",
// " ", "i", "\n") sent by the kernel as four frames. They reach the client
// as at most one notification per line (117 notifications for 30 lines
// before), with the text intact and in order.
func TestThreadOutputIsCoalesced(t *testing.T) {
	t.Parallel()
	main := `import threading
import time


def ticks():
    time.sleep(0.05)
    for i in range(30):
        print("tick", i)
        time.sleep(0.001)


def main():
    threading.Thread(target=ticks, daemon=True).start()
`
	h := setup(t, map[string]string{"main.py": main}, engine.Config{})
	id, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	m := h.client.mark()
	var text strings.Builder
	count := 0
	h.client.waitFrom(t, m, "the 30 ticks", func(n note) bool {
		p, ok := n.Params.(protocol.OutputParams)
		if !ok || p.ContextID != id {
			return false
		}
		count++
		text.WriteString(p.Text)
		return strings.Contains(text.String(), "tick 29\n")
	})
	var want strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&want, "tick %d\n", i)
	}
	if !strings.HasSuffix(text.String(), want.String()) {
		t.Errorf("thread output %q, want %q", text.String(), want.String())
	}
	t.Logf("30 printed lines: %d output notifications", count)
	if count > 30 {
		t.Errorf("30 printed lines came as %d output notifications, want at most 30", count)
	}
}

// In a run, one statement's output on one stream is coalesced too: 200
// prints in a loop are far fewer notifications than prints.
func TestRunOutputIsCoalesced(t *testing.T) {
	t.Parallel()
	h := setup(t, map[string]string{"main.py": "def main():\n    for i in range(200):\n        print('line', i)\n    x = 1\n"}, engine.Config{})
	_, run := h.newContext("main:main")
	if run.failed != nil {
		t.Fatalf("run failed: %+v", run.failed)
	}
	count := 0
	for _, n := range run.notes {
		if _, ok := n.Params.(protocol.OutputParams); ok {
			count++
		}
	}
	if !strings.HasSuffix(run.output, "line 199\n") || strings.Count(run.output, "\n") != 200 {
		t.Errorf("run output: %d lines, ends %q", strings.Count(run.output, "\n"), run.output[max(0, len(run.output)-20):])
	}
	if count > 20 {
		t.Errorf("200 printed lines came as %d output notifications, want at most 20", count)
	}
}
