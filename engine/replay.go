package engine

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/protocol"
)

// Output that belongs to a value (PROTOCOL.md 8.3): the engine keeps, per
// context, what each statement of its top frame printed and displayed in
// the run that computed its value, and sends it again, marked replayed, to
// a client that did not see it: a client that subscribes to a context it
// did not create (a second tab), a client reconnecting to a server that
// restarted. Statements the kernel restored from the value journal come
// with their output from the kernel (its "replay" progress event), which
// the engine forwards to the context's clients and keeps as well.
//
// What is kept for a statement is cleared when it starts running again
// (its running mark, PROTOCOL.md 8.4), capped at keptOutputCap bytes.

// keptOutputCap is what is kept per statement (the kernel's cap too,
// ripple_kernel/keptoutput.py).
const keptOutputCap = 1 << 20

// keptItem is one piece of a statement's output: text of a stream, or a
// displayData bundle (Data set).
type keptItem struct {
	Stream protocol.OutputStream
	Text   []byte
	Data   json.RawMessage
}

// contextOutput is what one context's statements printed and displayed.
type contextOutput struct {
	items map[protocol.ExpressionID][]keptItem
	size  map[protocol.ExpressionID]int
	// shown: clients that were sent this context's output as it was
	// produced, or replayed, in this server process.
	shown map[string]bool
	// ended: clients that were sent the end of the context's last run
	// (executionComplete or executionFailed) in this server process;
	// emptied when a run begins.
	ended map[string]bool
}

// keptOutputs holds every context's contextOutput. The zero value is ready.
type keptOutputs struct {
	mu sync.Mutex
	// byContext is guarded by mu.
	byContext map[protocol.ContextID]*contextOutput
}

func (k *keptOutputs) context(id protocol.ContextID) *contextOutput {
	if k.byContext == nil {
		k.byContext = make(map[protocol.ContextID]*contextOutput)
	}
	c := k.byContext[id]
	if c == nil {
		c = &contextOutput{items: map[protocol.ExpressionID][]keptItem{}, size: map[protocol.ExpressionID]int{}, shown: map[string]bool{}, ended: map[string]bool{}}
		k.byContext[id] = c
	}
	return c
}

// add keeps a piece of expr's output (expr "": output of no statement,
// not kept).
func (k *keptOutputs) add(id protocol.ContextID, expr protocol.ExpressionID, it keptItem) {
	if expr == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.context(id)
	n := len(it.Text) + len(it.Data)
	if c.size[expr]+n > keptOutputCap {
		if c.size[expr] <= keptOutputCap {
			// Once: what a client replays says that it is cut.
			c.size[expr] = keptOutputCap + 1
			c.items[expr] = append(c.items[expr], keptItem{Stream: protocol.Stderr, Text: []byte("\n[ripple: output beyond 1 MiB not kept]\n")})
		}
		return
	}
	c.size[expr] += n
	items := c.items[expr]
	if last := len(items) - 1; it.Data == nil && last >= 0 && items[last].Data == nil && items[last].Stream == it.Stream {
		items[last].Text = append(items[last].Text, it.Text...)
		return
	}
	it.Text = slices.Clone(it.Text)
	c.items[expr] = append(items, it)
}

// started forgets what statements that run again printed before.
func (k *keptOutputs) started(id protocol.ContextID, us []protocol.ExpressionUpdate) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.byContext[id]
	if c == nil {
		return
	}
	for i := range us {
		if us[i].Payload.IsRunning() {
			delete(c.items, us[i].ExpressionID)
			delete(c.size, us[i].ExpressionID)
		}
	}
}

// markShown records that clients saw the context's output as it came.
func (k *keptOutputs) markShown(id protocol.ContextID, clients []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.context(id)
	for _, cl := range clients {
		c.shown[cl] = true
	}
}

// runBegan forgets who saw the end of the previous run.
func (k *keptOutputs) runBegan(id protocol.ContextID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	clear(k.context(id).ended)
}

// markEnded records that clients were sent the end of the context's run.
func (k *keptOutputs) markEnded(id protocol.ContextID, clients []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.context(id)
	for _, cl := range clients {
		c.ended[cl] = true
	}
}

// sawEnd tells whether a client was sent the end of the context's last run.
func (k *keptOutputs) sawEnd(id protocol.ContextID, clientID string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.context(id).ended[clientID]
}

// forget drops a destroyed context's output.
func (k *keptOutputs) forget(id protocol.ContextID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.byContext, id)
}

