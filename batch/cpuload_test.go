package batch

import (
	"testing"
	"time"
)

// /proc/stat's first line gives the machine's CPU ticks: idle counts idle
// and iowait, total the first eight fields (guest time is inside user).
func TestParseCPUClock(t *testing.T) {
	c, ok := parseCPUClock([]byte("cpu  100 5 50 800 20 1 2 3 40 0\ncpu0 50 2 25 400 10 0 1 1 20 0\n"))
	if !ok || c.idle != 820 || c.total != 981 {
		t.Errorf("parse = %+v, %v; want idle 820, total 981", c, ok)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 x 4 5 6\n", "cpu 1 2\n"} {
		if _, ok := parseCPUClock([]byte(bad)); ok {
			t.Errorf("parse %q: ok, want a refusal", bad)
		}
	}
}

// Two CPUs, one kept busy by the first kernel: with the other idle there
// is room for a late kernel; with the other busy too (another job) there
// is none, and a late kernel neither starts nor joins.
func TestRoomForLate(t *testing.T) {
	from := cpuClock{idle: 1000, total: 2000}
	if idle, ok := from.idleCPUs(cpuClock{idle: 1018, total: 2040}, 2); !ok || idle < 0.89 || idle > 0.91 {
		t.Errorf("idle = %v, %v; want 0.9 of 2 CPUs", idle, ok)
	}
	if _, ok := from.idleCPUs(cpuClock{idle: 1001, total: 2004}, 2); ok {
		t.Error("4 ticks: known, want too little time to tell")
	}
	clock := from
	m := &idleMeter{read: func() (cpuClock, bool) { return clock, true }, cpus: 2, from: from, since: time.Now().Add(-time.Second)}
	clock = cpuClock{idle: 1018, total: 2040}
	if !m.roomForLate() {
		t.Error("one CPU of two idle: no room, want room")
	}
	m.since = time.Now().Add(-time.Second)
	clock = cpuClock{idle: 1019, total: 2080} // 1 of the next 40 ticks idle
	if m.roomForLate() {
		t.Error("both CPUs busy: room, want none")
	}
	if (joinEstimate{handedTests: 100, perTest: time.Second, busy: true}).pays() {
		t.Error("a busy machine: joining pays, want not")
	}
	if !(joinEstimate{handedTests: 100, perTest: time.Second}).pays() {
		t.Error("100 s of tests on an idle CPU: joining does not pay")
	}
	var none *idleMeter
	if !none.roomForLate() {
		t.Error("no meter (no late kernels): no room")
	}
	t.Setenv("RIPPLE_LATE_KERNELS", "always")
	if newIdleMeter() != nil {
		t.Error("RIPPLE_LATE_KERNELS=always: a meter, want none (the times alone decide)")
	}
	unreadable := &idleMeter{read: func() (cpuClock, bool) { return cpuClock{}, false }, cpus: 2, since: time.Now().Add(-time.Second)}
	if !unreadable.roomForLate() {
		t.Error("no /proc/stat: no room, want the times alone to decide")
	}
}

// On a busy machine a late worker's poll says so and works out no
// hand-over (it walks the queue under t.mu); with room it does.
func TestJoinNowBusy(t *testing.T) {
	tr := handOverRun([]testGroup{{indices: []int{0, 1, 2, 3}}, {indices: []int{4, 5, 6, 7}}, {indices: []int{8, 9}}})
	tr.workers, tr.open, tr.horizon = 2, 1, -1
	tr.began = time.Now()
	clock := cpuClock{idle: 1000, total: 2000}
	tr.cpu = &idleMeter{read: func() (cpuClock, bool) { return clock, true }, cpus: 2, from: clock, since: time.Now().Add(-time.Second)}
	clock = cpuClock{idle: 1001, total: 2040} // both CPUs busy
	h, est, ok := tr.joinNow(tr.late[0])
	if !ok || !est.busy || h.want != nil || est.handedTests != 0 {
		t.Errorf("busy: hand-over %v, estimate %+v, ok %v; want busy and no hand-over worked out", h.want, est, ok)
	}
	tr.cpu.since = time.Now().Add(-time.Second)
	clock = cpuClock{idle: 1021, total: 2080} // one CPU idle
	h, est, ok = tr.joinNow(tr.late[0])
	if !ok || est.busy || len(h.want) == 0 || est.handedTests != len(h.want) {
		t.Errorf("room: hand-over %v, estimate %+v, ok %v; want a hand-over", h.want, est, ok)
	}
	tr.queue = nil
	if _, _, ok := tr.joinNow(tr.late[0]); ok {
		t.Error("empty queue: ok, want the wait over")
	}
}
