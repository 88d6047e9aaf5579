package watchview

import (
	"fmt"
	"io"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

// The view's work per run of a 1,000-statement function where one
// statement changed (a save): apply the run's updates, end the run, write
// its table (text) or its lines (JSON).

func benchUpdates(n int) []protocol.ExpressionUpdate {
	us := make([]protocol.ExpressionUpdate, n)
	for i := range us {
		us[i] = value(fmt.Sprintf("v%d", i), i+1, fmt.Sprint(i), int64(1000+i))
	}
	return us
}

func BenchmarkModelOneChangedStatement(b *testing.B) {
	m := NewModel()
	m.Apply(benchUpdates(1000))
	m.EndRun(nil)
	run := []protocol.ExpressionUpdate{pending("v500", 501), value("v500", 501, "1", 1000)}
	b.ReportAllocs()
	for b.Loop() {
		m.Apply(run[:1])
		m.Apply(run[1:])
		m.EndRun(nil)
	}
}

func BenchmarkTextRun(b *testing.B) {
	v := New(Options{Out: io.Discard, Entry: "main:main", Width: 100, Color: true})
	v.write([]item{updates(benchUpdates(1000)...), complete()})
	run := []item{updates(pending("v500", 501)), updates(value("v500", 501, "1", 1000)), complete()}
	b.ReportAllocs()
	for b.Loop() {
		v.write(run)
	}
}

func BenchmarkJSONRun(b *testing.B) {
	v := New(Options{Out: io.Discard, JSON: true})
	v.write([]item{updates(benchUpdates(1000)...), complete()})
	run := []item{updates(pending("v500", 501)), updates(value("v500", 501, "1", 1000)), complete()}
	b.ReportAllocs()
	for b.Loop() {
		v.write(run)
	}
}

func BenchmarkTextFirstTable1000(b *testing.B) {
	us := benchUpdates(1000)
	b.ReportAllocs()
	for b.Loop() {
		v := New(Options{Out: io.Discard, Entry: "main:main", Width: 100})
		v.write([]item{updates(us...), complete()})
	}
}
