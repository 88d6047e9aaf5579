package watchview

import (
	"slices"
	"strings"

	"github.com/ripple-run/ripple/protocol"
)

// Row is one expression of the watched frame, as last reported.
type Row struct {
	ID    protocol.ExpressionID
	Label string // the part of ID after the slash: "x", "x#2", "#1", "return"
	// Start is where the statement starts in its file (0-based, as in the
	// protocol); HasStart is false for an update without a range.
	Start    protocol.Position
	HasStart bool
	Type     string // qualified type name of the value; "" without a value
	Payload  protocol.Payload
	// FromCache is true when the value came from the cache in the run that
	// reported it.
	FromCache bool
	// NanoTime is the statement's execution time (its last computation,
	// for a cached value).
	NanoTime int64
	// MethodCall is the project function the statement calls directly
	// ("helper:foo"), if any.
	MethodCall string
}

// Line returns the 1-based line of the statement, 0 if unknown.
func (r *Row) Line() int {
	if !r.HasStart {
		return 0
	}
	return r.Start.Line + 1
}

// Recomputed reports whether the row's value was computed in the run that
// reported it (a Panic counts: panics are never cached).
func (r *Row) Recomputed() bool {
	switch r.Payload.Type {
	case protocol.PayloadValue, protocol.PayloadPanic, protocol.PayloadDataflowError:
		return !r.FromCache
	}
	return false
}

// NotReached reports whether the run ended before the statement: a return,
// an exception or a held effect above it, an interrupt, a kernel death
// (PROTOCOL.md 8.1, 8.4), or a Pending the run left (it did not end
// normally). A held statement is not "not reached": it tried.
func (r *Row) NotReached() bool { return r.Payload.Type == protocol.PayloadPending && !r.Held() }

// Held reports whether the statement tried an external effect that the
// automatic run held (PROTOCOL.md 8.2): Payload.Message says which
// ("held: shutil.rmtree('out')"), Payload.Reason its audit event.
func (r *Row) Held() bool { return r.Payload.IsHeld() }

// Reason is why the statement was not reached, when the run said:
// protocol.ReasonException, ReasonHeld, ReasonInterrupted,
// ReasonKernelDied; "" otherwise.
func (r *Row) Reason() string {
	if r.Payload.Type != protocol.PayloadPending || r.Payload.Reason == nil {
		return ""
	}
	return r.Payload.Reason.Kind
}

func rowOf(u *protocol.ExpressionUpdate) Row {
	r := Row{ID: u.ExpressionID, Type: u.Type, Payload: u.Payload, FromCache: u.FromCache, Label: string(u.ExpressionID)}
	if i := strings.IndexByte(r.Label, '/'); i >= 0 && i < len(r.Label)-1 {
		r.Label = r.Label[i+1:]
	}
	if u.Range != nil {
		r.Start, r.HasStart = u.Range.Start, true
	}
	for _, p := range u.ProfilingInfo {
		if p.Type == "ExecutionTime" {
			r.NanoTime = p.NanoTime
		}
	}
	if u.MethodCall != nil {
		r.MethodCall = u.MethodCall.MethodPointer.String()
	}
	return r
}

// RunSummary is what one run changed, for the table printed at its end.
type RunSummary struct {
	// Run is the run's number, from 1.
	Run int
	// Changed are the rows whose shown state changed in the run: every row
	// the run computed, and rows that came from the cache but were never
	// shown or showed something else before (a reconnect, a restart).
	// Sorted by position in the source.
	Changed []Row
	// Recomputed and Cached count the statements of the run that were
	// computed and served from the cache, among those the run reported;
	// Held those whose effect the run held.
	Recomputed, Cached, Held int
	// NanoTime is the sum of the computed statements' execution times.
	NanoTime int64
	// Failed is the result of a run that ended with executionFailed, nil
	// for executionComplete.
	Failed *protocol.ExecutionResult
}

// Model is the state of one execution context's top frame as its
// notifications tell it, and what each run changed. The zero value is not
// usable; use NewModel. A Model is not safe for concurrent use: the View
// owns it on its render goroutine.
type Model struct {
	rows map[protocol.ExpressionID]*Row
	run  int // the run in progress, from 1
	// before holds the state each row had when the run in progress first
	// touched it (a zero Row with an empty ID if it was new), in order of
	// first touch.
	before map[protocol.ExpressionID]Row
	order  []protocol.ExpressionID
	// placed is set when the run in progress reported a row at a position
	// it did not have before (a new statement, or one that moved): only
	// then can an older row be left at that position.
	placed bool
}

