package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/engine/enginetest"
	"github.com/ripple-run/ripple/protocol"
)

// The acceptance scenarios (enginetest.Scenarios) driven over the wire: a
// real server, the real engine, a real kernel, a WebSocket client.
// engine/scenario_test.go drives the same table through the Go API.
func TestWireScenarios(t *testing.T) {
	enginetest.RunScenarios(t, func(t *testing.T, files map[string]string) enginetest.Driver {
		s := serveProject(t, files, engine.Config{})
		c, _ := connect(t, s.url, "ide")
		return &wireDriver{c: c}
	})
}

// wireDriver is an enginetest.Driver over a WebSocket. A wait reads the
// messages from where the previous wait stopped.
type wireDriver struct {
	c   *client
	raw int // requests written by hand so far, for their ids
}

func (d *wireDriver) NewContext(pointer string) (protocol.ContextID, *enginetest.Run) {
	d.c.t.Helper()
	id := d.StartContext(pointer)
	return id, d.WaitRun(id)
}

func (d *wireDriver) StartContext(pointer string) protocol.ContextID {
	d.c.t.Helper()
	var res protocol.CreateContextResult
	d.c.call(protocol.MethodCreateContext, protocol.CreateContextParams{}, &res)
	mp, err := protocol.ParseMethodPointer(pointer)
	if err != nil {
		d.c.t.Fatal(err)
	}
	d.c.call(protocol.MethodPush, protocol.PushParams{ContextID: res.ContextID, StackItem: protocol.NewExplicitCall(mp)}, nil)
	return res.ContextID
}

// Recompute writes a list of ids in its wire form by hand, so the
// scenarios also check that form, not only what the protocol package's
// encoder makes of it.
func (d *wireDriver) Recompute(p protocol.RecomputeParams) {
	d.c.t.Helper()
	if inv := p.InvalidatedExpressions; inv != nil && !inv.All && len(inv.IDs) > 0 {
		ids, err := json.Marshal(inv.IDs)
		if err != nil {
			d.c.t.Fatal(err)
		}
		d.raw++
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":"raw-%d","method":%q,"params":{"contextId":%q,"invalidatedExpressions":%s}}`,
			d.raw, protocol.MethodRecompute, p.ContextID, ids)
		if err := d.c.c.WriteRaw([]byte(msg)); err != nil {
			d.c.t.Fatal(err)
		}
		return
	}
	d.c.call(protocol.MethodRecompute, p, nil)
}

func (d *wireDriver) Push(p protocol.PushParams) { d.c.call(protocol.MethodPush, p, nil) }

func (d *wireDriver) Pop(id protocol.ContextID) {
	d.c.call(protocol.MethodPop, protocol.PopParams{ContextID: id}, nil)
}

func (d *wireDriver) Interrupt(id protocol.ContextID) {
	d.c.call(protocol.MethodInterrupt, protocol.InterruptParams{ContextID: id}, nil)
}

func (d *wireDriver) AttachVisualization(p protocol.AttachVisualizationParams) {
	d.c.call(protocol.MethodAttachVisualization, p, nil)
}

func (d *wireDriver) DetachVisualization(p protocol.DetachVisualizationParams) {
	d.c.call(protocol.MethodDetachVisualization, p, nil)
}

func (d *wireDriver) ExecuteExpression(p protocol.ExecuteExpressionParams) {
	d.c.call(protocol.MethodExecuteExpression, p, nil)
}

func (d *wireDriver) SetText(path, text string) { d.c.setText(path, text) }

// WaitRun decodes the notifications the wait read into the protocol's
// types, as the engine hands them to an in-process client.
func (d *wireDriver) WaitRun(id protocol.ContextID) *enginetest.Run {
	d.c.t.Helper()
	run := &enginetest.Run{}
	for _, m := range d.c.waitRun(id).messages {
		if !m.IsNotification() {
			continue
		}
		var params any
		switch m.Method {
		case protocol.NotifyExpressionUpdates:
			params = decodeAs[protocol.ExpressionUpdatesParams](d.c.t, m.Params)
		case protocol.NotifyOutput:
			params = decodeAs[protocol.OutputParams](d.c.t, m.Params)
		case protocol.NotifyVisualizationUpdate:
			params = decodeAs[protocol.VisualizationUpdateParams](d.c.t, m.Params)
		case protocol.NotifyVisualizationEvaluationFailed:
			params = decodeAs[protocol.VisualizationEvaluationFailedParams](d.c.t, m.Params)
		case protocol.NotifyExecutionStatus:
			params = decodeAs[protocol.ExecutionStatusParams](d.c.t, m.Params)
		case protocol.NotifyExecutionFailed:
			params = decodeAs[protocol.ExecutionFailedParams](d.c.t, m.Params)
		case protocol.NotifyExecutionComplete:
			params = decodeAs[protocol.ExecutionCompleteParams](d.c.t, m.Params)
		default:
			continue
		}
		run.Add(id, m.Method, params)
	}
	return run
}

func (d *wireDriver) WaitValue(id protocol.ContextID, expr protocol.ExpressionID) {
	d.c.t.Helper()
	d.c.waitFor(protocol.NotifyExpressionUpdates, func(raw json.RawMessage) bool {
		var p protocol.ExpressionUpdatesParams
		_ = json.Unmarshal(raw, &p)
		return p.ContextID == id && slices.ContainsFunc(p.Updates, func(u protocol.ExpressionUpdate) bool {
			return u.ExpressionID == expr && u.Payload.Type == protocol.PayloadValue
		})
	})
}

// decodeAs decodes a notification's params as a T.
func decodeAs[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	mustDecode(t, raw, &v)
	return v
}
