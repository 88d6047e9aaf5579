package jupyter

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ripple-run/ripple/protocol"
)

// notes is the session's engine client: the notifications in arrival
// order. Notify never blocks (the engine calls it under its client
// table's mutex); Execute reads from a mark.
type notes struct {
	mu    sync.Mutex
	base  int    // index of items[0] in the whole log; guarded by mu
	items []note // guarded by mu
	wake  chan struct{}
}

type note struct {
	method string
	params any
}

func newNotes() *notes { return &notes{wake: make(chan struct{}, 1)} }

// Notify implements engine.Client.
func (n *notes) Notify(method string, params any) {
	n.mu.Lock()
	n.items = append(n.items, note{method, params})
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// mark is the index the next notification will have.
func (n *notes) mark() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.base + len(n.items)
}

// next waits for the notifications from index from on, and forgets the
// ones before it.
func (n *notes) next(ctx context.Context, from int) ([]note, int, error) {
	for {
		n.mu.Lock()
		if from > n.base {
			drop := min(from-n.base, len(n.items))
			n.items = slices.Delete(n.items, 0, drop)
			n.base += drop
		}
		if n.base+len(n.items) > from {
			out := slices.Clone(n.items[from-n.base:])
			n.mu.Unlock()
			return out, from + len(out), nil
		}
		n.mu.Unlock()
		select {
		case <-n.wake:
		case <-ctx.Done():
			return nil, from, ctx.Err()
		}
	}
}

// decodeParams gives a notification's params as T, whether the engine
// sent a T, a *T, or something that encodes to T's JSON.
func decodeParams[T any](p any) (T, bool) {
	switch v := p.(type) {
	case T:
		return v, true
	case *T:
		return *v, v != nil
	}
	var out T
	b, err := json.Marshal(p)
	if err != nil {
		return out, false
	}
	return out, json.Unmarshal(b, &out) == nil
}

// run follows one run of the notebook's context: output goes to out (nil:
// the restore run, which shows nothing), statements of the cell in slot
// that come from the cache show their kept output again.
type run struct {
	s      *Session
	out    Output
	slot   int
	starts []int

	// elsewhere are the statements of other cells (known before the run):
	// when the engine runs them again (their inputs changed, or an object
	// they made is mutated by this cell), their output is kept for their
	// own cell, not shown under this one.
	elsewhere map[string]bool
	last      map[string]protocol.ExpressionUpdate // latest update per statement
	computed  map[string]bool                      // statements that ran in this run
	replayed  map[string]bool
	fresh     map[string][]outputItem // what each statement showed in this run
	freshSize map[string]int          // bytes in fresh, per statement
	held      outputItem              // stream text not sent yet (publish)
	heldSince time.Time               // when its first byte came
	diags     []protocol.Diagnostic
	failed    *protocol.ExecutionResult
	// resultExpr is the statement whose value the cell showed as its
	// execute_result (run or replayed), "" if none: Out[count] is it.
	resultExpr string
}

func newRun(s *Session, out Output, slot int, starts []int) *run {
	return &run{s: s, out: out, slot: slot, starts: starts, last: map[string]protocol.ExpressionUpdate{},
		computed: map[string]bool{}, replayed: map[string]bool{}, fresh: map[string][]outputItem{}, freshSize: map[string]int{}}
}

// wait handles notifications from mark until the run's end.
func (r *run) wait(ctx context.Context, mark int) {
	for {
		batch, next, err := r.nextBatch(ctx, mark)
		if err != nil {
			r.flush()
			r.failed = &protocol.ExecutionResult{Kind: protocol.ResultInterrupted, Message: err.Error()}
			return
		}
		mark = next
		for _, n := range batch {
			if r.handle(n) {
				r.flush()
				return
			}
		}
	}
}

// streamHold is how long stream text waits for more of it: the pieces
// of one print (or of a loop's prints) go out as one stream message, as
// ipykernel sends them, not one message per write.
const (
	streamHold  = 20 * time.Millisecond
	streamChunk = 64 << 10
)

// nextBatch is client.next; while stream text is held it waits at most
// streamHold, then sends the text and waits on.
func (r *run) nextBatch(ctx context.Context, mark int) ([]note, int, error) {
	if r.held.Text == "" {
		return r.s.client.next(ctx, mark)
	}
	short, cancel := context.WithTimeout(ctx, streamHold)
	batch, next, err := r.s.client.next(short, mark)
	cancel()
	if err == nil || ctx.Err() != nil {
		return batch, next, err
	}
	r.flush()
	return r.s.client.next(ctx, mark)
}

