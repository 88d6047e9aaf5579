package server

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// drain takes everything queued, accounts for it as written, and returns
// the messages as "method:detail" strings for easy comparison.
func drain(t *testing.T, o *outbox) []string {
	t.Helper()
	var out []string
	for _, m := range o.take(nil) {
		o.sent(m)
		var sm protocol.ServerMessage
		if err := json.Unmarshal(m.data, &sm); err != nil {
			t.Fatalf("queued message is not JSON: %s", m.data)
		}
		switch sm.Method {
		case "":
			out = append(out, "reply:"+string(sm.ID))
		case protocol.NotifyOutput:
			var p protocol.OutputParams
			_ = json.Unmarshal(sm.Params, &p)
			text := p.Text
			if len(text) > 20 {
				text = text[:20]
			}
			out = append(out, "output:"+string(p.ContextID)+kernelTag(p.KernelID)+":"+text)
		case protocol.NotifyExpressionUpdates:
			var p protocol.ExpressionUpdatesParams
			_ = json.Unmarshal(sm.Params, &p)
			var ids []string
			for _, u := range p.Updates {
				ids = append(ids, string(u.ExpressionID)+"="+u.Payload.Preview)
			}
			out = append(out, "updates:"+string(p.ContextID)+kernelTag(p.KernelID)+":"+strings.Join(ids, ","))
		case protocol.NotifyExecutionComplete:
			var p protocol.ExecutionCompleteParams
			_ = json.Unmarshal(sm.Params, &p)
			out = append(out, "complete:"+string(p.ContextID))
		default:
			out = append(out, sm.Method)
		}
	}
	return out
}

// kernelTag shows a kernelId other than 0 (PROTOCOL.md 7.5) as "@k".
func kernelTag(k int) string {
	if k == 0 {
		return ""
	}
	return "@" + strconv.Itoa(k)
}

func output(ctx protocol.ContextID, text string) protocol.OutputParams {
	return protocol.OutputParams{ContextID: ctx, Stream: protocol.Stdout, Text: text}
}

func update(ctx protocol.ContextID, id, preview string) protocol.ExpressionUpdatesParams {
	return protocol.ExpressionUpdatesParams{ContextID: ctx, Updates: []protocol.ExpressionUpdate{
		{ExpressionID: protocol.ExpressionID(id), Payload: protocol.ValuePayload(preview)},
	}}
}

func TestOutboxUnderTheBoundKeepsEverything(t *testing.T) {
	t.Parallel()
	o := newOutbox(1 << 20)
	o.notify(protocol.NotifyOutput, output("A", "hello"))
	o.notify(protocol.NotifyExpressionUpdates, update("A", "m:f/x", "1"))
	o.notify(protocol.NotifyExpressionUpdates, update("A", "m:f/x", "2"))
	o.notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: "A"})
	got := strings.Join(drain(t, o), " | ")
	want := "output:A:hello | updates:A:m:f/x=1 | updates:A:m:f/x=2 | complete:A"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestOutboxOverTheBound(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 600)
	o := newOutbox(1000)
	o.notify(protocol.NotifyOutput, output("A", big))    // 600+ bytes: queued
	o.notify(protocol.NotifyOutput, output("A", big))    // would pass 1000: dropped, over
	o.notify(protocol.NotifyOutput, output("B", "tiny")) // over: dropped too
	o.notify(protocol.NotifyExpressionUpdates, update("A", "m:f/x", "1"))
	o.notify(protocol.NotifyExpressionUpdates, update("A", "m:f/y", "1"))
	o.notify(protocol.NotifyExpressionUpdates, update("A", "m:f/x", "2")) // supersedes x=1
	o.notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: "A"})
	if o.overFor(time.Now().Add(time.Second)) == 0 {
		t.Fatal("not over the bound")
	}
	// A's completion brought A's kept state along, in front of it; B's
	// marker waits until the client catches up.
	got := strings.Join(drain(t, o), " | ")
	want := "output:A:" + big[:20] + " | updates:A:m:f/x=2,m:f/y=1 | output:A:[ripple: 600 bytes d | complete:A"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Written: under half the bound, so everything kept was queued.
	if o.overFor(time.Now()) != 0 {
		t.Fatal("still over the bound after the client caught up")
	}
	got = strings.Join(drain(t, o), " | ")
	if want := "output:B:[ripple: 4 bytes dro"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if st := o.snapshotStats(); st.droppedOutputBytes != 604 || st.coalesced != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Over the bound, what a context's next kernel sends (the context moved)
