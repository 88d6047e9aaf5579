package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/ripple-run/ripple/contexts"
	"github.com/ripple-run/ripple/durable"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/workspace"
)

// StateLog is where the engine records acknowledged state changes before
// it answers, so a restart brings back what was acknowledged: a
// *durable.Log in ripple serve.
type StateLog interface {
	Append(ctx context.Context, ev durable.Event) error
}

// KindBuffer is the durable log's kind of an open buffer with unsaved
// edits: Key its resolved path, Data a savedBuffer as JSON (its
// workspace.BufferState and the id deltas name it by). A buffer that is
// closed or saved deletes its entry.
const KindBuffer = "buffer"

// KindBufferDelta is the durable log's kind of a buffer's state as a change
// of its KindBuffer entry: Key the path, Data a bufferDelta as JSON.
//
// A keystroke in a 30 KB module would otherwise write the whole buffer
// again, and the log's commit costs what it writes (about 0.4 ms of CPU
// per keystroke at 30 KB). The delta is one replaced span of the entry's
// content, from common prefix and suffix, so it holds what was typed since
// that entry however many edits it took; the fold keeps the last one. A
// full entry is written again when the span grows past a quarter of the
// buffer or after deltasPerBase deltas. A delta applies only to the entry
// whose BaseID it names (a random id per full entry, not its version: the
// text may come back to an old entry's version) and only if the result
// hashes to its Version; otherwise the entry alone is restored. A delta
// left after its entry was deleted (a save) names no entry and is ignored.
const KindBufferDelta = "bufferDelta"

// deltasPerBase bounds the deltas written against one full entry.
const deltasPerBase = 256

// savedBuffer is KindBuffer's Data.
type savedBuffer struct {
	workspace.BufferState
	BaseID string `json:"baseId,omitempty"`
}

// bufferDelta is KindBufferDelta's Data: the buffer is its KindBuffer
// entry's content with bytes [Start, End) replaced by Text.
type bufferDelta struct {
	BaseID  string               `json:"baseId"`
	Start   int                  `json:"start"`
	End     int                  `json:"end"`
	Text    string               `json:"text"`
	Version workspace.Version    `json:"version"`
	Clients []workspace.ClientID `json:"clients"`
}

// deltaBase is the last full entry written for a path by this process.
type deltaBase struct {
	id      string
	content string
	disk    workspace.Version // the entry's disk baseline: a delta never changes it
	deltas  int
}

// durableState is the engine's side of the state log.
//
// Invariant: for each buffer, taking its state and appending it is one
// step under the path's stripe lock, so the log holds each buffer's states
// in the order they happened and its last one is the buffer's latest
// recorded state (an older snapshot can never be appended after a newer
// one). Different buffers use different stripes mostly, so their appends
// run concurrently and share fsyncs (group commit in package durable).
type durableState struct {
	stripes [32]sync.Mutex
	mu      sync.Mutex
	// recorded holds the paths whose last appended event set an entry
	// (guarded by mu; read and written under the path's stripe): a clean
	// buffer with no entry needs no append, so opening or saving a file
	// without unsaved edits costs no fsync.
	recorded map[string]bool
	// bases holds, per path, the full KindBuffer entry this process wrote
	// last, which KindBufferDelta entries change (read and written under
	// the path's stripe only; guarded by mu for the map itself).
	bases map[string]*deltaBase
	// downChanges holds the restored buffers whose file changed or went
	// away on disk while no server ran (guarded by mu): their clients
	// hear text/fileModifiedOnDisk when they open the file or connect,
	// while the buffer has unsaved edits (downchange.go).
	downChanges map[string]workspace.DiskChange
	// seedMu serializes seedStateLog (reopen.go): one seed of a log
	// opened late, taken before any stripe.
	seedMu sync.Mutex
}

// base returns the path's delta base, nil if none. The caller holds the
// path's stripe.
func (d *durableState) base(path string) *deltaBase {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bases[path]
}