// handle takes one notification; true at the run's end.
func (r *run) handle(n note) bool {
	id := r.s.ctxID
	switch n.method {
	case protocol.NotifyOutput:
		p, ok := decodeParams[protocol.OutputParams](n.params)
		if ok && p.ContextID == id {
			r.show(string(p.ExpressionID), outputItem{Kind: string(p.Stream), Text: p.Text})
		}
	case protocol.NotifyDisplayData:
		p, ok := decodeParams[protocol.DisplayDataParams](n.params)
		if ok && p.ContextID == id {
			r.show(string(p.ExpressionID), displayItem(p.Data))
		}
	case protocol.NotifyExpressionUpdates:
		p, ok := decodeParams[protocol.ExpressionUpdatesParams](n.params)
		if ok && p.ContextID == id {
			for _, u := range p.Updates {
				r.update(u)
			}
		}
	case protocol.NotifyExecutionStatus:
		p, ok := decodeParams[protocol.ExecutionStatusParams](n.params)
		if ok && p.ContextID == id {
			r.diags = p.Diagnostics
		}
	case protocol.NotifyExecutionComplete:
		p, ok := decodeParams[protocol.ExecutionCompleteParams](n.params)
		return ok && p.ContextID == id
	case protocol.NotifyExecutionFailed:
		p, ok := decodeParams[protocol.ExecutionFailedParams](n.params)
		if ok && p.ContextID == id {
			res := p.Result
			r.failed = &res
			return true
		}
	}
	return false
}

// displayItem is a displayData bundle: the cell's result when the kernel
// marked it (notebook.RESULT_MIME), else a display.
func displayItem(data json.RawMessage) outputItem {
	var bundle map[string]json.RawMessage
	if json.Unmarshal(data, &bundle) == nil {
		if w, ok := bundle[clearMime]; ok {
			return outputItem{Kind: "clear", Data: w}
		}
		if c, ok := bundle[commMime]; ok {
			return outputItem{Kind: "comm", Data: c}
		}
		if _, ok := bundle[resultMime]; ok {
			delete(bundle, resultMime)
			b, _ := json.Marshal(bundle)
			return outputItem{Kind: "result", Data: b}
		}
	}
	return outputItem{Kind: "display", Data: data}
}

// The kernel's marks on displayData bundles (notebook.RESULT_MIME,
// display.CLEAR_MIME).
const (
	resultMime = "application/vnd.ripple.execute-result"
	clearMime  = "application/vnd.ripple.clear-output+json"
	commMime   = "application/vnd.ripple.comm+json" // jupyter_comm.COMM_MIME
)

// show publishes an item, unless another cell's statement made it, and
// keeps it as the statement's output.
func (r *run) show(expr string, it outputItem) {
	if it.Kind == "comm" {
		// A comm message is sent once, never kept to be shown again.
		r.publish(it)
		return
	}
	if it.Kind == "result" && !r.elsewhere[expr] {
		r.resultExpr = expr
	}
	if expr != "" && r.freshSize[expr] <= outputCap {
		// Kept up to just past the cap (keepOutput cuts there and notes
		// it): a long stream is not copied again for every write.
		r.freshSize[expr] += len(it.Text) + len(it.Data)
		items := r.fresh[expr]
		if k := len(items) - 1; k >= 0 && it.Text != "" && items[k].Kind == it.Kind {
			items[k].Text += it.Text
		} else {
			items = append(items, it)
		}
		r.fresh[expr] = items
	}
	if !r.elsewhere[expr] {
		r.publish(it)
	}
}

// publish shows an item; stream text is held (streamHold) and sent with
// what follows it on the same stream.
func (r *run) publish(it outputItem) {
	if r.out == nil {
		return
	}
	if it.Kind == "stdout" || it.Kind == "stderr" {
		if r.held.Kind != it.Kind {
			r.flush()
		}
		if r.held.Text == "" {
			r.heldSince = time.Now()
		}
		r.held.Kind = it.Kind
		r.held.Text += it.Text
		// A long stream goes out in pieces of streamChunk, at least every
		// streamHold.
		if len(r.held.Text) >= streamChunk || time.Since(r.heldSince) >= streamHold {
			r.flush()
		}
		return
	}
	r.flush()
	r.send(it)
}

// flush sends the held stream text.
func (r *run) flush() {
	if r.held.Text != "" {
		r.send(r.held)
	}
	r.held = outputItem{}
}

func (r *run) send(it outputItem) {
	switch it.Kind {
	case "stdout", "stderr":
		r.out.Stream(it.Kind, it.Text)
	case "display":
		r.out.Display(it.Data, it.Metadata, false, "")
	case "result":
		r.out.Result(it.Data, it.Metadata)
	case "clear":
		var w struct {
			Wait bool `json:"wait"`
		}
		_ = json.Unmarshal(it.Data, &w)
		r.out.ClearOutput(w.Wait)
	case "comm":
		var c CommMessage
		if co, ok := r.out.(interface {
			Comm(msgType string, content, metadata json.RawMessage)
		}); ok && json.Unmarshal(it.Data, &c) == nil {
			co.Comm(c.MsgType, c.Content, c.Metadata)
		}
	}
}

