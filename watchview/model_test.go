package watchview

import (
	"fmt"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

// upd builds an update of main:main/label at line (0-based) with payload.
func upd(label string, line int, typ string, payload protocol.Payload, fromCache bool, ns int64) protocol.ExpressionUpdate {
	return protocol.ExpressionUpdate{
		ExpressionID:  protocol.ExpressionID("main:main/" + label),
		Type:          typ,
		ProfilingInfo: []protocol.ProfilingInfo{protocol.ExecutionTime(ns)},
		FromCache:     fromCache,
		Range:         &protocol.Range{Start: protocol.Position{Line: line, Character: 4}, End: protocol.Position{Line: line, Character: 9}},
		Payload:       payload,
	}
}

func pending(label string, line int) protocol.ExpressionUpdate {
	u := upd(label, line, "", protocol.PendingPayload(""), false, 0)
	u.ProfilingInfo = nil
	return u
}

func value(label string, line int, preview string, ns int64) protocol.ExpressionUpdate {
	return upd(label, line, "builtins.int", protocol.ValuePayload(preview), false, ns)
}

func cached(label string, line int, preview string) protocol.ExpressionUpdate {
	return upd(label, line, "builtins.int", protocol.ValuePayload(preview), true, 0)
}

func labels(rows []Row) string {
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("%s=%s/%s ", r.Label, r.Payload.Type, r.Payload.Preview+r.Payload.Message)
	}
	return s
}

func TestModelRuns(t *testing.T) {
	t.Parallel()
	m := NewModel()
	// Run 1: everything computed; updates arrive out of source order.
	m.Apply([]protocol.ExpressionUpdate{pending("x", 4), pending("y", 5), pending("z", 6)})
	m.Apply([]protocol.ExpressionUpdate{value("z", 6, "35", 30), value("x", 4, "6", 10), value("y", 5, "30", 20)})
	s := m.EndRun(nil)
	if s.Run != 1 || s.Recomputed != 3 || s.Cached != 0 || s.NanoTime != 60 || s.Failed != nil {
		t.Errorf("run 1 summary %+v", s)
	}
	if got := labels(s.Changed); got != "x=Value/6 y=Value/30 z=Value/35 " {
		t.Errorf("run 1 changed %q", got)
	}

	// Run 2: y and z computed again; x resent from the cache, same value
	// (its position moved): not news.
	m.Apply([]protocol.ExpressionUpdate{pending("y", 5), pending("z", 6), cached("x", 4, "6")})
	m.Apply([]protocol.ExpressionUpdate{value("y", 5, "60", 5), value("z", 6, "65", 5)})
	s = m.EndRun(nil)
	if s.Run != 2 || s.Recomputed != 2 || s.Cached != 1 || s.NanoTime != 10 {
		t.Errorf("run 2 summary %+v", s)
	}
	if got := labels(s.Changed); got != "y=Value/60 z=Value/65 " {
		t.Errorf("run 2 changed %q", got)
	}
	// The cached x kept the time of its computation.
	if rows := m.Rows(); len(rows) != 3 || rows[0].NanoTime != 10 || !rows[0].FromCache {
		t.Errorf("rows %+v", rows)
	}

	// Run 3: a Panic in y, z depends on it; interrupted before w.
	panicY := upd("y", 5, "", protocol.PanicPayload("ZeroDivisionError: division by zero", "main:main/y"), false, 7)
	panicZ := upd("z", 6, "", protocol.PanicPayload("ZeroDivisionError: division by zero", "main:main/y"), false, 0)
	m.Apply([]protocol.ExpressionUpdate{pending("y", 5), pending("z", 6), pending("w", 7)})
	m.Apply([]protocol.ExpressionUpdate{panicY, panicZ})
	s = m.EndRun(&protocol.ExecutionResult{Kind: protocol.ResultInterrupted, Message: "interrupted by the user"})
	if s.Recomputed != 2 || s.Failed == nil || s.Failed.Kind != protocol.ResultInterrupted {
		t.Errorf("run 3 summary %+v", s)
	}
	if got := labels(s.Changed); got != "y=Panic/ZeroDivisionError: division by zero z=Panic/ZeroDivisionError: division by zero w=Pending/ " {
		t.Errorf("run 3 changed %q", got)
	}
	if !s.Changed[2].NotReached() || s.Changed[0].Recomputed() != true {
		t.Errorf("w not reached %v, y recomputed %v", s.Changed[2].NotReached(), s.Changed[0].Recomputed())
	}
	if m.Run() != 4 {
		t.Errorf("next run %d", m.Run())
	}
}

func TestModelDropsReplacedStatements(t *testing.T) {
	t.Parallel()
	m := NewModel()
	m.Apply([]protocol.ExpressionUpdate{value("x", 4, "1", 1), value("y", 5, "2", 1)})
	m.EndRun(nil)
	// y renamed to total at the same place: y's row is the old statement.
	m.Apply([]protocol.ExpressionUpdate{value("total", 5, "2", 1)})
	s := m.EndRun(nil)
	if got := labels(s.Changed); got != "total=Value/2 " {
		t.Errorf("changed %q", got)
	}
	if got := labels(m.Rows()); got != "x=Value/1 total=Value/2 " {
		t.Errorf("rows %q, want y dropped", got)
	}
}

func TestModelFirstSightOfCachedValues(t *testing.T) {
	t.Parallel()
	// A view that connects to a context that already ran (a resend) sees
	// cached values first: they are shown.
	m := NewModel()
	m.Apply([]protocol.ExpressionUpdate{cached("x", 4, "6"), cached("y", 5, "30")})
	s := m.EndRun(nil)
	if got := labels(s.Changed); got != "x=Value/6 y=Value/30 " || s.Cached != 2 || s.Recomputed != 0 {
		t.Errorf("changed %q, summary %+v", got, s)
	}
}

func TestRowWithoutRangeOrLabel(t *testing.T) {
	t.Parallel()
	m := NewModel()
	u := protocol.ExpressionUpdate{ExpressionID: "weird", Payload: protocol.ValuePayload("1"), ProfilingInfo: []protocol.ProfilingInfo{}}
	rows := m.Apply([]protocol.ExpressionUpdate{value("x", 3, "2", 1), u})
	if rows[1].Label != "weird" || rows[1].Line() != 0 || rows[0].Line() != 4 {
		t.Errorf("rows %+v", rows)
	}
	if got := labels(m.Rows()); got != "x=Value/2 weird=Value/1 " {
		t.Errorf("rows without a position go last: %q", got)
	}
}
