package contexts

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/protocol"
)

// Status is where an execution context is in its run cycle. The comment of
// each value says who moves a context into it.
type Status string

const (
	// StatusIdle: nothing scheduled and the last run (if any) completed.
	// Set by CreateContext and by FinishRun(nil).
	StatusIdle Status = "idle"
	// StatusQueued: an Execute job for the context is pending. Set by the
	// engine (SetStatus) right BEFORE it enqueues one, so that the job's
	// own writes (running, then its end) always come after it.
	StatusQueued Status = "queued"
	// StatusRunning: an Execute job runs the context's stack. Set by the
	// engine (SetStatus) when the job starts.
	StatusRunning Status = "running"
	// StatusFailed: the last run ended with executionFailed; LastResult
	// says why. Set by FinishRun with a result.
	StatusFailed Status = "failed"
)

func (st Status) valid() bool {
	switch st {
	case StatusIdle, StatusQueued, StatusRunning, StatusFailed:
		return true
	}
	return false
}

// NoSlot is the KernelSlot of a context not assigned to a kernel.
const NoSlot = -1

// Owner is a client that created or uses a context. Notifications of the
// context go to its connected owners.
type Owner struct {
	ClientID  string
	Connected bool
}

// ExecutionContext is one execution context (the stack lives in the frames
// table, see Stack).
type ExecutionContext struct {
	ID protocol.ContextID
	// Owners, sorted by ClientID. Contexts of ripple watch/run have none.
	Owners []Owner
	// KernelSlot is the pool slot whose kernel runs the context, or NoSlot.
	KernelSlot int
	CreatedAt  time.Time
	Status     Status
	// LastResult is why the last finished run failed; nil if it completed
	// or no run finished yet. It stays while the next run is queued or
	// running.
	LastResult *protocol.ExecutionResult
	// KernelKills counts consecutive runs that ended with the kernel dying.
	// At 2 the engine stops retrying until the next edit, recompute or push
	// (which reset it).
	KernelKills int
	// DisconnectedSince is when the last connected owner disconnected; zero
	// while an owner is connected or the context has no owners. The server
	// destroys contexts disconnected for longer than its grace period
	// (see Expired).
	DisconnectedSince time.Time
	// Pending is what recomputes invalidated and no kernel has been asked to
	// recompute yet (see Invalidate and TakePending).
	Pending protocol.InvalidatedExpressions

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (c *ExecutionContext) Copy() *ExecutionContext {
	if c == nil {
		return nil
	}
	out := *c
	out.Owners = slices.Clone(c.Owners)
	out.LastResult = c.LastResult.Clone()
	out.Pending = c.Pending.Clone()
	return &out
}

// HasOwner reports whether clientID owns the context.
func (c *ExecutionContext) HasOwner(clientID string) bool {
	_, found := c.ownerIndex(clientID)
	return found
}

// ConnectedOwners returns the client ids of the connected owners.
func (c *ExecutionContext) ConnectedOwners() []string {
	var ids []string
	for _, o := range c.Owners {
		if o.Connected {
			ids = append(ids, o.ClientID)
		}
	}
	return ids
}

func (c *ExecutionContext) ownerIndex(clientID string) (int, bool) {
	return slices.BinarySearchFunc(c.Owners, clientID, func(o Owner, id string) int {
		return strings.Compare(o.ClientID, id)
	})
}

const (
	indexOwner = "owner" // contexts by owner client id
	indexSlot  = "slot"  // contexts by kernel slot
)

func contextsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableContexts,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "ID"},
			},
			indexOwner: {
				Name:         indexOwner,
				AllowMissing: true, // contexts without owners
				Indexer:      ownerIndexer{},
			},
			indexSlot: {
				Name:    indexSlot,
				Indexer: &memdb.IntFieldIndex{Field: "KernelSlot"},
			},
		},
	}
}

// ownerIndexer indexes a context under each owner's client id (the owners
// are structs, which memdb's StringSliceFieldIndex cannot read).
type ownerIndexer struct{}

func (ownerIndexer) FromObject(raw any) (bool, [][]byte, error) {
	c, ok := raw.(*ExecutionContext)
	if !ok {
		return false, nil, fmt.Errorf("owner index: %T is not an *ExecutionContext", raw)
	}
	if len(c.Owners) == 0 {
		return false, nil, nil
	}
	keys := make([][]byte, len(c.Owners))
	for i, o := range c.Owners {
		keys[i] = append([]byte(o.ClientID), 0)
	}
	return true, keys, nil
}

