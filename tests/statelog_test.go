package tests

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// gatedLog is a state log whose buffer appends wait until the test opens
// the gate: a slow disk, made deterministic.
type gatedLog struct {
	gate     chan struct{}
	mu       sync.Mutex
	appended []durable.Event // guarded by mu
}

func (l *gatedLog) Append(ctx context.Context, ev durable.Event) error {
	if ev.Kind == engine.KindBuffer || ev.Kind == engine.KindBufferDelta {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	l.appended = append(l.appended, ev)
	l.mu.Unlock()
	return nil
}

func (l *gatedLog) buffers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.appended {
		if ev.Kind == engine.KindBuffer || ev.Kind == engine.KindBufferDelta {
			n++
		}
	}
	return n
}

// An edit's reply comes only once the edit is in the state log (8.5: what
// is acknowledged is durable), and the values of the run it caused come
// after that reply (8.6: causal order per connection), even though the run
// itself is queued before the append and computes while it is in
// progress: nothing of the run reaches the client while the append is
// held, then the reply, then y's new value.
func TestWireEditReplyIsDurableAndPrecedesItsValues(t *testing.T) {
	t.Parallel()
	log := &gatedLog{gate: make(chan struct{})}
	const before = "def main():\n    x = 1\n    y = x + 1\n"
	s := serveProject(t, map[string]string{"main.py": before}, engine.Config{StateLog: log})
	c, _ := connect(t, s.url, "gated")
	id, _ := c.newContext("main:main")

	var open protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &open)
	after := "def main():\n    x = 41\n    y = x + 1\n"
	replied := make(chan error, 1)
	go func() {
		replied <- c.c.Call(stepCtx(t), protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
			Path:       "main.py",
			Edits:      []protocol.TextEdit{{Range: protocol.Range{End: endOf(open.Content)}, Text: after}},
			OldVersion: open.CurrentVersion,
			NewVersion: version(after),
		}}, nil)
	}()
	// While the append is held: no reply, nothing appended, and no value
	// of the run within a few seconds (long enough for the run to finish
	// on an idle machine; a loaded one only makes the check weaker).
	held, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, err := c.c.WaitFor(held, func(m servertest.Message) bool {
		return m.IsNotification() && m.Method == protocol.NotifyExpressionUpdates && updatePreview(m.Params, id, "main:main/y") == "42"
	}); err == nil {
		t.Fatal("y's new value reached the client before the reply to the edit that caused it (PROTOCOL.md 8.6)")
	}
	select {
	case err := <-replied:
		t.Fatalf("the edit was answered (%v) before its state-log append finished", err)
	default:
	}
	if n := log.buffers(); n != 0 {
		t.Fatalf("%d buffer events appended while the gate was shut", n)
	}
	close(log.gate)
	if err := <-replied; err != nil {
		t.Fatalf("text/applyEdit: %v", err)
	}
	if n := log.buffers(); n == 0 {
		t.Fatal("the edit was answered with nothing appended to the state log")
	}
	c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		return updatePreview(raw, id, "main:main/y") == "42"
	})
}

// updatePreview is the preview of expression in an expressionUpdates
// notification of context id, "" when it holds none.
func updatePreview(raw json.RawMessage, id protocol.ContextID, expression string) string {
	var u protocol.ExpressionUpdatesParams
	if json.Unmarshal(raw, &u) != nil || u.ContextID != id {
		return ""
	}
	for _, e := range u.Updates {
		if string(e.ExpressionID) == expression && e.Payload.Preview != "" {
			return e.Payload.Preview
		}
	}
	return ""
}
