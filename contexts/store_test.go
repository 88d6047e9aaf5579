package contexts

import (
	"errors"
	"strings"
	"testing"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/protocol"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

const (
	ctxA = protocol.ContextID("6f1c2a5e-3b7d-4c1e-9a2b-0d4e5f6a7b8c")
	ctxB = protocol.ContextID("7a2d3b6f-4c8e-4d2f-8b3c-1e5f6a7b8c9d")
	ctxC = protocol.ContextID("8b3e4c7a-5d9f-4e3a-9c4d-2f6a7b8c9d0e")
	visA = protocol.VisualizationID("0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b")
	visB = protocol.VisualizationID("1c0f9e8d-7b6a-4f4e-9d3c-2b1a0f9e8d7c")
)

var mainMain = protocol.MethodPointer{Module: "main", Name: "main"}

// bundle is what most tests start from: a store with context ctxA owned by
// client "c1" whose stack holds main:main.
type bundle struct {
	store  *Store
	bottom *Frame
}

func setup(t testing.TB) bundle {
	t.Helper()
	s := newStore(t)
	if _, _, err := s.CreateContext(ctxA, "c1"); err != nil {
		t.Fatal(err)
	}
	bottom, err := s.Push(ctxA, protocol.NewExplicitCall(mainMain))
	if err != nil {
		t.Fatal(err)
	}
	return bundle{store: s, bottom: bottom}
}

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func value(id protocol.ExpressionID, preview string) protocol.ExpressionUpdate {
	return protocol.ExpressionUpdate{
		ExpressionID:  id,
		Type:          "builtins.int",
		ProfilingInfo: []protocol.ProfilingInfo{protocol.ExecutionTime(10)},
		Payload:       protocol.ValuePayload(preview),
	}
}

// fired reports whether a channel of ws has closed. go-memdb closes them
// inside Commit, so a write that returned has already fired its watches:
// no waiting needed.
func fired(ws memdb.WatchSet) bool {
	for ch := range ws {
		select {
		case <-ch:
			return true
		default:
		}
	}
	return false
}

func wantErr(t *testing.T, err, sentinel error, what string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: error %v, want %v", what, err, sentinel)
	}
}

func TestSchemaBuilds(t *testing.T) {
	t.Parallel()
	schema := dbSchema()
	if err := schema.Validate(); err != nil {
		t.Fatalf("schema: %v", err)
	}
	if _, err := memdb.NewMemDB(schema); err != nil {
		t.Fatalf("NewMemDB: %v", err)
	}
	for _, table := range []string{tableContexts, tableFrames, tableVisualizations, tableUpdates, tableIndex} {
		if schema.Tables[table] == nil {
			t.Errorf("table %q missing", table)
		}
	}
}

func TestWriteStampsTableIndexes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	before := s.LatestIndex()
	if before == 0 {
		t.Fatal("two writes left LatestIndex at 0")
	}
	ctxIndex, _ := s.TableIndex(nil, tableContexts)
	if err := s.RecordUpdates(b.bottom, []protocol.ExpressionUpdate{value("main:main/x", "6")}); err != nil {
		t.Fatal(err)
	}
	after := s.LatestIndex()
	if after != before+1 {
		t.Errorf("LatestIndex %d -> %d, want +1", before, after)
	}
	if got, _ := s.TableIndex(nil, tableUpdates); got != after {
		t.Errorf("updates table index %d, want %d", got, after)
	}
	if got, _ := s.TableIndex(nil, tableContexts); got != ctxIndex {
		t.Errorf("contexts table index moved %d -> %d on a write to updates only", ctxIndex, got)
	}

	// A failed write and a write that changes nothing use no index.
	if _, err := s.Pop(ctxB); err == nil {
		t.Fatal("pop of an unknown context succeeded")
	}
	if err := s.SetStatus(ctxA, StatusIdle); err != nil { // already idle
		t.Fatal(err)
	}
	if got := s.LatestIndex(); got != after {
		t.Errorf("LatestIndex moved to %d on writes that changed nothing", got)
	}
}

func TestProtocolErrorMapsSentinels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	_, popErr := s.Pop(ctxB)
	_, pushErr := s.Push(ctxA, protocol.NewExplicitCall(mainMain))
	_, exprErr := s.ExpressionUpdate(nil, ctxA, 0, "main:main/q")
	tests := []struct {
		err  error
		code protocol.Code
		has  string
	}{
		{popErr, protocol.CodeContextNotFound, string(ctxB)},
		{pushErr, protocol.CodeInvalidStackItem, string(ctxA)},
		{exprErr, protocol.CodeExpressionNotFound, "main:main/q"},
		{s.DetachVisualization(ctxA, visA, "main:main/x"), protocol.CodeVisualizationNotFound, string(visA)},
		{errors.New("other"), protocol.CodeInternalError, "other"},
	}
	for _, tt := range tests {
		e := ProtocolError(tt.err)
		if e.Code != tt.code || !strings.Contains(e.Message, tt.has) {
			t.Errorf("ProtocolError(%v) = %d %q, want %d naming %q", tt.err, e.Code, e.Message, tt.code, tt.has)
		}
		if !errors.Is(e, tt.err) && tt.code != protocol.CodeInternalError {
			t.Errorf("ProtocolError(%v) does not wrap it", tt.err)
		}
	}
	if ProtocolError(nil) != nil {
		t.Error("ProtocolError(nil) != nil")
	}
	if _, err := s.Pop(ctxA); err != nil {
		t.Fatal(err)
	}
	_, emptyErr := s.Pop(ctxA)
	if e := ProtocolError(emptyErr); e.Code != protocol.CodeEmptyStack {
		t.Errorf("ProtocolError(%v) = %v", emptyErr, e)
	}
}
