package jobs_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/jobs"
)

// contexts is the state used by the translation tables: a and b run on
// slots 0 and 1 with stacks rooted in different modules; idle has an empty
// stack.
var contexts = jobs.Contexts{
	"a":    {Slot: 0, BottomModule: "main", Imports: jobs.SetOf[jobs.Module]("main", "util"), ImportsKnown: true},
	"b":    {Slot: 1, BottomModule: "shop.cart", Imports: jobs.SetOf[jobs.Module]("shop", "shop.cart"), ImportsKnown: true},
	"c":    {Slot: 1, BottomModule: "fresh"}, // never compiled: imports unknown
	"idle": {Slot: 1, StackEmpty: true},
}

func modules(ms ...jobs.Module) jobs.ModuleSet { return jobs.SetOf(ms...) }

// compile is an EnsureCompiled of ms on the given slot.
func compile(slot jobs.Slot, ms ...jobs.Module) jobs.EnsureCompiled {
	return jobs.EnsureCompiled{Modules: modules(ms...), Slots: []jobs.Slot{slot}}
}

func TestTranslations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		call    jobs.Call
		want    jobs.Plan
		wantErr string
		errIs   error
	}{
		{
			name: "edit reaches only the contexts importing the module",
			call: jobs.Edit{Modules: modules("util")},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("a", jobs.ErrEdited), jobs.AbortContext("c", jobs.ErrEdited)},
				EnsureCompiled: jobs.EnsureCompiled{Modules: modules("util"), Slots: []jobs.Slot{0, 1}},
				Executes: []jobs.Execute{
					{Context: "a", Slot: 0, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit},
					{Context: "c", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit},
				},
			},
		},
		{
			name: "edit seen on disk runs at batch priority",
			call: jobs.Edit{Modules: modules("shop"), Origin: jobs.OriginDisk},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("b", jobs.ErrEdited), jobs.AbortContext("c", jobs.ErrEdited)},
				EnsureCompiled: compile(1, "shop"),
				Executes: []jobs.Execute{
					{Context: "b", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityBatch, Reason: jobs.ReasonFileWatch},
					{Context: "c", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityBatch, Reason: jobs.ReasonFileWatch},
				},
			},
		},
		{
			name: "a client's write is an explicit edit",
			call: jobs.Edit{Modules: modules("shop"), Origin: jobs.OriginClient},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("b", jobs.ErrEdited), jobs.AbortContext("c", jobs.ErrEdited)},
				EnsureCompiled: compile(1, "shop"),
				Executes: []jobs.Execute{
					{Context: "b", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonClientWrite},
					{Context: "c", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonClientWrite},
				},
			},
		},
		{
			name: "a buffer restored after a server restart runs automatically",
			call: jobs.Edit{Modules: modules("shop"), Origin: jobs.OriginRestore},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("b", jobs.ErrEdited), jobs.AbortContext("c", jobs.ErrEdited)},
				EnsureCompiled: compile(1, "shop"),
				Executes: []jobs.Execute{
					{Context: "b", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonRestore},
					{Context: "c", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonRestore},
				},
			},
		},
		{
			name: "edit of a module nobody imports compiles and aborts nothing",
			call: jobs.Edit{Modules: modules("unused")},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("c", jobs.ErrEdited)},
				EnsureCompiled: compile(1, "unused"),
				Executes: []jobs.Execute{
					{Context: "c", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit},
				},
			},
		},
		{
			name: "edit of non-module files reaches every context, without compiling",
			call: jobs.Edit{},
			want: jobs.Plan{
				Aborts: []jobs.Abort{jobs.AbortContext("a", jobs.ErrEdited), jobs.AbortContext("b", jobs.ErrEdited), jobs.AbortContext("c", jobs.ErrEdited)},
				Executes: []jobs.Execute{
					{Context: "a", Slot: 0, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit},
					{Context: "b", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit},
					{Context: "c", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit},
				},
			},
		},
		{
			name: "edit with execute:false schedules nothing",
			call: jobs.Edit{Modules: modules("util"), NoExecute: true},
			want: jobs.Plan{},
		},
		{
			name: "push",
			call: jobs.Push{Context: "b"},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("b", jobs.ErrStackChanged)},
				EnsureCompiled: compile(1, "shop.cart"),
				Executes:       []jobs.Execute{{Context: "b", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonPush}},
			},
		},
		{
			name: "restore of a context runs it as push does, automatically",
			call: jobs.Restore{Context: "b"},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("b", jobs.ErrStackChanged)},
				EnsureCompiled: compile(1, "shop.cart"),
				Executes:       []jobs.Execute{{Context: "b", Slot: 1, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonRestore}},
			},
		},
		{
			name: "restore of a context with an empty stack runs nothing",
			call: jobs.Restore{Context: "idle"},
			want: jobs.Plan{Aborts: []jobs.Abort{jobs.AbortContext("idle", jobs.ErrStackChanged)}},
		},
		{
			name:    "push leaving an empty stack is inconsistent state",
			call:    jobs.Push{Context: "idle"},
			wantErr: "push: context idle has an empty stack",
			errIs:   jobs.ErrInvalidJob,
		},
		{
			name:    "push on an unknown context",
			call:    jobs.Push{Context: "ghost"},
			wantErr: "push: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
		{
			name: "pop to a non-empty stack",
			call: jobs.Pop{Context: "a"},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("a", jobs.ErrStackChanged)},
				EnsureCompiled: compile(0, "main"),
				Executes:       []jobs.Execute{{Context: "a", Slot: 0, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonPop}},
			},
		},
		{
			name: "pop to an empty stack only aborts",
			call: jobs.Pop{Context: "idle"},
			want: jobs.Plan{Aborts: []jobs.Abort{jobs.AbortContext("idle", jobs.ErrStackChanged)}},
		},
		{
			name:    "pop on an unknown context",
			call:    jobs.Pop{Context: "ghost"},
			wantErr: "pop: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
		{
			name: "a refresh the engine asks keeps the reasons of the run it replaces",
			call: jobs.Recompute{Context: "a", Reason: jobs.ReasonEdit},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("a", jobs.ErrRecomputed)},
				EnsureCompiled: compile(0, "main"),
				Executes:       []jobs.Execute{{Context: "a", Slot: 0, Expressions: allExprs, Priority: jobs.PriorityUser, Reason: jobs.ReasonEdit}},
			},
		},
		{
			name: "recompute with invalidated expressions",
			call: jobs.Recompute{Context: "a", Invalidate: exprs("main:main/x")},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("a", jobs.ErrRecomputed)},
				EnsureCompiled: compile(0, "main"),
				Executes: []jobs.Execute{{Context: "a", Slot: 0, Expressions: allExprs, Invalidate: exprs("main:main/x"),
					Priority: jobs.PriorityUser, Reason: jobs.ReasonRecompute}},
			},
		},
		{
			name: "recompute invalidating all",
			call: jobs.Recompute{Context: "b", Invalidate: allExprs},
			want: jobs.Plan{
				Aborts:         []jobs.Abort{jobs.AbortContext("b", jobs.ErrRecomputed)},
				EnsureCompiled: compile(1, "shop.cart"),
				Executes: []jobs.Execute{{Context: "b", Slot: 1, Expressions: allExprs, Invalidate: allExprs,
					Priority: jobs.PriorityUser, Reason: jobs.ReasonRecompute}},
			},
		},
		{
			name: "recompute of an empty stack only aborts",
			call: jobs.Recompute{Context: "idle"},
			want: jobs.Plan{Aborts: []jobs.Abort{jobs.AbortContext("idle", jobs.ErrRecomputed)}},
		},
		{
			name: "attach visualization",
			call: jobs.AttachVisualization{Context: "a", Expression: "main:main/y"},
			want: jobs.Plan{
				EnsureCompiled: compile(0, "main"),
				Executes: []jobs.Execute{{Context: "a", Slot: 0, Expressions: exprs("main:main/y"),
					Priority: jobs.PriorityInteractive, Reason: jobs.ReasonVisualization}},
			},
		},
		{
			name: "attach visualization to an empty stack schedules nothing",
			call: jobs.AttachVisualization{Context: "idle", Expression: "main:main/y"},
			want: jobs.Plan{},
		},
		{
			name:    "attach visualization without expression",
			call:    jobs.AttachVisualization{Context: "a"},
			wantErr: "attachVisualization on context a names no expression",
			errIs:   jobs.ErrInvalidJob,
		},
		{
			name:    "attach visualization on an unknown context",
			call:    jobs.AttachVisualization{Context: "ghost", Expression: "main:main/y"},
			wantErr: "attachVisualization: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
		{
			name: "modify visualization",
			call: jobs.ModifyVisualization{Context: "b", Expression: "shop.cart:total/t"},
			want: jobs.Plan{
				EnsureCompiled: compile(1, "shop.cart"),
				Executes: []jobs.Execute{{Context: "b", Slot: 1, Expressions: exprs("shop.cart:total/t"),
					Priority: jobs.PriorityInteractive, Reason: jobs.ReasonVisualization}},
			},
		},
		{
			name:    "modify visualization on an unknown context",
			call:    jobs.ModifyVisualization{Context: "ghost", Expression: "m:f/x"},
			wantErr: "modifyVisualization: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
		{
			name: "execute expression",
			call: jobs.ExecuteExpression{Context: "a", Expression: "main:main/z"},
			want: jobs.Plan{
				EnsureCompiled: compile(0, "main"),
				Executes: []jobs.Execute{{Context: "a", Slot: 0, Expressions: exprs("main:main/z"),
					Priority: jobs.PriorityInteractive, Reason: jobs.ReasonExecuteExpression}},
			},
		},
		{
			name: "detach visualization is state only",
			call: jobs.DetachVisualization{Context: "a"},
			want: jobs.Plan{},
		},
		{
			name:    "detach visualization on an unknown context",
			call:    jobs.DetachVisualization{Context: "ghost"},
			wantErr: "detachVisualization: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
		{
			name: "create context",
			call: jobs.CreateContext{Context: "idle"},
			want: jobs.Plan{},
		},
		{
			name: "create of an existing context leaves its work alone",
			call: jobs.CreateContext{Context: "a"},
			want: jobs.Plan{},
		},
		{
			name:    "create missing from the updated state",
			call:    jobs.CreateContext{Context: "ghost"},
			wantErr: "create: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
		{
			name: "destroy context (already gone from the state)",
			call: jobs.DestroyContext{Context: "gone"},
			want: jobs.Plan{Aborts: []jobs.Abort{jobs.AbortContext("gone", jobs.ErrContextDestroyed)}},
		},
		{
			name:    "destroy without a context",
			call:    jobs.DestroyContext{},
			wantErr: "destroy names no execution context",
			errIs:   jobs.ErrInvalidJob,
		},
		{
			name: "interrupt",
			call: jobs.Interrupt{Context: "b"},
			want: jobs.Plan{Aborts: []jobs.Abort{jobs.AbortContext("b", jobs.ErrInterrupted)}},
		},
		{
			name:    "interrupt of an unknown context",
			call:    jobs.Interrupt{Context: "ghost"},
			wantErr: "interrupt: unknown execution context ghost",
			errIs:   jobs.ErrUnknownContext,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.call.Plan(contexts)
			if tt.wantErr != "" {
				checkErr(t, err, tt.wantErr, tt.errIs)
				return
			}
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if planString(&got) != planString(&tt.want) || !reflect.DeepEqual(normalize(got), normalize(tt.want)) {
				t.Fatalf("plan:\n got %s\nwant %s", planString(&got), planString(&tt.want))
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("translation built an invalid plan: %v", err)
			}
		})
	}
}

// The edit translation enqueues contexts in a stable order, whatever the
// map iteration order.
func TestEditOrderIsStable(t *testing.T) {
	t.Parallel()
	cs := jobs.Contexts{}
	for i := range 50 {
		cs[jobs.ContextID(fmt.Sprintf("ctx-%02d", i))] = jobs.ContextInfo{Slot: jobs.Slot(i % 4), BottomModule: "main"}
	}
	first, err := jobs.Edit{Modules: modules("main")}.Plan(cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Executes) != 50 {
		t.Fatalf("%d executes, want 50", len(first.Executes))
	}
	for i := 1; i < len(first.Executes); i++ {
		if first.Executes[i-1].Context >= first.Executes[i].Context {
			t.Fatalf("executes out of order at %d: %s", i, planString(&first))
		}
	}
	for range 10 {
		again, _ := jobs.Edit{Modules: modules("main")}.Plan(cs)
		if planString(&again) != planString(&first) {
			t.Fatalf("edit plans differ:\n%s\n%s", planString(&again), planString(&first))
		}
	}
}

func TestPlanValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		plan    jobs.Plan
		wantErr string
	}{
		{"empty", jobs.Plan{}, ""},
		{"abort without cause", jobs.Plan{Aborts: []jobs.Abort{{All: true}}}, "plan abort 0: invalid job: abort has no cause"},
		{"abort without context", jobs.Plan{Aborts: []jobs.Abort{{Cause: jobs.ErrInterrupted}}}, "abort names no execution context"},
		{"abort of all naming a context", jobs.Plan{Aborts: []jobs.Abort{{All: true, Context: "a", Cause: jobs.ErrEdited}}}, "abort of all contexts also names context a"},
		{"bad execute", jobs.Plan{Executes: []jobs.Execute{{Context: "a"}, {Context: "b", Slot: -2}}}, "plan execute 1: invalid job: Execute of context b: slot -2 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkErr(t, tt.plan.Validate(), tt.wantErr, jobs.ErrInvalidJob)
		})
	}
}

func planString(p *jobs.Plan) string {
	var b strings.Builder
	for _, a := range p.Aborts {
		if a.All {
			fmt.Fprintf(&b, "abort all (%v); ", a.Cause)
		} else {
			fmt.Fprintf(&b, "abort %s (%v); ", a.Context, a.Cause)
		}
	}
	if !p.EnsureCompiled.Modules.IsEmpty() {
		fmt.Fprintf(&b, "%v; ", &p.EnsureCompiled)
	}
	for i := range p.Executes {
		fmt.Fprintf(&b, "%v; ", &p.Executes[i])
	}
	return b.String()
}

// normalize makes nil and empty slices compare equal.
func normalize(p jobs.Plan) jobs.Plan {
	if len(p.Aborts) == 0 {
		p.Aborts = nil
	}
	if len(p.Executes) == 0 {
		p.Executes = nil
	}
	return p
}