// toReplay returns the output of exprs (in that order) for a client that
// has not seen it, and marks it seen; nil when it has.
func (k *keptOutputs) toReplay(id protocol.ContextID, clientID string, exprs []protocol.ExpressionID) map[protocol.ExpressionID][]keptItem {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.context(id)
	if c.shown[clientID] {
		return nil
	}
	c.shown[clientID] = true
	out := make(map[protocol.ExpressionID][]keptItem, len(exprs))
	for _, x := range exprs {
		if items := c.items[x]; len(items) > 0 {
			out[x] = slices.Clone(items)
		}
	}
	return out
}

// replayItem is one item of the kernel's "replay" progress event.
type replayItem struct {
	ExpressionID protocol.ExpressionID `json:"expressionId"`
	Stream       protocol.OutputStream `json:"stream"`
	Text         string                `json:"text"`
	Data         json.RawMessage       `json:"data"`
}

// replayed forwards the output of statements the kernel restored from the
// journal to the context's clients, marked replayed, and keeps it.
func (s *runSink) replayed(items []replayItem) {
	for _, it := range items {
		if it.Data != nil {
			s.e.kept.add(s.id, it.ExpressionID, keptItem{Data: slices.Clone(it.Data)})
			s.stream.send(protocol.NotifyDisplayData, protocol.DisplayDataParams{ContextID: s.id, KernelID: s.slot, ExpressionID: it.ExpressionID, Data: slices.Clone(it.Data), Replayed: true})
			continue
		}
		s.e.kept.add(s.id, it.ExpressionID, keptItem{Stream: it.Stream, Text: []byte(it.Text)})
		s.stream.send(protocol.NotifyOutput, protocol.OutputParams{ContextID: s.id, KernelID: s.slot, Stream: it.Stream, Text: it.Text, ExpressionID: it.ExpressionID, Replayed: true})
	}
}

// replayTo sends a client that did not see it the kept output of the
// context's top frame, in statement order, marked replayed.
func (e *Engine) replayTo(clientID string, id protocol.ContextID) {
	top, err := e.store.TopFrame(nil, id)
	if err != nil {
		return
	}
	us, err := e.currentFrameUpdates(id, top)
	if err != nil {
		return
	}
	sortBySource(us)
	exprs := make([]protocol.ExpressionID, len(us))
	for i := range us {
		exprs[i] = us[i].ExpressionID
	}
	kept := e.kept.toReplay(id, clientID, exprs)
	if len(kept) == 0 {
		return
	}
	st := e.stream(id)
	st.flush()
	kernelID := e.kernelOf(id)
	to := []string{clientID}
	for _, x := range exprs {
		for _, it := range kept[x] {
			if it.Data != nil {
				e.notifyClients(to, protocol.NotifyDisplayData, protocol.DisplayDataParams{ContextID: id, KernelID: kernelID, ExpressionID: x, Data: it.Data, Replayed: true})
				continue
			}
			e.notifyClients(to, protocol.NotifyOutput, protocol.OutputParams{ContextID: id, KernelID: kernelID, Stream: it.Stream, Text: string(it.Text), ExpressionID: x, Replayed: true})
		}
	}
}

// outputShown marks the connected owners of a context as seeing its
// output from the run that starts now on.
func (e *Engine) outputShown(id protocol.ContextID) {
	e.kept.runBegan(id)
	e.kept.markShown(id, e.connectedOwners(id))
}

// connectedOwners are the context's owners connected now: the clients its
// notifications reach.
func (e *Engine) connectedOwners(id protocol.ContextID) []string {
	owners, err := e.store.Owners(nil, id)
	if err != nil {
		return nil
	}
	var ids []string
	for _, o := range owners {
		if e.clients.connected(o.ClientID) {
			ids = append(ids, o.ClientID)
		}
	}
	return ids
}

// resendAsRun sends a reconnecting client's context the latest updates of
// its top frame as its last run reported them, for a client that did not
// see that run: fromCache is true only for values that run did not compute
// (PROTOCOL.md 8.4). A client that saw the run gets resend's state instead
// (Connect).
func (e *Engine) resendAsRun(id protocol.ContextID, f *contexts.Frame) {
	us, err := e.currentFrameUpdates(id, f)
	if err != nil || len(us) == 0 {
		return
	}
	sortBySource(us)
	e.stream(id).send(protocol.NotifyExpressionUpdates, protocol.ExpressionUpdatesParams{ContextID: id, KernelID: e.kernelOf(id), Updates: us})
}
