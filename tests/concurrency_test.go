package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

// acceptedEdit is an edit the server accepted: it took the buffer from
// old to new by inserting line at row.
type acceptedEdit struct {
	old, new string
	row      int
	line     string
}

// insertLine inserts line (ending in "\n") before row of text.
func insertLine(text string, row int, line string) string {
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == row {
			b.WriteString(line)
		}
		b.WriteString(l)
	}
	if row >= len(lines) {
		b.WriteString(line)
	}
	return b.String()
}

// 50 clients edit one module and recompute their contexts at once for 10
// seconds. No edit is lost: the final buffer is the sequential
// application of the accepted edits, in the order their versions chain.
func TestWireFiftyClientsEditing(t *testing.T) {
	const clients = 50
	duration := 10 * time.Second
	if testing.Short() {
		duration = 2 * time.Second
	}
	const initial = "def main():\n    x = 6\n    y = x * 7\n    return y\n"
	s := serveProject(t, map[string]string{"main.py": initial}, engine.Config{Kernels: 2})

	var mu sync.Mutex
	var accepted []acceptedEdit
	var refused, recomputes int

	ctx, cancel := context.WithTimeout(t.Context(), duration)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	conns := make([]*servertest.Client, clients)
	ids := make([]protocol.ContextID, clients)
	for i := range clients {
		c, _ := connect(t, s.url, fmt.Sprintf("client-%02d", i))
		conns[i] = c.c
		var res protocol.CreateContextResult
		c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
		ids[i] = res.ContextID
		c.call(protocol.MethodPush, protocol.PushParams{ContextID: res.ContextID,
			StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil)
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conns[i]
			r := rand.New(rand.NewPCG(uint64(i), 50))
			call := func(method string, params, result any) error {
				return c.Call(context.WithoutCancel(ctx), method, params, result)
			}
			var open protocol.OpenFileResult
			if err := call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &open); err != nil {
				errs <- err
				return
			}
			for n := 0; ctx.Err() == nil; n++ {
				// Drop the notifications read so far: this test counts edits.
				c.Collect(func(servertest.Message) bool { return true })
				if r.IntN(4) == 0 {
					if err := call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: ids[i]}, nil); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					recomputes++
					mu.Unlock()
					continue
				}
				row := r.IntN(strings.Count(open.Content, "\n") + 1)
				line := fmt.Sprintf("    # client %d edit %d\n", i, n)
				next := insertLine(open.Content, row, line)
				err := call(protocol.MethodTextApplyEdit, protocol.ApplyEditParams{Execute: true, Edit: protocol.FileEdit{
					Path:       "main.py",
					Edits:      []protocol.TextEdit{{Range: protocol.Range{Start: protocol.Position{Line: row}, End: protocol.Position{Line: row}}, Text: line}},
					OldVersion: open.CurrentVersion,
					NewVersion: version(next),
				}}, nil)
				var pe *protocol.Error
				switch {
				case err == nil:
					mu.Lock()
					accepted = append(accepted, acceptedEdit{old: open.CurrentVersion, new: version(next), row: row, line: line})
					mu.Unlock()
					open.Content, open.CurrentVersion = next, version(next)
				case errors.As(err, &pe) && pe.Code == protocol.CodeInvalidVersion:
					// Someone else edited first: catch up and try again.
					mu.Lock()
					refused++
					mu.Unlock()
					if err := call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &open); err != nil {
						errs <- err
						return
					}
				default:
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	// Replay: from the initial version, each accepted edit names the next.
	byOld := map[string]acceptedEdit{}
	for _, e := range accepted {
		if prev, dup := byOld[e.old]; dup {
			t.Fatalf("two edits accepted on version %s: %+v and %+v (a lost update)", e.old, prev, e)
		}
		byOld[e.old] = e
	}
	text, ver := initial, version(initial)
	for range accepted {
		e, ok := byOld[ver]
		if !ok {
			t.Fatalf("the chain of accepted edits breaks at version %s", ver)
		}
		text = insertLine(text, e.row, e.line)
		ver = version(text)
		if ver != e.new {
			t.Fatalf("replaying %+v gives version %s", e, ver)
		}
	}
	c, _ := connect(t, s.url, "checker")
	var final protocol.OpenFileResult
	c.call(protocol.MethodTextOpenFile, protocol.OpenFileParams{Path: "main.py"}, &final)
	if final.Content != text || final.CurrentVersion != ver {
		t.Fatalf("final buffer differs from the replay of %d accepted edits:\n%s\nwant\n%s", len(accepted), final.Content, text)
	}
	t.Logf("%d clients, %v: %d edits accepted, %d refused as stale, %d recomputes", clients, duration, len(accepted), refused, recomputes)
	if len(accepted) < clients {
		t.Errorf("only %d edits accepted: the clients were not really editing", len(accepted))
	}

	// The engine is still consistent: a context runs the final source.
	c.call(protocol.MethodCreateContext, protocol.CreateContextParams{ContextID: ids[0]}, nil)
	c.call(protocol.MethodRecompute, protocol.RecomputeParams{ContextID: ids[0], InvalidatedExpressions: protocol.InvalidateAll()}, nil)
	r := c.waitRun(ids[0])
	if r.failed != nil || r.updates.Values()["main:main/y"] != "42" {
		t.Fatalf("after the storm: failed %+v, values %v", r.failed, r.updates.Values())
	}
}