func (ownerIndexer) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("owner index: want one client id, got %d arguments", len(args))
	}
	id, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("owner index: client id %#v is not a string", args[0])
	}
	return append([]byte(id), 0), nil
}

// --- reads

// Context returns the context id.
func (s *Store) Context(ws memdb.WatchSet, id protocol.ContextID) (*ExecutionContext, error) {
	c, err := getContext(s.db.Txn(false), ws, id)
	return c.Copy(), err
}

// Contexts returns every context, ordered by id.
func (s *Store) Contexts(ws memdb.WatchSet) ([]*ExecutionContext, error) {
	it, err := s.db.Txn(false).Get(tableContexts, indexID)
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	return collectContexts(it), nil
}

// ContextsOfClient returns the contexts clientID owns, ordered by id.
func (s *Store) ContextsOfClient(ws memdb.WatchSet, clientID string) ([]*ExecutionContext, error) {
	it, err := s.db.Txn(false).Get(tableContexts, indexOwner, clientID)
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	return collectContexts(it), nil
}

// ContextsOnSlot returns the contexts assigned to kernel slot.
func (s *Store) ContextsOnSlot(ws memdb.WatchSet, slot int) ([]*ExecutionContext, error) {
	it, err := s.db.Txn(false).Get(tableContexts, indexSlot, slot)
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	return collectContexts(it), nil
}

// Owners returns the owners of context id, sorted by client id.
func (s *Store) Owners(ws memdb.WatchSet, id protocol.ContextID) ([]Owner, error) {
	c, err := getContext(s.db.Txn(false), ws, id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(c.Owners), nil
}

// Expired returns the contexts whose owners have all been disconnected
// since deadline or earlier (deadline = now - grace period). The server
// destroys them.
func (s *Store) Expired(ws memdb.WatchSet, deadline time.Time) ([]protocol.ContextID, error) {
	all, err := s.Contexts(ws)
	if err != nil {
		return nil, err
	}
	var ids []protocol.ContextID
	for _, c := range all {
		if !c.DisconnectedSince.IsZero() && !c.DisconnectedSince.After(deadline) {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}

// getContext returns the stored record itself: callers inside this package
// must not modify it (copy-on-write).
func getContext(txn reader, ws memdb.WatchSet, id protocol.ContextID) (*ExecutionContext, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty context id", ErrInvalidID)
	}
	watch, raw, err := txn.FirstWatch(tableContexts, indexID, string(id))
	if err != nil {
		return nil, err
	}
	ws.Add(watch)
	if raw == nil {
		return nil, fmt.Errorf("%w: %s", ErrContextNotFound, id)
	}
	return raw.(*ExecutionContext), nil
}

func collectContexts(it memdb.ResultIterator) []*ExecutionContext {
	var out []*ExecutionContext
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*ExecutionContext).Copy())
	}
	return out
}

// --- writes