// does not merge with what its previous kernel sent: the kept updates and
// the dropped-output marker go out with the kernelId that produced them.
func TestOutboxKeepsKernelsApart(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 600)
	o := newOutbox(1000)
	on := func(k int, p protocol.ExpressionUpdatesParams) protocol.ExpressionUpdatesParams {
		p.KernelID = k
		return p
	}
	o.notify(protocol.NotifyOutput, output("A", big)) // queued
	out := output("A", big)
	out.KernelID = 1
	o.notify(protocol.NotifyOutput, out) // over: dropped, counted for kernel 1
	o.notify(protocol.NotifyExpressionUpdates, on(1, update("A", "m:f/x", "1")))
	o.notify(protocol.NotifyExpressionUpdates, on(2, update("A", "m:f/x", "2"))) // another kernel: kernel 1's go first
	o.notify(protocol.NotifyExpressionUpdates, on(2, update("A", "m:f/y", "2")))
	o.notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: "A", KernelID: 2})
	got := strings.Join(drain(t, o), " | ")
	want := "output:A:" + big[:20] + " | updates:A@1:m:f/x=1 | output:A@1:[ripple: 600 bytes d | updates:A@2:m:f/x=2,m:f/y=2 | complete:A"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestOutboxHysteresis(t *testing.T) {
	t.Parallel()
	o := newOutbox(1000)
	for range 4 {
		o.notify(protocol.NotifyOutput, output("A", strings.Repeat("x", 200))) // ~280 bytes each
	}
	msgs := o.take(nil)
	if len(msgs) != 3 {
		t.Fatalf("%d queued, want 3 (the 4th passes the bound)", len(msgs))
	}
	o.sent(msgs[0]) // ~560 left: over half the bound
	if o.overFor(time.Now().Add(time.Second)) == 0 {
		t.Fatal("left the over state above half the bound")
	}
	o.notify(protocol.NotifyOutput, output("A", "y")) // still dropped
	o.sent(msgs[1])                                   // ~280 left
	if o.overFor(time.Now().Add(time.Second)) != 0 {
		t.Fatal("still over at a quarter of the bound")
	}
	o.sent(msgs[2])
	got := strings.Join(drain(t, o), " | ")
	if want := "output:A:[ripple: 201 bytes d"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestOutboxHoldPutsTheReplyFirst(t *testing.T) {
	t.Parallel()
	o := newOutbox(1 << 20)
	o.notify(protocol.NotifyOutput, output("A", "before"))
	o.hold()
	o.notify(protocol.NotifyOutput, output("A", "during"))
	if got := drain(t, o); len(got) != 1 {
		t.Fatalf("held notifications were sent: %v", got)
	}
	o.release([]byte(`{"jsonrpc":"2.0","id":1,"result":null}`))
	got := strings.Join(drain(t, o), " | ")
	if want := "reply:1 | output:A:during"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	// A notification frame has no reply: release just lets them go.
	o.hold()
	o.notify(protocol.NotifyOutput, output("A", "later"))
	o.release(nil)
	if got := strings.Join(drain(t, o), " | "); got != "output:A:later" {
		t.Fatalf("got %s", got)
	}
}

func TestOutboxRepliesAreNeverDropped(t *testing.T) {
	t.Parallel()
	o := newOutbox(100)
	reply := []byte(`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("r", 200) + `"}`)
	o.release(reply)
	o.release(reply)
	if n := len(o.take(nil)); n != 2 {
		t.Fatalf("%d replies queued, want 2", n)
	}
	// The dispatcher waits until they are written.
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	if err := o.waitReplies(ctx); err == nil {
		t.Fatal("waitReplies returned with 400 bytes of replies queued on a 100-byte bound")
	}
}

func TestOutboxClosedDiscards(t *testing.T) {
	t.Parallel()
	o := newOutbox(1 << 20)
	o.notify(protocol.NotifyOutput, output("A", "x"))
	o.close()
	o.notify(protocol.NotifyOutput, output("A", "y"))
	o.release([]byte(`{}`))
	if n := len(o.take(nil)); n != 0 {
		t.Fatalf("%d messages queued on a closed outbox", n)
	}
	if err := o.waitReplies(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestOutboxRefusesUnencodable(t *testing.T) {
	t.Parallel()
	o := newOutbox(1 << 20)
	if err := o.notify("x/y", map[string]any{"f": func() {}}); err == nil {
		t.Fatal("a function was encoded")
	}
}

func TestOutboxHoldingIsNotTheClientsFault(t *testing.T) {
	t.Parallel()
	o := newOutbox(100)
	o.hold()
	o.notify(protocol.NotifyExecutionComplete, protocol.ExecutionCompleteParams{ContextID: protocol.ContextID(strings.Repeat("c", 200))})
	later := time.Now().Add(time.Hour)
	if d := o.overFor(later); d != 0 {
		t.Fatalf("over the bound for %v while the server held the messages", d)
	}
	o.release(nil)
	if d := o.overFor(time.Now().Add(time.Second)); d == 0 || d > 2*time.Second {
		t.Fatalf("over for %v right after the release, want the time since the release", d)
	}
}