// NewModel returns an empty model; the first run is run 1.
func NewModel() *Model {
	return &Model{rows: make(map[protocol.ExpressionID]*Row), run: 1, before: make(map[protocol.ExpressionID]Row)}
}

// Run returns the number of the run in progress (or the next one).
func (m *Model) Run() int { return m.run }

// Apply records updates of the run in progress and returns them as rows.
func (m *Model) Apply(us []protocol.ExpressionUpdate) []Row {
	out := make([]Row, 0, len(us))
	for i := range us {
		r := rowOf(&us[i])
		if _, seen := m.before[r.ID]; !seen {
			var prev Row
			if old := m.rows[r.ID]; old != nil {
				prev = *old
			}
			m.before[r.ID] = prev
			m.order = append(m.order, r.ID)
		}
		old := m.rows[r.ID]
		if old != nil && r.FromCache && r.NanoTime == 0 {
			r.NanoTime = old.NanoTime
		}
		if r.HasStart && (old == nil || !old.HasStart || old.Start != r.Start) {
			m.placed = true
		}
		if old != nil {
			*old = r // rows are never handed out by pointer
		} else {
			fresh := r
			m.rows[r.ID] = &fresh
		}
		out = append(out, r)
	}
	return out
}

// EndRun closes the run in progress (failed is nil for executionComplete)
// and returns what it changed; the next run starts.
//
// A statement deleted from the source is never reported again, so its row
// would linger; a row that starts where a statement reported in this run
// starts, under another id, is the old version of that statement (renamed,
// or replaced) and is dropped.
func (m *Model) EndRun(failed *protocol.ExecutionResult) RunSummary {
	s := RunSummary{Run: m.run, Failed: failed}
	for _, id := range m.order {
		r := m.rows[id]
		prev := m.before[id]
		switch {
		case r.Recomputed():
			s.Recomputed++
			s.NanoTime += r.NanoTime
		case r.FromCache:
			s.Cached++
		case r.Held():
			s.Held++
		}
		// A Pending still there at the end (the run stopped before the
		// statement) differs from the value shown before: it is listed.
		if r.Recomputed() || prev.ID == "" || !sameShown(&prev, r) {
			s.Changed = append(s.Changed, *r)
		}
	}
	if m.placed {
		m.dropReplaced()
	}
	sortRows(s.Changed)
	m.run++
	m.placed = false
	clear(m.before)
	m.order = m.order[:0]
	return s
}

// dropReplaced drops the rows that start where a row reported in the run
// in progress starts, under another id.
func (m *Model) dropReplaced() {
	starts := make(map[protocol.Position]protocol.ExpressionID, len(m.order))
	for _, id := range m.order {
		if r := m.rows[id]; r.HasStart {
			starts[r.Start] = id
		}
	}
	for id, r := range m.rows {
		if other, ok := starts[r.Start]; ok && r.HasStart && other != id {
			delete(m.rows, id)
		}
	}
}

// Rows returns every row of the frame, sorted by position in the source.
func (m *Model) Rows() []Row {
	out := make([]Row, 0, len(m.rows))
	for _, r := range m.rows {
		out = append(out, *r)
	}
	sortRows(out)
	return out
}

// sameShown reports whether two states of a row look the same in a table
// (a value served from the cache again is not news).
func sameShown(a, b *Row) bool {
	return a.Type == b.Type && a.Payload.Type == b.Payload.Type && a.Payload.Preview == b.Payload.Preview &&
		a.Payload.Message == b.Payload.Message && sameReason(a.Payload.Reason, b.Payload.Reason)
}

// sameReason reports whether two not-reached reasons read the same.
func sameReason(a, b *protocol.PendingReason) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.ExpressionID == b.ExpressionID
}

// Line returns the 1-based line of the statement id of the frame, 0 if it
// is unknown (a reason names the statement that raised or was held).
func (m *Model) Line(id protocol.ExpressionID) int {
	if r := m.rows[id]; r != nil {
		return r.Line()
	}
	return 0
}

// sortRows orders rows as the statements are in the source; rows without a
// position go last, by id.
func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		switch {
		case a.HasStart && b.HasStart:
			if a.Start.Line != b.Start.Line {
				return a.Start.Line - b.Start.Line
			}
			return a.Start.Character - b.Start.Character
		case a.HasStart:
			return -1
		case b.HasStart:
			return 1
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
}
