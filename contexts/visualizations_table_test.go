package contexts

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

func config(expr string) protocol.VisualizationConfiguration {
	return protocol.VisualizationConfiguration{Expression: expr}
}

func TestAttachModifyDetach(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	if _, _, err := s.CreateContext(ctxB, "c1"); err != nil {
		t.Fatal(err)
	}

	v, err := s.AttachVisualization(Visualization{ID: visA, ContextID: ctxA, ExpressionID: "main:main/x", Config: config("lambda v: v * 2")})
	if err != nil {
		t.Fatal(err)
	}
	if !v.NeedsInitialData || v.Config.ExecutionContextID != ctxA || v.CreateIndex == 0 {
		t.Errorf("attached %+v", v)
	}
	// The context can come from the configuration alone.
	if _, err := s.AttachVisualization(Visualization{ID: visB, ExpressionID: "main:main/y",
		Config: protocol.VisualizationConfiguration{ExecutionContextID: ctxA, Expression: "str"}}); err != nil {
		t.Fatal(err)
	}

	ofCtx, _ := s.VisualizationsOfContext(nil, ctxA)
	ofX, _ := s.VisualizationsOfExpression(nil, ctxA, "main:main/x")
	ofXinB, _ := s.VisualizationsOfExpression(nil, ctxB, "main:main/x")
	if len(ofCtx) != 2 || len(ofX) != 1 || ofX[0].ID != visA || len(ofXinB) != 0 {
		t.Errorf("lookups: context %d, expression %d, other context %d", len(ofCtx), len(ofX), len(ofXinB))
	}

	sent, _ := s.Visualization(nil, visA)
	if err := s.InitialDataSent(visA, sent.ModifyIndex); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Visualization(nil, visA); v.NeedsInitialData {
		t.Error("InitialDataSent did not clear the flag")
	}

	m, err := s.ModifyVisualization(visA, protocol.VisualizationConfiguration{ExecutionContextID: ctxA, Expression: "lambda v: v + 1", PositionalArgumentsExpressions: []string{"1"}})
	if err != nil {
		t.Fatal(err)
	}
	if !m.NeedsInitialData || m.Config.Expression != "lambda v: v + 1" || m.CreateIndex != v.CreateIndex || m.ExpressionID != "main:main/x" {
		t.Errorf("modified %+v", m)
	}

	// A modify between the engine's read and its InitialDataSent keeps the
	// flag: the modified visualization's data is still owed.
	read, _ := s.Visualization(nil, visA)
	if _, err := s.ModifyVisualization(visA, config("lambda v: v - 1")); err != nil {
		t.Fatal(err)
	}
	if err := s.InitialDataSent(visA, read.ModifyIndex); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Visualization(nil, visA); !v.NeedsInitialData || v.Config.Expression != "lambda v: v - 1" {
		t.Errorf("stale InitialDataSent cleared the flag of a newer modify: %+v", v)
	}

	// Errors leave the visualization as it was.
	before, _ := s.Visualization(nil, visA)
	errs := []struct {
		err    error
		want   error
		naming string
	}{
		{s.DetachVisualization(ctxB, visA, "main:main/x"), ErrVisualizationNotFound, string(ctxB)},
		{s.DetachVisualization(ctxA, visA, "main:main/z"), ErrVisualizationNotFound, "main:main/z"},
		{s.DetachVisualization(ctxA, "2d1e0f9e-8c7b-4a5f-8e4d-3c2b1a0f9e8d", "main:main/x"), ErrVisualizationNotFound, "2d1e0f9e"},
		{s.DetachVisualization(protocol.NewContextID(), visA, "main:main/x"), ErrContextNotFound, ""},
		{second(s.ModifyVisualization(visA, protocol.VisualizationConfiguration{ExecutionContextID: ctxB, Expression: "x"})), ErrVisualizationNotFound, string(ctxB)},
		{second(s.ModifyVisualization("2d1e0f9e-8c7b-4a5f-8e4d-3c2b1a0f9e8d", config("x"))), ErrVisualizationNotFound, "2d1e0f9e"},
		{second(s.AttachVisualization(Visualization{ID: visA, ContextID: protocol.NewContextID(), ExpressionID: "main:main/x", Config: config("x")})), ErrContextNotFound, ""},
		{second(s.AttachVisualization(Visualization{ID: visA, ContextID: ctxA, ExpressionID: "main:main/x",
			Config: protocol.VisualizationConfiguration{ExecutionContextID: ctxB, Expression: "x"}})), ErrInvalidID, string(ctxB)},
		{second(s.AttachVisualization(Visualization{ID: visA, ContextID: ctxA, Config: config("x")})), ErrInvalidID, "empty expression id"},
		{second(s.AttachVisualization(Visualization{ContextID: ctxA, ExpressionID: "main:main/x", Config: config("x")})), ErrInvalidID, "empty visualization id"},
	}
	for i, e := range errs {
		wantErr(t, e.err, e.want, "error case")
		if !strings.Contains(e.err.Error(), e.naming) {
			t.Errorf("case %d: %q does not name %q", i, e.err, e.naming)
		}
	}
	if after, _ := s.Visualization(nil, visA); after.ModifyIndex != before.ModifyIndex || after.Config.Expression != before.Config.Expression {
		t.Errorf("a failed operation changed the visualization: %+v", after)
	}

	// Re-attaching the same id replaces it and keeps its CreateIndex.
	re, err := s.AttachVisualization(Visualization{ID: visA, ContextID: ctxA, ExpressionID: "main:main/z", Config: config("repr")})
	if err != nil || re.CreateIndex != v.CreateIndex || re.ExpressionID != "main:main/z" {
		t.Errorf("re-attach: %+v, %v", re, err)
	}
	if ofX, _ := s.VisualizationsOfExpression(nil, ctxA, "main:main/x"); len(ofX) != 0 {
		t.Errorf("re-attached visualization still indexed under its old expression: %+v", ofX)
	}

	if err := s.DetachVisualization(ctxA, visA, "main:main/z"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Visualization(nil, visA)
	wantErr(t, err, ErrVisualizationNotFound, "after detach")
	if err := s.InitialDataSent(visA, 1); err != nil {
		t.Errorf("InitialDataSent of a detached visualization: %v", err)
	}
	if ofCtx, _ := s.VisualizationsOfContext(nil, ctxA); len(ofCtx) != 1 || ofCtx[0].ID != visB {
		t.Errorf("after detach: %+v", ofCtx)
	}
}

func TestOneShotVisualizationIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v, err := b.store.AttachVisualization(Visualization{ID: visA, ContextID: ctxA, ExpressionID: "main:main/z", Config: config("lambda _: x + y"), OneShot: true})
	if err != nil || !v.OneShot {
		t.Fatalf("one-shot attach: %+v, %v", v, err)
	}
	if got, _ := b.store.Visualization(nil, visA); !got.OneShot {
		t.Error("OneShot not stored")
	}
}

func second[T any](_ T, err error) error { return err }