// setBase records (or with b nil forgets) the path's delta base. The
// caller holds the path's stripe.
func (d *durableState) setBase(path string, b *deltaBase) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b == nil {
		delete(d.bases, path)
		return
	}
	if d.bases == nil {
		d.bases = map[string]*deltaBase{}
	}
	d.bases[path] = b
}

func (d *durableState) stripe(path string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(path))
	return &d.stripes[h.Sum32()%uint32(len(d.stripes))]
}

// recordBuffer appends the current state of the buffer at path to the state
// log (a no-op without one). Callers call it after a buffer change and
// before answering. A failed append is logged and returned, wrapping
// ErrStateNotRecorded: the caller undoes the change it can undo
// (PROTOCOL.md 8.5; see refuse.go).
func (e *Engine) recordBuffer(ctx context.Context, path string) error {
	if e.cfg.StateLog == nil {
		return nil
	}
	st, err := e.ws.BufferState(path)
	if err != nil {
		return nil // the caller's own call failed on the same path already
	}
	d := &e.dur
	lock := d.stripe(st.Path)
	lock.Lock()
	defer lock.Unlock()
	if st, err = e.ws.BufferState(st.Path); err != nil {
		return nil
	}
	keep := st.Open && st.Dirty
	d.mu.Lock()
	had := d.recorded[st.Path]
	d.mu.Unlock()
	if !keep && !had {
		return nil
	}
	ev, base := durable.Event{Kind: KindBuffer, Key: st.Path}, (*deltaBase)(nil)
	if keep {
		if ev, base, err = d.bufferEvent(st); err != nil {
			e.log.Error("state log: encode buffer", "path", st.Path, "err", err)
			return nil
		}
	}
	if err := e.cfg.StateLog.Append(context.WithoutCancel(ctx), ev); err != nil {
		e.log.Error("state log: buffer change not recorded, so refused (7001)", "path", st.Path, "err", err)
		return notRecorded("buffer "+st.Path, err)
	}
	if ev.Kind == KindBuffer {
		d.setBase(st.Path, base) // nil after a delete: the next entry is full
	}
	d.mu.Lock()
	if d.recorded == nil {
		d.recorded = map[string]bool{}
	}
	d.recorded[st.Path] = keep
	d.mu.Unlock()
	return nil
}

// bufferEvent is the event that records st: a delta of the path's base
// when that is small, else a full entry with a new base (returned, to be
// set once the append succeeded). The caller holds the path's stripe.
func (d *durableState) bufferEvent(st workspace.BufferState) (durable.Event, *deltaBase, error) {
	if b := d.base(st.Path); b != nil && b.deltas < deltasPerBase && b.disk == st.Disk {
		start, end, text := replacedSpan(b.content, st.Content)
		if len(text)+(end-start) <= max(4096, len(st.Content)/4) {
			data, err := json.Marshal(bufferDelta{BaseID: b.id, Start: start, End: end, Text: text, Version: st.Version, Clients: st.Clients})
			if err != nil {
				return durable.Event{}, nil, err
			}
			b.deltas++
			return durable.Event{Kind: KindBufferDelta, Key: st.Path, Data: data}, nil, nil
		}
	}
	base := &deltaBase{id: fmt.Sprintf("%016x", rand.Uint64()), content: st.Content, disk: st.Disk}
	data, err := json.Marshal(savedBuffer{BufferState: st, BaseID: base.id})
	if err != nil {
		return durable.Event{}, nil, err
	}
	return durable.Event{Kind: KindBuffer, Key: st.Path, Data: data}, base, nil
}

// replacedSpan returns the span [start, end) of old that, replaced by
// text, makes new: what lies between their common prefix and suffix.
func replacedSpan(old, new string) (start, end int, text string) {
	n := min(len(old), len(new))
	for start < n && old[start] == new[start] {
		start++
	}
	suffix := 0
	for suffix < n-start && old[len(old)-1-suffix] == new[len(new)-1-suffix] {
		suffix++
	}
	return start, len(old) - suffix, new[start : len(new)-suffix]
}

