package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/protocol"
)

// noteList is a Client that writes each notification down as
// "method@kernelId:detail".
type noteList struct {
	mu    sync.Mutex
	notes []string // guarded by mu
}

func (l *noteList) Notify(method string, params any) {
	var s string
	switch p := params.(type) {
	case protocol.ExpressionUpdatesParams:
		var ids []string
		for _, u := range p.Updates {
			ids = append(ids, string(u.ExpressionID)+"="+u.Payload.Preview)
		}
		s = fmt.Sprintf("updates@%d:%s", p.KernelID, strings.Join(ids, ","))
	case protocol.OutputParams:
		s = fmt.Sprintf("output@%d:%s", p.KernelID, p.Text)
	default:
		s = method
	}
	l.mu.Lock()
	l.notes = append(l.notes, s)
	l.mu.Unlock()
}

// A context's stream never sends one kernel's updates under another's
// kernelId (PROTOCOL.md 7.5): updates pending from the kernel a context
// left (it moved to another slot) go out, under that kernel's id, before
// the first update of the next kernel is queued.
func TestStreamKeepsKernelsApart(t *testing.T) {
	store, err := contexts.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	l := &noteList{}
	// FlushInterval is long: only the stream's own rules flush here.
	e := &Engine{cfg: Config{FlushInterval: time.Hour}, store: store,
		clients: newClientTable(), streams: map[protocol.ContextID]*stream{}}
	e.clients.connect("c", l)
	id := protocol.NewContextID()
	if _, _, err := store.CreateContext(id, "c"); err != nil {
		t.Fatal(err)
	}
	up := func(x, v string) []protocol.ExpressionUpdate {
		return []protocol.ExpressionUpdate{{ExpressionID: protocol.ExpressionID(x), Payload: protocol.ValuePayload(v)}}
	}
	st := e.stream(id)
	defer e.dropStream(id)
	st.updates(0, up("m:f/x", "1"))
	st.updates(0, up("m:f/y", "1"))
	st.updates(1, up("m:f/x", "2")) // the context moved to kernel 1
	st.output(1, protocol.Stdout, []byte("hi\n"), "m:f/x")
	st.updates(1, up("m:f/y", "2"))
	st.flush()
	l.mu.Lock()
	got := strings.Join(l.notes, " | ")
	l.mu.Unlock()
	want := "updates@0:m:f/x=1,m:f/y=1 | updates@1:m:f/x=2 | output@1:hi\n | updates@1:m:f/y=2"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
