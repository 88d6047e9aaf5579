package engine

import (
	"testing"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
)

// The effects the kernel's execute request carries, for each kind of run
// and policy (PROTOCOL.md 8.2): hold only for an automatic run under
// policy hold, outside batch mode.
func TestRunEffects(t *testing.T) {
	t.Parallel()
	const hold, allow = protocol.EffectsHold, protocol.EffectsAllow
	tests := []struct {
		name   string
		reason jobs.Reason
		policy protocol.RunEffects
		batch  bool
		want   protocol.RunEffects
	}{
		{"typing, policy hold", jobs.ReasonEdit, hold, false, hold},
		{"typing, no policy chosen", jobs.ReasonEdit, "", false, hold},
		{"typing, policy allow", jobs.ReasonEdit, allow, false, allow},
		{"restore after a server restart", jobs.ReasonRestore, hold, false, hold},
		{"typing then a recompute, collapsed", jobs.ReasonEdit | jobs.ReasonRecompute, hold, false, allow},
		{"push", jobs.ReasonPush, hold, false, allow},
		{"pop", jobs.ReasonPop, hold, false, allow},
		{"recompute", jobs.ReasonRecompute, hold, false, allow},
		{"visualization", jobs.ReasonVisualization, hold, false, allow},
		{"executeExpression", jobs.ReasonExecuteExpression, hold, false, allow},
		{"a change on disk (ripple watch, a save)", jobs.ReasonFileWatch, hold, false, allow},
		{"file/write", jobs.ReasonClientWrite, hold, false, allow},
		{"after runtime/restartKernel", jobs.ReasonRestart, hold, false, allow},
		{"ripple run", jobs.ReasonPush, hold, true, allow},
		{"ripple run, even if a reason were automatic", jobs.ReasonEdit, hold, true, allow},
	}
	for _, tt := range tests {
		if got := runEffects(tt.reason, tt.policy, tt.batch); got != tt.want {
			t.Errorf("%s (%s, policy %q, batch %v): %q, want %q", tt.name, tt.reason, tt.policy, tt.batch, got, tt.want)
		}
	}
}

// A context's policy: its own, else its owners' defaults (hold wins),
// else hold; forgetting a context or a client drops what was kept.
func TestRunPolicyOfAContext(t *testing.T) {
	t.Parallel()
	const hold, allow = protocol.EffectsHold, protocol.EffectsAllow
	p := newRunPolicies()
	expect := func(what string, got, want protocol.RunEffects) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	expect("nothing chosen", p.effects("c", []string{"page"}), hold)
	p.setClient("page", allow)
	expect("the owner's default", p.effects("c", []string{"page"}), allow)
	expect("an owner without a default does not weigh", p.effects("c", []string{"editor", "page"}), allow)
	p.setClient("editor", hold)
	expect("owners disagree: hold wins", p.effects("c", []string{"editor", "page"}), hold)
	p.setContext("c", allow)
	expect("the context's own policy wins", p.effects("c", []string{"editor", "page"}), allow)
	expect("another context", p.effects("d", []string{"editor"}), hold)
	p.forget("c")
	expect("after the context is destroyed", p.effects("c", []string{"page"}), allow)
	p.forgetClient("page")
	expect("after the client's grace ended", p.effects("c", []string{"page"}), hold)

	if r := p.rerunReason("c"); r != jobs.ReasonRestart {
		t.Errorf("rerun reason of a context that never ran: %s, want restart", r)
	}
	p.began("c", jobs.ReasonEdit)
	if r := p.rerunReason("c"); !r.Automatic() {
		t.Errorf("rerun reason after typing: %s, want an automatic one", r)
	}
	p.forget("c")
	if r := p.rerunReason("c"); r != jobs.ReasonRestart {
		t.Errorf("rerun reason after forget: %s, want restart", r)
	}
}

// notReachedUpdates turns waiting and running statements into not
// reached ones, keeping what clients show of them, and leaves the others.
func TestNotReachedUpdates(t *testing.T) {
	t.Parallel()
	rng := &protocol.Range{Start: protocol.Position{Line: 3}}
	us := []protocol.ExpressionUpdate{
		{ExpressionID: "m:f/a", Payload: protocol.ValuePayload("1")},
		{ExpressionID: "m:f/b", Range: rng, Type: "builtins.int", FromCache: true, Payload: protocol.PendingPayload("")},
		{ExpressionID: "m:f/c", Payload: protocol.PendingPayload(protocol.MessageRunning)},
		{ExpressionID: "m:f/d", Payload: protocol.NotReachedPayload(protocol.ReasonException, "m:f/a")},
		{ExpressionID: "m:f/e", Payload: protocol.HeldPayload("os.remove('x')", "os.remove", "'x'")},
		{ExpressionID: "m:f/return", Payload: protocol.PendingPayload(protocol.MessageNotReached)},
		{ExpressionID: "m:f/g", Payload: protocol.PanicPayload("E: e", "m:f/g")},
	}
	got := notReachedUpdates(us, protocol.ReasonKernelDied)
	if len(got) != 2 || got[0].ExpressionID != "m:f/b" || got[1].ExpressionID != "m:f/c" {
		t.Fatalf("marked %+v, want m:f/b and m:f/c", got)
	}
	for _, u := range got {
		if !u.Payload.IsNotReached() || u.Payload.Reason == nil || u.Payload.Reason.Kind != protocol.ReasonKernelDied || u.FromCache {
			t.Errorf("%s: %+v, want not reached, reason kernelDied, not from cache", u.ExpressionID, u)
		}
	}
	if got[0].Range != rng || got[0].Type != "builtins.int" {
		t.Errorf("the marked update lost its range or type: %+v", got[0])
	}
}