// savedBufferState folds a buffer's KindBuffer entry and its
// KindBufferDelta entry (nil when none) into the state to restore. A
// delta of another entry is ignored; one that does not yield its version
// is an error, and the entry alone is restored.
func savedBufferState(key string, full, delta []byte) (workspace.BufferState, error) {
	var sb savedBuffer
	if err := json.Unmarshal(full, &sb); err != nil {
		return workspace.BufferState{}, fmt.Errorf("state log entry for buffer %s: %w", key, err)
	}
	if delta == nil {
		return sb.BufferState, nil
	}
	var bd bufferDelta
	if err := json.Unmarshal(delta, &bd); err != nil {
		return sb.BufferState, fmt.Errorf("state log delta for buffer %s (its last full state is restored): %w", key, err)
	}
	if bd.BaseID == "" || bd.BaseID != sb.BaseID {
		return sb.BufferState, nil // a delta of an earlier entry
	}
	c := sb.Content
	if bd.Start < 0 || bd.Start > bd.End || bd.End > len(c) {
		return sb.BufferState, fmt.Errorf("state log delta for buffer %s: span [%d, %d) outside its %d bytes (its last full state is restored)", key, bd.Start, bd.End, len(c))
	}
	content := c[:bd.Start] + bd.Text + c[bd.End:]
	if got := workspace.VersionOf(content); got != bd.Version {
		return sb.BufferState, fmt.Errorf("state log delta for buffer %s: the result's version %s is not the recorded %s (its last full state is restored)", key, got, bd.Version)
	}
	return workspace.BufferState{Path: sb.Path, Content: content, Version: bd.Version, Clients: bd.Clients, Disk: sb.Disk}, nil
}

// RestoreBuffers opens again the buffers with unsaved edits that st (the
// state log's fold) holds, as their clients had them, and schedules their
// modules like an edit. A client that does not come back within the
// disconnect grace loses them as after a disconnect. ripple serve calls it
// after Start, before it accepts connections. It returns the paths
// restored, sorted; entries that cannot be restored (the file now outside
// the root, a recorded version that is not its content's) are skipped and
// their errors joined, naming each path.
func (e *Engine) RestoreBuffers(st durable.State) ([]string, error) {
	var restored []string
	var errs []error
	clients := map[workspace.ClientID]bool{}
	for key, data := range st[KindBuffer] {
		delta, _ := st.Get(KindBufferDelta, key)
		bs, err := savedBufferState(key, data, delta)
		if err != nil {
			errs = append(errs, err)
			if bs.Path == "" {
				continue // the entry itself is unreadable
			}
		}
		ok, change, err := e.ws.RestoreBufferChecked(bs)
		if err != nil {
			errs = append(errs, fmt.Errorf("restore buffer %s: %w", key, err))
			continue
		}
		if change != workspace.DiskUnchanged {
			e.dur.changedWhileDown(bs.Path, change)
		}
		e.dur.mu.Lock()
		if e.dur.recorded == nil {
			e.dur.recorded = map[string]bool{}
		}
		e.dur.recorded[key] = true // a saved one is deleted at its next change
		e.dur.mu.Unlock()
		if !ok {
			continue
		}
		restored = append(restored, bs.Path)
		for _, c := range bs.Clients {
			clients[c] = true
		}
		if err := e.edited(bs.Path, jobs.OriginRestore); err != nil {
			errs = append(errs, fmt.Errorf("restore buffer %s: %w", key, err))
		}
	}
	for c := range clients {
		e.restoredClientGrace(string(c))
	}
	slices.Sort(restored)
	return restored, errors.Join(errs...)
}

// restoredClientGrace starts the grace period of a client known only from
// the state log, as Disconnect does for one that left.
func (e *Engine) restoredClientGrace(clientID string) {
	e.clients.startGraceIfAbsent(clientID, e.cfg.DisconnectGrace, func() {
		e.goBackground(func(context.Context) { e.expire(clientID) })
	})
}

