package server

import (
	"context"
	"sync"

	"github.com/ripple-run/ripple/protocol"
)

// registry knows which session holds each client id, so that the engine
// sees exactly one Connect ... Disconnect span per holder:
//
//   - A client that reconnects before the server noticed its old connection
//     die (a half-open TCP connection, a laptop waking up) takes its id
//     over: the old session is closed and will not call Disconnect, which
//     would otherwise start the grace period of the contexts the new
//     connection just got back.
//   - Connect and Disconnect of one id never run at the same time: each id
//     has a slot whose mutex is held across the engine call. Different ids
//     never wait for each other.
type registry struct {
	api API

	mu    sync.Mutex
	slots map[string]*slot // guarded by mu; a slot lives while refs > 0 or it has an owner
}

type slot struct {
	refs int // guarded by registry.mu: goroutines between acquire and put

	mu    sync.Mutex // held across API.Connect and API.Disconnect of this id
	owner *session   // guarded by mu: the session connected as this id
}

func newRegistry(api API) *registry {
	return &registry{api: api, slots: make(map[string]*slot)}
}

func (r *registry) acquire(id string) *slot {
	r.mu.Lock()
	defer r.mu.Unlock()
	sl := r.slots[id]
	if sl == nil {
		sl = &slot{}
		r.slots[id] = sl
	}
	sl.refs++
	return sl
}

// put drops a reference; ownerless slots nobody uses are forgotten.
// hasOwner is the slot's owner state, read by the caller under sl.mu.
func (r *registry) put(id string, sl *slot, hasOwner bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sl.refs--
	if sl.refs == 0 && !hasOwner {
		delete(r.slots, id)
	}
}

// connect makes s the holder of id and calls API.Connect.
func (r *registry) connect(ctx context.Context, s *session, id string) (protocol.InitProtocolConnectionResult, error) {
	sl := r.acquire(id)
	sl.mu.Lock()
	old := sl.owner
	if old != nil {
		// The old session must not Disconnect once it is closed: it is
		// not the owner any more from here on.
		sl.owner = nil
		old.takeover()
	}
	res, err := r.api.Connect(ctx, id, s.client)
	if err == nil {
		sl.owner = s
	} else if old != nil {
		// The engine still has the old connection's registration; end it
		// as the old session would have.
		r.api.Disconnect(id, old.client)
	}
	hasOwner := sl.owner != nil
	sl.mu.Unlock()
	r.put(id, sl, hasOwner)
	return res, err
}

// disconnect calls API.Disconnect if s still holds id.
func (r *registry) disconnect(s *session, id string) {
	sl := r.acquire(id)
	sl.mu.Lock()
	if sl.owner == s {
		sl.owner = nil
		r.api.Disconnect(id, s.client)
	}
	hasOwner := sl.owner != nil
	sl.mu.Unlock()
	r.put(id, sl, hasOwner)
}
