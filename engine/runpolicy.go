package engine

import (
	"context"
	"sync"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
)

// This file decides what a run does with external effects (PROTOCOL.md
// 8.2): an automatic run (every reason it was asked for is typing or a
// restore, jobs.Reason.Automatic) of a context whose policy is hold asks
// the kernel to hold them (execute's effects:"hold"); every other run
// allows them. A re-run the engine asks on its own (after a kernel died,
// was replaced or lost its agent) keeps the kind of the run it replaces:
// a crash in the middle of typing must not turn the typing's run into
// one that deletes files.

// runPolicies holds the run policies and the kind of each context's last
// run.
//
// mu guards the maps; only the methods below touch them, and no other
// engine lock is taken with mu held.
type runPolicies struct {
	mu sync.Mutex
	// contexts is each context's own policy (setRunPolicy with its id);
	// a context without one follows its owners' defaults. An entry lives
	// as long as its context (forget).
	contexts map[protocol.ContextID]protocol.RunEffects
	// clients is each client's session default (setRunPolicy without a
	// context). It outlives a connection, so it survives a reconnect
	// within the grace; forgetClient drops it when the grace ends.
	clients map[string]protocol.RunEffects
	// lastReason is, by context, the reasons of its last run that began,
	// or jobs.ReasonRestart once an explicit runtime/restartKernel
	// replaced its kernel: what a re-run the engine asks on its own
	// carries, so it keeps that run's kind.
	lastReason map[protocol.ContextID]jobs.Reason
}

func newRunPolicies() *runPolicies {
	return &runPolicies{
		contexts:   make(map[protocol.ContextID]protocol.RunEffects),
		clients:    make(map[string]protocol.RunEffects),
		lastReason: make(map[protocol.ContextID]jobs.Reason),
	}
}

// setContext sets context id's own policy.
func (p *runPolicies) setContext(id protocol.ContextID, effects protocol.RunEffects) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.contexts[id] = effects
}

// setClient sets clientID's session default.
func (p *runPolicies) setClient(clientID string, effects protocol.RunEffects) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clients[clientID] = effects
}

// ownPolicy returns context id's own policy ("" when it has none).
func (p *runPolicies) ownPolicy(id protocol.ContextID) protocol.RunEffects {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.contexts[id]
}

// effects returns the policy of context id, whose owners are given: its
// own; else its owners' defaults, where hold wins (a context an editor
// and a page share holds unless every owner that chose said allow); else
// hold.
func (p *runPolicies) effects(id protocol.ContextID, owners []string) protocol.RunEffects {
	p.mu.Lock()
	defer p.mu.Unlock()
	if own, ok := p.contexts[id]; ok {
		return own
	}
	policy := protocol.EffectsHold
	for _, o := range owners {
		switch p.clients[o] {
		case protocol.EffectsHold:
			return protocol.EffectsHold
		case protocol.EffectsAllow:
			policy = protocol.EffectsAllow
		}
	}
	return policy
}

// began records the reasons of a run of context id that begins.
func (p *runPolicies) began(id protocol.ContextID, reason jobs.Reason) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastReason[id] = reason
}

// restarted records that an explicit runtime/restartKernel replaces
// context id's kernel: the re-run that follows is explicit, also after a
// run that typing caused.
func (p *runPolicies) restarted(id protocol.ContextID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastReason[id] = jobs.ReasonRestart
}

// rerunReason returns what a re-run of context id that the engine asks on
// its own carries: its last run's reasons (ReasonRestart when none ran).
func (p *runPolicies) rerunReason(id protocol.ContextID) jobs.Reason {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.lastReason[id]; ok {
		return r
	}
	return jobs.ReasonRestart
}

// forget drops what is kept of a destroyed context.
func (p *runPolicies) forget(id protocol.ContextID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.contexts, id)
	delete(p.lastReason, id)
}

// forgetClient drops the default of a client whose grace ended.
func (p *runPolicies) forgetClient(clientID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.clients, clientID)
}

// runEffects is the execute request's effects for a run asked for reason
// of a context whose policy is policy: "hold" only for an automatic run
// under hold outside batch mode (ripple run is explicit).
func runEffects(reason jobs.Reason, policy protocol.RunEffects, batch bool) protocol.RunEffects {
	if !batch && reason.Automatic() && policy != protocol.EffectsAllow {
		return protocol.EffectsHold
	}
	return protocol.EffectsAllow
}

// SetRunPolicy answers runtime/setRunPolicy: with a context id, that
// context's policy (kept with it, in the state log too); without, the
// client's default for its contexts without a policy of their own and
// those it creates later. It takes effect from the next run.
func (e *Engine) SetRunPolicy(ctx context.Context, clientID string, p protocol.SetRunPolicyParams) error {
	if err := e.checkRunning(); err != nil {
		return err
	}
	if p.Effects != protocol.EffectsHold && p.Effects != protocol.EffectsAllow {
		return protocol.InvalidParams("params.effects", `expected "hold" or "allow", got "`+string(p.Effects)+`"`)
	}
	if p.ContextID == "" {
		e.policies.setClient(clientID, p.Effects)
		return nil
	}
	if err := e.stateGate(); err != nil {
		return err
	}
	e.subscribe(clientID, p.ContextID)
	if _, err := e.store.Context(nil, p.ContextID); err != nil {
		return err
	}
	e.policies.setContext(p.ContextID, p.Effects)
	if _, err := e.store.Context(nil, p.ContextID); err != nil {
		e.policies.forget(p.ContextID) // destroyed meanwhile: keep nothing of it
		return err
	}
	e.recordContext(ctx, p.ContextID)
	return nil
}