// ForgetBuffers deletes the state log's entries of paths, the buffers a
// graceful stop kept under .ripple/recovery (KeepUnsaved): after a stop
// the next server offers them back as PROTOCOL.md 7.4 says (the buffer
// opens with the disk's content, recovered carries the unsaved text); the
// log restores buffers as they were only after a crash, when 7.4's files
// were never written.
func (e *Engine) ForgetBuffers(ctx context.Context, paths []string) error {
	if e.cfg.StateLog == nil {
		return nil
	}
	var errs []error
	for _, p := range paths {
		lock := e.dur.stripe(p)
		lock.Lock()
		err := e.cfg.StateLog.Append(ctx, durable.Event{Kind: KindBuffer, Key: p})
		if err == nil {
			e.dur.mu.Lock()
			delete(e.dur.recorded, p)
			e.dur.mu.Unlock()
			e.dur.setBase(p, nil)
		}
		lock.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("state log: forget buffer %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// KindContext is the durable log's kind of an execution context: Key its
// id, Data a savedContext as JSON. A destroyed context deletes its entry.
const KindContext = "context"

// savedContext is what the log keeps of a context: who owns it, its
// stack, its visualizations and its own run policy. Values are not kept
// (they are recomputed, from the kernels' caches where those survived).
type savedContext struct {
	Owners         []string             `json:"owners"`
	Stack          []protocol.StackItem `json:"stack"`
	Visualizations []savedVisualization `json:"visualizations,omitempty"`
	// Effects is the context's own run policy (setRunPolicy); "" when it
	// follows its owners' defaults, which are not kept.
	Effects protocol.RunEffects `json:"effects,omitempty"`
}

// savedVisualization is an attached visualization (one-shot
// executeExpressions are not kept: they were answered or are lost with
// the run).
type savedVisualization struct {
	ID         protocol.VisualizationID            `json:"id"`
	Expression protocol.ExpressionID               `json:"expressionId"`
	Config     protocol.VisualizationConfiguration `json:"config"`
}

// recordContext appends the current state of context id (its owners,
// stack and visualizations, or its deletion) to the state log, under the id's stripe lock as
// recordBuffer does for buffers. Contexts without owners (ripple watch and
// run) are not recorded. A failed append is returned wrapping
// ErrStateNotRecorded, as recordBuffer's.
func (e *Engine) recordContext(ctx context.Context, id protocol.ContextID) error {
	if e.cfg.StateLog == nil {
		return nil
	}
	key := "context " + string(id)
	lock := e.dur.stripe(key)
	lock.Lock()
	defer lock.Unlock()
	ev, ok := e.contextEvent(id)
	if !ok {
		return nil
	}
	if err := e.cfg.StateLog.Append(context.WithoutCancel(ctx), ev); err != nil {
		e.log.Error("state log: context change not recorded, so refused (7001)", "context", id, "err", err)
		return notRecorded("context "+string(id), err)
	}
	return nil
}

// contextEvent is the event that records context id as it is now (its
// deletion when it is gone); false when nothing is recorded (no owners, or
// it cannot be read: logged). The caller holds the id's stripe.
func (e *Engine) contextEvent(id protocol.ContextID) (durable.Event, bool) {
	ev := durable.Event{Kind: KindContext, Key: string(id)}
	c, err := e.store.Context(nil, id)
	switch {
	case errors.Is(err, contexts.ErrContextNotFound):
	case err != nil:
		e.log.Error("state log: read context", "context", id, "err", err)
		return ev, false
	case len(c.Owners) == 0:
		return ev, false
	default:
		sc := savedContext{Stack: []protocol.StackItem{}}
		for _, o := range c.Owners {
			sc.Owners = append(sc.Owners, o.ClientID)
		}
		frames, err := e.store.Stack(nil, id)
		if err != nil && !errors.Is(err, contexts.ErrContextNotFound) {
			e.log.Error("state log: read stack", "context", id, "err", err)
			return ev, false
		}
		for _, f := range frames {
			sc.Stack = append(sc.Stack, f.Item)
		}
		sc.Effects = e.policies.ownPolicy(id)
		vs, err := e.store.VisualizationsOfContext(nil, id)
		if err != nil && !errors.Is(err, contexts.ErrContextNotFound) {
			e.log.Error("state log: read visualizations", "context", id, "err", err)
			return ev, false
		}
		for _, v := range vs {
			if !v.OneShot {
				sc.Visualizations = append(sc.Visualizations, savedVisualization{ID: v.ID, Expression: v.ExpressionID, Config: v.Config})
			}
		}
		if ev.Data, err = json.Marshal(sc); err != nil {
			e.log.Error("state log: encode context", "context", id, "err", err)
			return ev, false
		}
	}
	return ev, true
}

// RestoreContexts recreates the contexts st holds with their owners,
// stacks and visualizations, as disconnected: each owner gets them back by reconnecting with
// its clientId within the disconnect grace (Connect then sends their
// values), else they expire as after a disconnect. Each is run once now.
// ripple serve calls it after Start and RestoreBuffers, before it accepts
// connections. It returns the ids restored, sorted; entries that cannot be
// restored are skipped and their errors joined, naming each context.
func (e *Engine) RestoreContexts(st durable.State) ([]protocol.ContextID, error) {
	var restored []protocol.ContextID
	var errs []error
	owners := map[string]bool{}
	for key, data := range st[KindContext] {
		id := protocol.ContextID(key)
		var sc savedContext
		if err := json.Unmarshal(data, &sc); err != nil {
			errs = append(errs, fmt.Errorf("state log entry for context %s: %w", key, err))
			continue
		}
		if len(sc.Owners) == 0 {
			errs = append(errs, fmt.Errorf("state log entry for context %s: no owners", key))
			continue
		}
		if err := e.restoreContext(id, sc); err != nil {
			_ = e.store.DestroyContext(id)
			e.policies.forget(id)
			errs = append(errs, fmt.Errorf("restore context %s: %w", key, err))
			continue
		}
		restored = append(restored, id)
		for _, o := range sc.Owners {
			owners[o] = true
		}
	}
	now := time.Now()
	for o := range owners {
		if _, err := e.store.ClientDisconnected(o, now); err != nil {
			errs = append(errs, fmt.Errorf("restore contexts of client %s: %w", o, err))
		}
		e.restoredClientGrace(o)
	}
	for _, id := range restored {
		if err := e.apply(jobs.Restore{Context: jobs.ContextID(id)}); err != nil {
			errs = append(errs, fmt.Errorf("run restored context %s: %w", id, err))
		}
	}
	slices.Sort(restored)
	return restored, errors.Join(errs...)
}

func (e *Engine) restoreContext(id protocol.ContextID, sc savedContext) error {
	if _, created, err := e.store.CreateContext(id, sc.Owners[0]); err != nil {
		return err
	} else if !created {
		return fmt.Errorf("a context %s exists already", id)
	}
	for _, o := range sc.Owners[1:] {
		if err := e.store.AddOwner(id, o); err != nil {
			return err
		}
	}
	switch sc.Effects {
	case "":
	case protocol.EffectsHold, protocol.EffectsAllow:
		e.policies.setContext(id, sc.Effects)
	default:
		return fmt.Errorf("run policy %q is neither %q nor %q", sc.Effects, protocol.EffectsHold, protocol.EffectsAllow)
	}
	if _, err := e.assignSlot(id); err != nil {
		return err
	}
	for _, item := range sc.Stack {
		if _, err := e.store.Push(id, item); err != nil {
			return err
		}
	}
	for _, v := range sc.Visualizations {
		// NeedsInitialData: the client that reconnects gets one update.
		if _, err := e.store.AttachVisualization(contexts.Visualization{ID: v.ID, ContextID: id,
			ExpressionID: v.Expression, Config: v.Config, NeedsInitialData: true}); err != nil {
			return fmt.Errorf("visualization %s: %w", v.ID, err)
		}
	}
	return nil
}
