package engine

import (
	"fmt"

	"github.com/ripple-run/ripple/durable"
)

// StateSeeder is implemented by a StateLog that could not be written at
// start and that a later Probe opens for writing (*durable.Late). The log
// then holds nothing of what the server did since start (the buffers and
// contexts it restored, their expiry): before the change that found it
// writable is made, the engine writes its whole state as the log's first
// state (Seed), so that a restart after the changes it then accepts
// brings back everything acknowledged, not just those changes.
type StateSeeder interface {
	// Unseeded reports whether the log is open for writing and waits for
	// Seed; appends fail until then.
	Unseeded() bool
	// Seed replaces the log's state with evs, in one commit.
	Seed(evs []durable.Event) error
}

// seedStateLog writes the engine's whole state into s, if s waits for it.
// Every stripe is held meanwhile, so no buffer or context change is
// recorded between the state taken and the seed (they run after it, and
// append to the seeded log).
func (e *Engine) seedStateLog(s StateSeeder) error {
	e.dur.seedMu.Lock()
	defer e.dur.seedMu.Unlock()
	if !s.Unseeded() {
		return nil
	}
	d := &e.dur
	for i := range d.stripes {
		d.stripes[i].Lock()
	}
	defer func() {
		for i := range d.stripes {
			d.stripes[i].Unlock()
		}
	}()
	var evs []durable.Event
	recorded, bases := map[string]bool{}, map[string]*deltaBase{}
	for _, p := range e.ws.OpenBuffers() {
		st, err := e.ws.BufferState(p)
		if err != nil || !st.Open || !st.Dirty {
			continue
		}
		ev, base, err := (&durableState{}).bufferEvent(st) // a full entry: no base yet
		if err != nil {
			return fmt.Errorf("encode buffer %s: %w", st.Path, err)
		}
		evs = append(evs, ev)
		recorded[st.Path], bases[st.Path] = true, base
	}
	ctxs, err := e.store.Contexts(nil)
	if err != nil {
		return fmt.Errorf("read contexts: %w", err)
	}
	for _, c := range ctxs {
		if ev, ok := e.contextEvent(c.ID); ok && len(ev.Data) > 0 {
			evs = append(evs, ev)
		}
	}
	if err := s.Seed(evs); err != nil {
		return err
	}
	d.mu.Lock()
	d.recorded, d.bases = recorded, bases
	d.mu.Unlock()
	e.log.Info("state log opened for writing: recording again, changes are accepted", "buffers", len(recorded), "contexts", len(evs)-len(recorded))
	return nil
}
