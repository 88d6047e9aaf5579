package contexts

import (
	"errors"
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/ripple-run/ripple/protocol"
)

// Visualization is a function applied to an expression's value whenever
// that value is computed (PROTOCOL.md 5.5).
type Visualization struct {
	ID           protocol.VisualizationID
	ContextID    protocol.ContextID
	ExpressionID protocol.ExpressionID
	Config       protocol.VisualizationConfiguration
	// NeedsInitialData is set by attach and modify: the engine owes the
	// client one visualizationUpdate from the current value (from the cache
	// when it exists). The engine clears it with InitialDataSent.
	NeedsInitialData bool
	// OneShot marks an executeExpression: detached after its first update.
	OneShot bool
	// Previous is the configuration a modify replaced, until the new one
	// has been evaluated: if that evaluation fails, the previous one is
	// put back in force (RevertVisualization); if it succeeds, Previous
	// is dropped (ConfirmVisualization).
	Previous *protocol.VisualizationConfiguration

	CreateIndex uint64
	ModifyIndex uint64
}

// Copy returns a deep copy.
func (v *Visualization) Copy() *Visualization {
	if v == nil {
		return nil
	}
	out := *v
	out.Config = v.Config.Clone()
	if v.Previous != nil {
		prev := v.Previous.Clone()
		out.Previous = &prev
	}
	return &out
}

const indexExpression = "expression" // visualizations by (context, expression)

func visualizationsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{
		Name: tableVisualizations,
		Indexes: map[string]*memdb.IndexSchema{
			indexID: {
				Name:    indexID,
				Unique:  true,
				Indexer: &memdb.StringFieldIndex{Field: "ID"},
			},
			indexContext: contextIDIndex(),
			indexExpression: {
				Name: indexExpression,
				Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
					&memdb.StringFieldIndex{Field: "ContextID"},
					&memdb.StringFieldIndex{Field: "ExpressionID"},
				}},
			},
		},
	}
}

// --- reads

// Visualization returns visualization id.
func (s *Store) Visualization(ws memdb.WatchSet, id protocol.VisualizationID) (*Visualization, error) {
	v, err := getVisualization(s.db.Txn(false), ws, id)
	return v.Copy(), err
}

// VisualizationsOfContext returns the visualizations attached in context
// id, ordered by visualization id.
func (s *Store) VisualizationsOfContext(ws memdb.WatchSet, id protocol.ContextID) ([]*Visualization, error) {
	txn := s.db.Txn(false)
	if _, err := getContext(txn, nil, id); err != nil {
		return nil, err
	}
	it, err := txn.Get(tableVisualizations, indexContext, string(id))
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	return collectVisualizations(it), nil
}

// VisualizationsOfExpression returns the visualizations of expression expr
// in context id.
func (s *Store) VisualizationsOfExpression(ws memdb.WatchSet, id protocol.ContextID, expr protocol.ExpressionID) ([]*Visualization, error) {
	txn := s.db.Txn(false)
	if _, err := getContext(txn, nil, id); err != nil {
		return nil, err
	}
	it, err := txn.Get(tableVisualizations, indexExpression, string(id), string(expr))
	if err != nil {
		return nil, err
	}
	ws.Add(it.WatchCh())
	return collectVisualizations(it), nil
}

func getVisualization(txn reader, ws memdb.WatchSet, id protocol.VisualizationID) (*Visualization, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty visualization id", ErrInvalidID)
	}
	watch, raw, err := txn.FirstWatch(tableVisualizations, indexID, string(id))
	if err != nil {
		return nil, err
	}
	ws.Add(watch)
	if raw == nil {
		return nil, fmt.Errorf("%w: %s", ErrVisualizationNotFound, id)
	}
	return raw.(*Visualization), nil
}

func collectVisualizations(it memdb.ResultIterator) []*Visualization {
	var out []*Visualization
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*Visualization).Copy())
	}
	return out
}

// --- writes

// AttachVisualization attaches v (ID, ContextID, ExpressionID, Config and
// OneShot are used) with NeedsInitialData set. An empty ContextID is taken
// from Config.ExecutionContextID; otherwise the two must agree. Attaching
// an id that is already attached replaces it, wherever it was. It returns
// the stored visualization.
func (s *Store) AttachVisualization(v Visualization) (*Visualization, error) {
	if v.ContextID == "" {
		v.ContextID = v.Config.ExecutionContextID
	}
	switch {
	case v.ID == "":
		return nil, fmt.Errorf("%w: empty visualization id", ErrInvalidID)
	case v.ExpressionID == "":
		return nil, fmt.Errorf("%w: visualization %s: empty expression id", ErrInvalidID, v.ID)
	case v.Config.ExecutionContextID != "" && v.Config.ExecutionContextID != v.ContextID:
		return nil, fmt.Errorf("%w: visualization %s: configuration names context %s, attached in %s",
			ErrInvalidID, v.ID, v.Config.ExecutionContextID, v.ContextID)
	}
	var out *Visualization
	err := s.write(func(txn *writeTxn, index uint64) error {
		if _, err := getContext(txn, nil, v.ContextID); err != nil {
			return err
		}
		out = v.Copy()
		out.Config.ExecutionContextID = v.ContextID
		out.NeedsInitialData = true
		out.CreateIndex, out.ModifyIndex = index, index
		if old, err := getVisualization(txn, nil, v.ID); err == nil {
			out.CreateIndex = old.CreateIndex
		}
		return txn.Insert(tableVisualizations, out)
	})
	if err != nil {
		return nil, err
	}
	return out.Copy(), nil
}

