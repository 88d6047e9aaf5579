package jobs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/jobs"
)

func exprs(ids ...jobs.ExpressionID) jobs.ExpressionSet { return jobs.SetOf(ids...) }

var allExprs = jobs.All[jobs.ExpressionID]()

// Rule 4: queued Executes of one context collapse into one.
func TestExecuteCollapse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		queued, req jobs.Execute
		want        jobs.Execute
	}{
		{
			name:   "union of expressions",
			queued: jobs.Execute{Context: "c", Expressions: exprs("m:f/a"), Priority: jobs.PriorityInteractive, Reason: jobs.ReasonVisualization},
			req:    jobs.Execute{Context: "c", Expressions: exprs("m:f/b"), Priority: jobs.PriorityInteractive, Reason: jobs.ReasonExecuteExpression},
			want:   jobs.Execute{Context: "c", Expressions: exprs("m:f/a", "m:f/b"), Priority: jobs.PriorityInteractive, Reason: jobs.ReasonVisualization | jobs.ReasonExecuteExpression},
		},
		{
			name:   "all wins over a set",
			queued: jobs.Execute{Context: "c", Expressions: exprs("m:f/a"), Priority: jobs.PriorityInteractive},
			req:    jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser},
			want:   jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityInteractive},
		},
		{
			name:   "an empty set means all and wins",
			queued: jobs.Execute{Context: "c", Priority: jobs.PriorityUser},
			req:    jobs.Execute{Context: "c", Expressions: exprs("m:f/a"), Priority: jobs.PriorityUser},
			want:   jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser},
		},
		{
			name:   "higher priority wins from the request",
			queued: jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityBatch, Reason: jobs.ReasonFileWatch},
			req:    jobs.Execute{Context: "c", Expressions: exprs("m:f/a"), Priority: jobs.PriorityInteractive, Reason: jobs.ReasonVisualization},
			want:   jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityInteractive, Reason: jobs.ReasonFileWatch | jobs.ReasonVisualization},
		},
		{
			name:   "higher priority kept from the queued job",
			queued: jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser},
			req:    jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityBatch},
			want:   jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser},
		},
		{
			name:   "invalidations add up",
			queued: jobs.Execute{Context: "c", Expressions: allExprs, Invalidate: exprs("m:f/a")},
			req:    jobs.Execute{Context: "c", Expressions: allExprs, Invalidate: exprs("m:f/b")},
			want:   jobs.Execute{Context: "c", Expressions: allExprs, Invalidate: exprs("m:f/a", "m:f/b")},
		},
		{
			name:   "invalidation kept when the request has none",
			queued: jobs.Execute{Context: "c", Expressions: allExprs, Invalidate: allExprs},
			req:    jobs.Execute{Context: "c", Expressions: allExprs},
			want:   jobs.Execute{Context: "c", Expressions: allExprs, Invalidate: allExprs},
		},
		{
			name:   "the request's slot wins",
			queued: jobs.Execute{Context: "c", Slot: 1, Expressions: allExprs},
			req:    jobs.Execute{Context: "c", Slot: 3, Expressions: allExprs},
			want:   jobs.Execute{Context: "c", Slot: 3, Expressions: allExprs},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.queued
			got.Collapse(&tt.req)
			if got.String() != tt.want.String() || !got.Expressions.Equal(tt.want.Expressions) {
				t.Fatalf("collapse:\n got %v\nwant %v", &got, &tt.want)
			}
		})
	}
}

// Rule 3: queued EnsureCompiled jobs collapse into the union of modules.
func TestEnsureCompiledCollapse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		queued, req jobs.ModuleSet
		want        jobs.ModuleSet
	}{
		{"union", jobs.SetOf[jobs.Module]("a", "c"), jobs.SetOf[jobs.Module]("b"), jobs.SetOf[jobs.Module]("a", "b", "c")},
		{"same", jobs.SetOf[jobs.Module]("a"), jobs.SetOf[jobs.Module]("a"), jobs.SetOf[jobs.Module]("a")},
		{"all wins", jobs.SetOf[jobs.Module]("a"), jobs.All[jobs.Module](), jobs.All[jobs.Module]()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := jobs.EnsureCompiled{Modules: tt.queued}
			got.Collapse(&jobs.EnsureCompiled{Modules: tt.req})
			if !got.Modules.Equal(tt.want) {
				t.Fatalf("collapse = %v, want %v", got.Modules, tt.want)
			}
		})
	}
}