func (r *run) update(u protocol.ExpressionUpdate) {
	id := string(u.ExpressionID)
	r.last[id] = u
	if u.Payload.Type == protocol.PayloadValue && !u.FromCache {
		r.computed[id] = true
	}
}

// replay shows again the kept output of the cell's statements that did
// not run (the engine took them from the cache and may not even have
// sent their updates: the client had seen them), in statement order.
// They come after the output of the statements that ran: a cell that
// mixes both shows its cached statements' output last.
func (r *run) replay() {
	if r.out == nil || r.slot < 0 {
		return
	}
	us, err := r.s.eng.TopFrameUpdates(r.s.ctxID)
	if err != nil {
		return
	}
	sort.Slice(us, func(i, j int) bool {
		return us[i].Range != nil && us[j].Range != nil && us[i].Range.Start.Line < us[j].Range.Start.Line
	})
	for _, u := range us {
		id := string(u.ExpressionID)
		if u.Payload.Type != protocol.PayloadValue || r.computed[id] || r.replayed[id] || !r.inCell(u) {
			continue
		}
		r.replayed[id] = true
		for _, it := range r.s.state.Outputs[id] {
			if it.Kind == "result" {
				r.resultExpr = id
			}
			r.publish(it)
		}
	}
	r.flush()
}

func (r *run) inCell(u protocol.ExpressionUpdate) bool {
	return u.Range != nil && r.slot >= 0 && slotOf(r.starts, u.Range.Start.Line) == r.slot
}

// result is the execute_reply of the run, and the cut it makes in the
// script (a statement that raised or was interrupted, and what follows
// it in its slot, did not happen).
func (r *run) result() ExecuteResult {
	cutAt := func(id protocol.ExpressionID) {
		u, ok := r.last[string(id)]
		if !ok || u.Range == nil {
			return
		}
		if i := slotOf(r.starts, u.Range.Start.Line); i >= 0 {
			r.s.state.cut(r.starts, i, u.Range.Start.Line)
		}
	}
	if r.failed != nil {
		if r.failed.Kind == protocol.ResultInterrupted {
			if id := r.interrupted(); id != "" {
				cutAt(id)
			}
			return ExecuteResult{Status: "error", EName: "KeyboardInterrupt", EValue: "", Traceback: []string{"KeyboardInterrupt: interrupted by the frontend"}}
		}
		return ExecuteResult{Status: "error", EName: "RippleError", EValue: r.failed.Message, Traceback: []string{string(r.failed.Kind) + ": " + r.failed.Message}}
	}
	for _, d := range r.diags {
		if d.Kind != protocol.DiagnosticError {
			continue
		}
		if d.ExpressionID != "" {
			cutAt(d.ExpressionID)
		}
		ename, evalue := splitException(d.Message)
		return ExecuteResult{Status: "error", EName: ename, EValue: evalue, Traceback: traceback(d, r.starts)}
	}
	return ExecuteResult{Status: "ok"}
}

// interrupted is the statement the interrupt stopped: the first one (in
// script order) left not reached because of it.
func (r *run) interrupted() protocol.ExpressionID {
	var ids []protocol.ExpressionUpdate
	for _, u := range r.last {
		if u.Payload.Type == protocol.PayloadPending && u.Range != nil &&
			(u.Payload.Message == "running" || (u.Payload.Reason != nil && u.Payload.Reason.Kind == "interrupted")) {
			ids = append(ids, u)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Range.Start.Line < ids[j].Range.Start.Line })
	return ids[0].ExpressionID
}

// splitException splits "ValueError: bad value" into its name and value.
func splitException(msg string) (string, string) {
	head, rest, ok := strings.Cut(msg, ": ")
	if ok && head != "" && !strings.ContainsAny(head, " \n") {
		// "pkg.mod.Error" is Error, as ipykernel names it (type.__name__).
		return head[strings.LastIndexByte(head, '.')+1:], rest
	}
	if !strings.ContainsAny(msg, " \n") && msg != "" {
		return msg, ""
	}
	return "Exception", msg
}

// traceback is a diagnostic as Jupyter's traceback lines.
func traceback(d protocol.Diagnostic, starts []int) []string {
	lines := []string{"Traceback (most recent call last):"}
	for _, f := range d.Stack {
		where, line := f.Path, ""
		if f.Location != nil {
			line = fmt.Sprintf(", line %d", f.Location.Start.Line+1)
		}
		switch {
		case where == "" || where == cellsFile:
			// A line of the script is a line of one cell.
			where = "<cell>"
			if f.Location != nil {
				if i := slotOf(starts, f.Location.Start.Line); i >= 0 {
					line = fmt.Sprintf(", line %d", f.Location.Start.Line-starts[i]+1)
				}
			}
			if f.FunctionName == "__main__" {
				f.FunctionName = "<module>"
			}
		default:
			where = filepath.Clean(where)
		}
		lines = append(lines, fmt.Sprintf("  File %q%s, in %s", where, line, f.FunctionName))
	}
	return append(lines, d.Message)
}