// ModifyVisualization replaces the configuration of visualization id and
// sets NeedsInitialData. config must name the visualization's context (or
// none); on any error the old configuration stays.
func (s *Store) ModifyVisualization(id protocol.VisualizationID, config protocol.VisualizationConfiguration) (*Visualization, error) {
	var out *Visualization
	err := s.write(func(txn *writeTxn, index uint64) error {
		stored, err := getVisualization(txn, nil, id)
		if err != nil {
			return err
		}
		if config.ExecutionContextID != "" && config.ExecutionContextID != stored.ContextID {
			return fmt.Errorf("%w: %s is not attached in context %s", ErrVisualizationNotFound, id, config.ExecutionContextID)
		}
		out = stored.Copy()
		if out.Previous == nil {
			// A modify of a modify that was never evaluated keeps the
			// configuration before both as the fallback.
			prev := stored.Config.Clone()
			out.Previous = &prev
		}
		out.Config = config.Clone()
		out.Config.ExecutionContextID = stored.ContextID
		out.NeedsInitialData = true
		out.ModifyIndex = index
		return txn.Insert(tableVisualizations, out)
	})
	if err != nil {
		return nil, err
	}
	return out.Copy(), nil
}

// DetachVisualization removes visualization id, which must be attached to
// expression expr in context ctx.
func (s *Store) DetachVisualization(ctx protocol.ContextID, id protocol.VisualizationID, expr protocol.ExpressionID) error {
	return s.write(func(txn *writeTxn, _ uint64) error {
		if _, err := getContext(txn, nil, ctx); err != nil {
			return err
		}
		stored, err := getVisualization(txn, nil, id)
		if err != nil {
			return err
		}
		if stored.ContextID != ctx || stored.ExpressionID != expr {
			return fmt.Errorf("%w: %s is attached to %s in context %s, not to %s in context %s",
				ErrVisualizationNotFound, id, stored.ExpressionID, stored.ContextID, expr, ctx)
		}
		return txn.Delete(tableVisualizations, stored)
	})
}

// RevertVisualization puts the configuration before a modify back in
// force after the modified one failed to evaluate, unless the
// visualization was modified again since the run that evaluated it
// started (seen is its ModifyIndex then). It reports whether it reverted.
func (s *Store) RevertVisualization(id protocol.VisualizationID, seen uint64) (bool, error) {
	reverted := false
	err := s.write(func(txn *writeTxn, index uint64) error {
		stored, err := getVisualization(txn, nil, id)
		if err != nil {
			if errors.Is(err, ErrVisualizationNotFound) {
				return nil
			}
			return err
		}
		if stored.Previous == nil || stored.ModifyIndex != seen {
			return nil
		}
		v := stored.Copy()
		v.Config, v.Previous = *v.Previous, nil
		v.NeedsInitialData = false
		v.ModifyIndex = index
		reverted = true
		return txn.Insert(tableVisualizations, v)
	})
	return reverted, err
}

// ConfirmVisualization drops the fallback of a modified visualization
// whose new configuration evaluated, unless it was modified again since
// (seen as in RevertVisualization).
func (s *Store) ConfirmVisualization(id protocol.VisualizationID, seen uint64) error {
	return s.write(func(txn *writeTxn, index uint64) error {
		stored, err := getVisualization(txn, nil, id)
		if err != nil {
			if errors.Is(err, ErrVisualizationNotFound) {
				return nil
			}
			return err
		}
		if stored.Previous == nil || stored.ModifyIndex != seen {
			return nil
		}
		v := stored.Copy()
		v.Previous = nil
		return txn.Insert(tableVisualizations, v)
	})
}

// InitialDataSent clears NeedsInitialData of visualization id if it has
// not been modified since the engine read it (its ModifyIndex is still
// seen); a modify in between keeps the flag, so its data is still owed.
// A visualization detached meanwhile is not an error.
func (s *Store) InitialDataSent(id protocol.VisualizationID, seen uint64) error {
	return s.write(func(txn *writeTxn, index uint64) error {
		stored, err := getVisualization(txn, nil, id)
		if err != nil {
			if errors.Is(err, ErrVisualizationNotFound) {
				return nil
			}
			return err
		}
		if !stored.NeedsInitialData || stored.ModifyIndex != seen {
			return nil
		}
		v := stored.Copy()
		v.NeedsInitialData = false
		v.ModifyIndex = index
		return txn.Insert(tableVisualizations, v)
	})
}
