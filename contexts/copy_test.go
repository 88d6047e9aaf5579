package contexts

import (
	"reflect"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

// everything is every read of the store, for comparing whole states.
type everything struct {
	Context     *ExecutionContext
	Contexts    []*ExecutionContext
	OfClient    []*ExecutionContext
	OnSlot      []*ExecutionContext
	Owners      []Owner
	Stack       []*Frame
	Top         *Frame
	Vis         *Visualization
	VisOfCtx    []*Visualization
	VisOfExpr   []*Visualization
	Updates     []protocol.ExpressionUpdate
	Update      *Update
	LatestIndex uint64
}

func readEverything(t *testing.T, s *Store) everything {
	t.Helper()
	var e everything
	var err error
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	e.Context, err = s.Context(nil, ctxA)
	check(err)
	e.Contexts, err = s.Contexts(nil)
	check(err)
	e.OfClient, err = s.ContextsOfClient(nil, "c1")
	check(err)
	e.OnSlot, err = s.ContextsOnSlot(nil, 0)
	check(err)
	e.Owners, err = s.Owners(nil, ctxA)
	check(err)
	e.Stack, err = s.Stack(nil, ctxA)
	check(err)
	e.Top, err = s.TopFrame(nil, ctxA)
	check(err)
	e.Vis, err = s.Visualization(nil, visA)
	check(err)
	e.VisOfCtx, err = s.VisualizationsOfContext(nil, ctxA)
	check(err)
	e.VisOfExpr, err = s.VisualizationsOfExpression(nil, ctxA, "main:main/y")
	check(err)
	e.Updates, err = s.FrameUpdates(nil, ctxA, 0, 0)
	check(err)
	e.Update, err = s.ExpressionUpdate(nil, ctxA, 0, "main:main/y")
	check(err)
	e.LatestIndex = s.LatestIndex()
	return e
}

// scribble changes every field reachable from e, in place.
func scribble(e everything) {
	scribbleContext := func(c *ExecutionContext) {
		c.Status = "scribbled"
		c.KernelSlot = 99
		c.Owners[0].ClientID = "scribbled"
		c.Owners[0].Connected = false
		c.LastResult.Message = "scribbled"
		c.LastResult.Diagnostic.Stack[0].FunctionName = "scribbled"
		c.LastResult.Diagnostic.Location.Start.Line = 99
		c.Pending.IDs[0] = "scribbled"
	}
	scribbleContext(e.Context)
	for _, c := range append(append(e.Contexts, e.OfClient...), e.OnSlot...) {
		scribbleContext(c)
	}
	e.Owners[0].ClientID = "scribbled"
	for _, f := range append(e.Stack, e.Top) {
		f.Depth = 99
		f.Item.MethodPointer.Name = "scribbled"
		if len(f.Item.PositionalArgumentsExpressions) > 0 {
			f.Item.PositionalArgumentsExpressions[0] = "scribbled"
		}
	}
	for _, v := range append(append(e.VisOfCtx, e.VisOfExpr...), e.Vis) {
		v.Config.Expression = "scribbled"
		v.Config.PositionalArgumentsExpressions[0] = "scribbled"
		v.NeedsInitialData = !v.NeedsInitialData
	}
	scribbleUpdate := func(u *protocol.ExpressionUpdate) {
		u.Payload.Preview = "scribbled"
		u.Payload.Trace[0] = "scribbled"
		u.ProfilingInfo[0].NanoTime = 99
		u.MethodCall.MethodPointer.Name = "scribbled"
		u.Range.Start.Line = 99
	}
	for i := range e.Updates {
		scribbleUpdate(&e.Updates[i])
	}
	scribbleUpdate(&e.Update.Update)
}

// TestReadsReturnCopies: mutating anything a read returned changes nothing
// in the store.
func TestReadsReturnCopies(t *testing.T) {
	t.Parallel()
	s, inputs := richStore(t)
	before := readEverything(t, s)
	scribble(readEverything(t, s))
	if after := readEverything(t, s); !reflect.DeepEqual(before, after) {
		t.Errorf("mutating returned records changed the store\nbefore %+v\nafter  %+v", before, after)
	}

	// Nor does mutating what was passed in, or what writes returned.
	inputs.scribble()
	if after := readEverything(t, s); !reflect.DeepEqual(before, after) {
		t.Errorf("mutating a write's arguments or results changed the store")
	}
}

// writeInputs keeps what richStore passed to and got from writes.
type writeInputs struct {
	item      protocol.StackItem
	frame     *Frame
	result    *protocol.ExecutionResult
	finished  *ExecutionContext
	created   *ExecutionContext
	inv       protocol.InvalidatedExpressions
	vis       Visualization
	attached  *Visualization
	cfg       protocol.VisualizationConfiguration
	modified  *Visualization
	updates   []protocol.ExpressionUpdate
	reconnect []*ExecutionContext
}

func (w *writeInputs) scribble() {
	w.item.PositionalArgumentsExpressions[0] = "scribbled"
	w.frame.Item.PositionalArgumentsExpressions[0] = "scribbled"
	w.result.Diagnostic.Stack[0].FunctionName = "scribbled"
	w.finished.LastResult.Message = "scribbled"
	w.finished.Owners[0].ClientID = "scribbled"
	w.created.Owners[0].Connected = false
	w.inv.IDs[0] = "scribbled"
	w.vis.Config.PositionalArgumentsExpressions[0] = "scribbled"
	w.attached.Config.PositionalArgumentsExpressions[0] = "scribbled"
	w.cfg.PositionalArgumentsExpressions[0] = "scribbled"
	w.modified.Config.PositionalArgumentsExpressions[0] = "scribbled"
	for i := range w.updates {
		w.updates[i].Payload.Trace[0] = "scribbled"
		w.updates[i].ProfilingInfo[0].NanoTime = 99
		w.updates[i].Range.End.Line = 99
		w.updates[i].MethodCall.MethodPointer.Module = "scribbled"
	}
	w.reconnect[0].Owners[0].ClientID = "scribbled"
}

// richStore builds a store where every record has every slice and pointer
// field filled, so scribbling can reach them all.
func richStore(t *testing.T) (*Store, *writeInputs) {
	t.Helper()
	s := newStore(t)
	w := &writeInputs{}
	var err error
	if w.created, _, err = s.CreateContext(ctxA, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AssignSlot(ctxA, 1); err != nil {
		t.Fatal(err)
	}
	w.item = protocol.NewExplicitCall(mainMain, "1", "2")
	if w.frame, err = s.Push(ctxA, w.item); err != nil {
		t.Fatal(err)
	}
	r := sampleRange()
	w.result = &protocol.ExecutionResult{Kind: protocol.ResultFailure, Message: "m", Diagnostic: &protocol.Diagnostic{
		Kind: protocol.DiagnosticError, Message: "m", Location: &r,
		Stack: []protocol.StackTraceElement{{FunctionName: "main", Location: &r}},
	}}
	if w.finished, err = s.FinishRun(ctxA, w.result); err != nil {
		t.Fatal(err)
	}
	w.inv = protocol.InvalidatedExpressions{IDs: []protocol.ExpressionID{"main:main/y"}}
	if err := s.Invalidate(ctxA, w.inv); err != nil {
		t.Fatal(err)
	}
	w.vis = Visualization{ID: visA, ContextID: ctxA, ExpressionID: "main:main/x",
		Config: protocol.VisualizationConfiguration{Expression: "f", PositionalArgumentsExpressions: []string{"1"}}}
	if w.attached, err = s.AttachVisualization(w.vis); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AttachVisualization(Visualization{ID: visB, ContextID: ctxA, ExpressionID: "main:main/y",
		Config: protocol.VisualizationConfiguration{Expression: "g", PositionalArgumentsExpressions: []string{"2"}}}); err != nil {
		t.Fatal(err)
	}
	w.cfg = protocol.VisualizationConfiguration{Expression: "h", PositionalArgumentsExpressions: []string{"3"}}
	if w.modified, err = s.ModifyVisualization(visA, w.cfg); err != nil {
		t.Fatal(err)
	}
	for _, id := range []protocol.ExpressionID{"main:main/x", "main:main/y"} {
		r := sampleRange()
		w.updates = append(w.updates, protocol.ExpressionUpdate{
			ExpressionID:  id,
			MethodCall:    &protocol.MethodCall{MethodPointer: protocol.MethodPointer{Module: "main", Name: "foo"}},
			ProfilingInfo: []protocol.ProfilingInfo{protocol.ExecutionTime(5)},
			Range:         &r,
			Payload:       protocol.PanicPayload("E: e", "main:main/x"),
		})
	}
	if err := s.RecordUpdates(w.frame, w.updates); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClientDisconnected("c1", s.now()); err != nil {
		t.Fatal(err)
	}
	if w.reconnect, err = s.ClientConnected("c1"); err != nil {
		t.Fatal(err)
	}
	return s, w
}

func sampleRange() protocol.Range {
	return protocol.Range{Start: protocol.Position{Line: 1, Character: 4}, End: protocol.Position{Line: 1, Character: 9}}
}