// CreateContext creates context id owned by clientID, or, if it exists,
// adds clientID to its owners (create is idempotent). An empty clientID
// creates a context without owners (ripple watch/run). It returns the
// context and whether it was created.
func (s *Store) CreateContext(id protocol.ContextID, clientID string) (*ExecutionContext, bool, error) {
	var out *ExecutionContext
	var created bool
	err := s.write(func(txn *writeTxn, index uint64) error {
		var err error
		out, created, err = createContextImpl(txn, index, id, clientID, s.now())
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return out.Copy(), created, nil
}

func createContextImpl(txn *writeTxn, index uint64, id protocol.ContextID, clientID string, now time.Time) (*ExecutionContext, bool, error) {
	existing, err := getContext(txn, nil, id)
	switch {
	case err == nil:
		c, err := addOwnerImpl(txn, index, existing, clientID)
		return c, false, err
	case !errors.Is(err, ErrContextNotFound):
		return nil, false, err
	}
	c := &ExecutionContext{
		ID:          id,
		KernelSlot:  NoSlot,
		CreatedAt:   now,
		Status:      StatusIdle,
		CreateIndex: index,
		ModifyIndex: index,
	}
	if clientID != "" {
		c.Owners = []Owner{{ClientID: clientID, Connected: true}}
	}
	if err := txn.Insert(tableContexts, c); err != nil {
		return nil, false, err
	}
	return c, true, nil
}

// AddOwner makes clientID an owner of context id (a client that uses a
// context it did not create), connected. Adding an existing connected owner
// changes nothing.
func (s *Store) AddOwner(id protocol.ContextID, clientID string) error {
	if clientID == "" {
		return fmt.Errorf("%w: empty client id", ErrInvalidID)
	}
	return s.write(func(txn *writeTxn, index uint64) error {
		c, err := getContext(txn, nil, id)
		if err != nil {
			return err
		}
		_, err = addOwnerImpl(txn, index, c, clientID)
		return err
	})
}

func addOwnerImpl(txn *writeTxn, index uint64, c *ExecutionContext, clientID string) (*ExecutionContext, error) {
	if clientID == "" {
		return c, nil
	}
	i, found := c.ownerIndex(clientID)
	if found && c.Owners[i].Connected {
		return c, nil // nothing to change: no write, no wake-up
	}
	c = c.Copy()
	if found {
		c.Owners[i].Connected = true
	} else {
		c.Owners = slices.Insert(c.Owners, i, Owner{ClientID: clientID, Connected: true})
	}
	c.DisconnectedSince = time.Time{}
	c.ModifyIndex = index
	return c, txn.Insert(tableContexts, c)
}

// ClientDisconnected marks clientID disconnected in every context it owns.
// A context whose owners are now all disconnected gets DisconnectedSince =
// at; those contexts' ids are returned.
func (s *Store) ClientDisconnected(clientID string, at time.Time) ([]protocol.ContextID, error) {
	var orphaned []protocol.ContextID
	err := s.write(func(txn *writeTxn, index uint64) error {
		orphaned = orphaned[:0]
		owned, err := ownedBy(txn, clientID)
		if err != nil {
			return err
		}
		for _, stored := range owned {
			c := stored.Copy()
			i, _ := c.ownerIndex(clientID)
			if !c.Owners[i].Connected {
				continue
			}
			c.Owners[i].Connected = false
			if len(c.ConnectedOwners()) == 0 {
				c.DisconnectedSince = at
				orphaned = append(orphaned, c.ID)
			}
			c.ModifyIndex = index
			if err := txn.Insert(tableContexts, c); err != nil {
				return err
			}
		}
		return nil
	})
	return orphaned, err
}

// ClientConnected marks clientID connected again in every context it owns
// (a reconnect with the same clientId), clears their DisconnectedSince, and
// returns them so the server can resend their state.
func (s *Store) ClientConnected(clientID string) ([]*ExecutionContext, error) {
	var out []*ExecutionContext
	err := s.write(func(txn *writeTxn, index uint64) error {
		out = out[:0]
		owned, err := ownedBy(txn, clientID)
		if err != nil {
			return err
		}
		for _, stored := range owned {
			c, err := addOwnerImpl(txn, index, stored, clientID)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	copies := make([]*ExecutionContext, len(out))
	for i, c := range out {
		copies[i] = c.Copy()
	}
	return copies, nil
}

// ownedBy returns the stored contexts clientID owns (not copies).
func ownedBy(txn reader, clientID string) ([]*ExecutionContext, error) {
	if clientID == "" {
		return nil, fmt.Errorf("%w: empty client id", ErrInvalidID)
	}
	it, err := txn.Get(tableContexts, indexOwner, clientID)
	if err != nil {
		return nil, err
	}
	var out []*ExecutionContext
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*ExecutionContext))
	}
	return out, nil
}

// DestroyContext deletes context id with its stack, visualizations and
// recorded updates.
func (s *Store) DestroyContext(id protocol.ContextID) error {
	return s.write(func(txn *writeTxn, _ uint64) error {
		c, err := getContext(txn, nil, id)
		if err != nil {
			return err
		}
		for _, table := range []string{tableFrames, tableVisualizations} {
			if _, err := txn.DeleteAll(table, indexContext, string(id)); err != nil {
				return fmt.Errorf("destroy context %s: %s: %w", id, table, err)
			}
		}
		if _, err := txn.DeleteAll(tableUpdates, indexUpdatePrefix, id); err != nil {
			return fmt.Errorf("destroy context %s: updates: %w", id, err)
		}
		return txn.Delete(tableContexts, c)
	})
}

// SetStatus sets the status of context id (see Status for who sets what).
// Setting StatusFailed needs a result: use FinishRun.
func (s *Store) SetStatus(id protocol.ContextID, status Status) error {
	if !status.valid() || status == StatusFailed {
		return fmt.Errorf("%w: status %q (use FinishRun to fail a run)", ErrInvalidID, status)
	}
	return s.updateContext(id, func(c *ExecutionContext) bool {
		if c.Status == status {
			return false
		}
		c.Status = status
		return true
	})
}

// FinishRun records the end of a run of context id: result nil for
// executionComplete (status idle), else the executionFailed result (status
// failed). KernelKills counts consecutive kernelDied results and is reset by
// any other outcome. It returns the updated context.
func (s *Store) FinishRun(id protocol.ContextID, result *protocol.ExecutionResult) (*ExecutionContext, error) {
	var out *ExecutionContext
	err := s.updateContext(id, func(c *ExecutionContext) bool {
		if result == nil {
			c.Status, c.LastResult = StatusIdle, nil
		} else {
			c.Status, c.LastResult = StatusFailed, result.Clone()
		}
		if result != nil && result.Kind == protocol.ResultKernelDied {
			c.KernelKills++
		} else {
			c.KernelKills = 0
		}
		out = c
		return true
	})
	if err != nil {
		return nil, err
	}
	return out.Copy(), nil
}

// ResetKernelKills clears the kernel-kill counter of context id: an edit
// makes a context that killed its kernel twice worth running again.
func (s *Store) ResetKernelKills(id protocol.ContextID) error {
	return s.updateContext(id, func(c *ExecutionContext) bool {
		if c.KernelKills == 0 {
			return false
		}
		c.KernelKills = 0
		return true
	})
}

// Invalidate adds inv to the context's pending invalidations (all wins over
// ids) and, being a recompute, resets KernelKills.
func (s *Store) Invalidate(id protocol.ContextID, inv protocol.InvalidatedExpressions) error {
	return s.updateContext(id, func(c *ExecutionContext) bool {
		c.Pending = c.Pending.Merge(inv)
		c.KernelKills = 0
		return true
	})
}

// TakePending returns the context's pending invalidations and clears them,
// in one transaction: the engine calls it when it hands them to a kernel,
// so an invalidation arriving meanwhile is kept for the next run, never lost
// nor applied twice.
func (s *Store) TakePending(id protocol.ContextID) (protocol.InvalidatedExpressions, error) {
	var taken protocol.InvalidatedExpressions
	err := s.updateContext(id, func(c *ExecutionContext) bool {
		taken = c.Pending
		if c.Pending.Empty() {
			return false
		}
		c.Pending = protocol.InvalidatedExpressions{}
		return true
	})
	return taken.Clone(), err
}

// AssignSlot returns the kernel slot (0 <= slot < slots) of context id,
// assigning the least loaded one (fewest contexts, lowest number on ties)
// if it has none or its slot is not below slots (the pool shrank).
func (s *Store) AssignSlot(id protocol.ContextID, slots int) (int, error) {
	if slots <= 0 {
		return NoSlot, fmt.Errorf("%w: %d kernel slots", ErrInvalidID, slots)
	}
	return s.AssignSlotAmong(id, slots, nil)
}

// AssignSlotAmong is AssignSlot with some slots closed (closed(slot) is
// true; nil closes none): a context is never given, nor left on, a closed
// slot. It fails with ErrNoSlot when every slot is closed.
func (s *Store) AssignSlotAmong(id protocol.ContextID, slots int, closed func(slot int) bool) (int, error) {
	open := func(slot int) bool { return slot >= 0 && slot < slots && (closed == nil || !closed(slot)) }
	slot := NoSlot
	err := s.write(func(txn *writeTxn, index uint64) error {
		stored, err := getContext(txn, nil, id)
		if err != nil {
			return err
		}
		if open(stored.KernelSlot) {
			slot = stored.KernelSlot
			return nil
		}
		best, bestLoad := NoSlot, -1
		for candidate := range slots {
			if !open(candidate) {
				continue
			}
			it, err := txn.Get(tableContexts, indexSlot, candidate)
			if err != nil {
				return err
			}
			load := 0
			for raw := it.Next(); raw != nil; raw = it.Next() {
				load++
			}
			if bestLoad < 0 || load < bestLoad {
				best, bestLoad = candidate, load
			}
		}
		if best == NoSlot {
			return fmt.Errorf("%w: all %d kernel slots are closed", ErrNoSlot, slots)
		}
		c := stored.Copy()
		c.KernelSlot = best
		c.ModifyIndex = index
		slot = best
		return txn.Insert(tableContexts, c)
	})
	if err != nil {
		return NoSlot, err
	}
	return slot, nil
}

// updateContext applies change to a copy of context id and stores it if
// change reports that something changed.
func (s *Store) updateContext(id protocol.ContextID, change func(c *ExecutionContext) bool) error {
	return s.write(func(txn *writeTxn, index uint64) error {
		stored, err := getContext(txn, nil, id)
		if err != nil {
			return err
		}
		c := stored.Copy()
		if !change(c) {
			return nil
		}
		c.ModifyIndex = index
		return txn.Insert(tableContexts, c)
	})
}
