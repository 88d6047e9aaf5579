package contexts

import (
	"strconv"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

func thousandUpdates() []protocol.ExpressionUpdate {
	updates := make([]protocol.ExpressionUpdate, 1000)
	for i := range updates {
		r := protocol.Range{Start: protocol.Position{Line: i + 1, Character: 4}, End: protocol.Position{Line: i + 1, Character: 30}}
		updates[i] = protocol.ExpressionUpdate{
			ExpressionID:  protocol.ExpressionID("main:main/v" + strconv.Itoa(i)),
			Type:          "builtins.int",
			ProfilingInfo: []protocol.ProfilingInfo{protocol.ExecutionTime(int64(1000 + i))},
			Range:         &r,
			Payload:       protocol.ValuePayload(strconv.Itoa(i * i)),
		}
	}
	return updates
}

// BenchmarkRecordUpdates1000 records the updates of a 1,000-statement run
// in one transaction (each op overwrites the previous op's records, the
// steady state of recomputes).
func BenchmarkRecordUpdates1000(b *testing.B) {
	bnd := setup(b)
	updates := thousandUpdates()
	b.ReportAllocs()
	for b.Loop() {
		if err := bnd.store.RecordUpdates(bnd.bottom, updates); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFrameUpdates1000 reads the 1,000 updates of a frame (pop resend,
// reconnect), copies included.
func BenchmarkFrameUpdates1000(b *testing.B) {
	bnd := setup(b)
	if err := bnd.store.RecordUpdates(bnd.bottom, thousandUpdates()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ups, err := bnd.store.FrameUpdates(nil, ctxA, 0, 0)
		if err != nil || len(ups) != 1000 {
			b.Fatal(len(ups), err)
		}
	}
}

// BenchmarkFrameUpdatesSince reads the one update that changed in a frame
// of 1,000 (a notifier after a one-statement edit).
func BenchmarkFrameUpdatesSince(b *testing.B) {
	bnd := setup(b)
	s := bnd.store
	if err := s.RecordUpdates(bnd.bottom, thousandUpdates()); err != nil {
		b.Fatal(err)
	}
	mark := s.LatestIndex()
	if err := s.RecordUpdates(bnd.bottom, []protocol.ExpressionUpdate{value("main:main/v500", "7")}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ups, err := s.FrameUpdates(nil, ctxA, 0, mark)
		if err != nil || len(ups) != 1 {
			b.Fatal(len(ups), err)
		}
	}
}
