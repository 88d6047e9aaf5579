package tests

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
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

// An edit's values do not wait for its state-log append (an fsync): the
// run it caused reports while the append is still in progress, and the
// edit's reply comes only once the edit is in the log.
func TestWireEditValuesDoNotWaitForTheStateLog(t *testing.T) {
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
	// y's new value arrives while the edit's append is held at the gate.
	c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var u protocol.ExpressionUpdatesParams
		if json.Unmarshal(raw, &u) != nil || u.ContextID != id {
			return false
		}
		for _, e := range u.Updates {
			if e.ExpressionID == "main:main/y" && e.Payload.Preview == "42" {
				return true
			}
		}
		return false
	})
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
}