func TestExecuteCollapseOfHeldExpressionsDoesNotAllocate(t *testing.T) {
	queued := jobs.Execute{Context: "c", Expressions: exprs("m:f/a", "m:f/b"), Priority: jobs.PriorityUser}
	req := jobs.Execute{Context: "c", Expressions: exprs("m:f/b"), Priority: jobs.PriorityInteractive, Reason: jobs.ReasonVisualization}
	if n := testing.AllocsPerRun(100, func() { queued.Collapse(&req) }); n != 0 {
		t.Fatalf("Collapse: %v allocations, want 0", n)
	}
	all := jobs.Execute{Context: "c", Expressions: allExprs}
	if n := testing.AllocsPerRun(100, func() { all.Collapse(&req) }); n != 0 {
		t.Fatalf("Collapse into all: %v allocations, want 0", n)
	}
}

func TestExecuteValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		exec    jobs.Execute
		wantErr string // substring; "" = valid
	}{
		{"valid", jobs.Execute{Context: "c", Slot: 2, Priority: jobs.PriorityInteractive, Reason: jobs.ReasonPush | jobs.ReasonBatch}, ""},
		{"no context", jobs.Execute{}, "names no execution context"},
		{"negative slot", jobs.Execute{Context: "c", Slot: -1}, "context c: slot -1 is negative"},
		{"unknown priority", jobs.Execute{Context: "c", Priority: 7}, "context c: unknown priority 7"},
		{"unknown reason", jobs.Execute{Context: "c", Reason: 1 << 12}, "context c: unknown reason Reason(0x1000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.exec.Validate()
			checkErr(t, err, tt.wantErr, jobs.ErrInvalidJob)
		})
	}
}

func TestEnsureCompiledValidate(t *testing.T) {
	t.Parallel()
	checkErr(t, (&jobs.EnsureCompiled{}).Validate(), "names no module", jobs.ErrInvalidJob)
	checkErr(t, (&jobs.EnsureCompiled{Modules: jobs.SetOf[jobs.Module]("m")}).Validate(), "", nil)
	checkErr(t, (&jobs.EnsureCompiled{Modules: jobs.All[jobs.Module]()}).Validate(), "", nil)
}

// checkErr asserts err is nil when want is "", else that it wraps sentinel
// and its message contains want.
func checkErr(t *testing.T, err error, want string, sentinel error) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("error %q does not wrap %v", err, sentinel)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
}

// TestAutomaticRuns checks which runs are automatic (PROTOCOL.md 8.2): a
// run is automatic only when every reason it was asked for is typing or a
// restore; collapsing keeps both reasons, so an explicit request absorbed
// into an automatic one (or the reverse) makes the run explicit.
func TestAutomaticRuns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason    jobs.Reason
		automatic bool
	}{
		{jobs.ReasonEdit, true},
		{jobs.ReasonRestore, true},
		{jobs.ReasonEdit | jobs.ReasonRestore, true},
		{jobs.ReasonFileWatch, false},
		{jobs.ReasonPush, false},
		{jobs.ReasonPop, false},
		{jobs.ReasonRecompute, false},
		{jobs.ReasonVisualization, false},
		{jobs.ReasonExecuteExpression, false},
		{jobs.ReasonBatch, false},
		{jobs.ReasonRestart, false},
		{jobs.ReasonClientWrite, false},
		{jobs.ReasonEdit | jobs.ReasonRecompute, false},
		{jobs.ReasonRestore | jobs.ReasonPush, false},
		{jobs.ReasonEdit | jobs.ReasonFileWatch, false},
		{0, false}, // no reason: nobody asked, so nothing says it is safe to hold
	}
	for _, tt := range tests {
		if got := tt.reason.Automatic(); got != tt.automatic {
			t.Errorf("%s: Automatic() = %v, want %v", tt.reason, got, tt.automatic)
		}
	}

	// Collapsing ORs the reasons: typing then a recompute is explicit,
	// typing then typing stays automatic.
	typing := jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit}
	again := typing
	again.Collapse(&jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit})
	if !again.Reason.Automatic() {
		t.Errorf("typing collapsed with typing: %s is not automatic", again.Reason)
	}
	recomputed := typing
	recomputed.Collapse(&jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonRecompute})
	if recomputed.Reason.Automatic() || recomputed.Reason != jobs.ReasonEdit|jobs.ReasonRecompute {
		t.Errorf("typing collapsed with a recompute: %s, want explicit edit|recompute", recomputed.Reason)
	}
	explicitFirst := jobs.Execute{Context: "c", Expressions: allExprs, Priority: jobs.PriorityBatch, Reason: jobs.ReasonFileWatch}
	explicitFirst.Collapse(&typing)
	if explicitFirst.Reason.Automatic() {
		t.Errorf("a disk change collapsed with typing: %s is automatic", explicitFirst.Reason)
	}
}
