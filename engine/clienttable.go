package engine

import (
	"sync"
	"time"
)

// clientTable holds the connected clients and the grace timers of those
// that left (Connect, Disconnect, expire).
//
// mu guards both maps; only the methods below touch them. connect ends
// the id's grace period; Disconnect removes the client before it starts
// one. Notifications are sent with mu held (Client.Notify never blocks and
// never calls back into the engine), so what one goroutine sends reaches
// each client in order. Lock order: a context's stream (stream.go) sends
// with its own mutex held, so stream.mu comes before mu; no other engine
// lock is taken with mu held.
type clientTable struct {
	mu      sync.Mutex
	clients map[string]Client      // connected clients, by client id
	grace   map[string]*time.Timer // disconnect grace timers, by client id
}

func newClientTable() *clientTable {
	return &clientTable{clients: make(map[string]Client), grace: make(map[string]*time.Timer)}
}

// connect makes c the receiver of clientID's notifications, replacing a
// connection of the same id, and ends the id's grace period.
func (t *clientTable) connect(clientID string, c Client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clients[clientID] = c
	if g, ok := t.grace[clientID]; ok {
		g.Stop()
		delete(t.grace, clientID)
	}
}

// disconnect removes clientID if c is its current connection, and
// reports whether it did (a stale connection of a client that has
// reconnected does not disconnect the new one).
func (t *clientTable) disconnect(clientID string, c Client) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, ok := t.clients[clientID]; !ok || cur != c {
		return false
	}
	delete(t.clients, clientID)
	return true
}

// startGrace starts (or restarts) clientID's grace period: expire runs
// after d unless the client connects again.
func (t *clientTable) startGrace(clientID string, d time.Duration, expire func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g, ok := t.grace[clientID]; ok {
		g.Stop()
	}
	t.grace[clientID] = time.AfterFunc(d, expire)
}

// startGraceIfAbsent starts clientID's grace period unless it is
// connected or already in one (a client known only from the state log).
func (t *clientTable) startGraceIfAbsent(clientID string, d time.Duration, expire func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.clients[clientID]; ok {
		return
	}
	if _, ok := t.grace[clientID]; ok {
		return
	}
	t.grace[clientID] = time.AfterFunc(d, expire)
}

// endGrace forgets clientID's grace timer (it fired) and reports whether
// the client is connected again.
func (t *clientTable) endGrace(clientID string) (back bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, back = t.clients[clientID]
	delete(t.grace, clientID)
	return back
}

// stopGrace stops every grace timer (the engine stops).
func (t *clientTable) stopGrace() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, g := range t.grace {
		g.Stop()
		delete(t.grace, id)
	}
}

// connected reports whether clientID is connected.
func (t *clientTable) connected(clientID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.clients[clientID]
	return ok
}

// notify sends a notification to the given clients, if connected.
func (t *clientTable) notify(ids []string, method string, params any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		if c, ok := t.clients[id]; ok {
			c.Notify(method, params)
		}
	}
}

// broadcast sends a notification to every connected client.
func (t *clientTable) broadcast(method string, params any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.clients {
		c.Notify(method, params)
	}
}
