package batch

// What the machine leaves idle: a late kernel (handover.go) pays for
// itself only on a CPU the first kernel does not need. On a 2-core
// machine that something else keeps busy (another job of the CI runner,
// a build beside it), a second kernel's start and collection are taken
// from the first kernel's core: numpy's random tests took 1.03x pytest's
// time so at the default kernels, 0.93x at one kernel. So a late kernel
// starts, and joins, only while at least lateMinIdle CPUs were idle over
// the last cpuWindow (Linux's /proc/stat); where that cannot be read, or
// with RIPPLE_LATE_KERNELS=always in the environment (a container whose
// /proc/stat counts the host's CPUs), the times alone decide.

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// lateMinIdle: the idle CPUs a late kernel needs, measured while the
// first kernel runs (it keeps one busy itself).
const lateMinIdle = 0.5

// cpuWindow: the span idle CPUs are measured over (/proc/stat counts in
// ticks of 10 ms per CPU).
const cpuWindow = 200 * time.Millisecond

// cpuClock is the machine's CPU time from /proc/stat's "cpu" line, in
// ticks summed over the CPUs: idle (idle + iowait) and total.
type cpuClock struct {
	idle, total uint64
}

// parseCPUClock reads the "cpu" line of /proc/stat's contents.
func parseCPUClock(stat []byte) (cpuClock, bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 6 || string(fields[0]) != "cpu" {
		return cpuClock{}, false
	}
	var c cpuClock
	for i, f := range fields[1:min(len(fields), 9)] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return cpuClock{}, false
		}
		c.total += n
		if i == 3 || i == 4 {
			c.idle += n
		}
	}
	return c, true
}

// idleCPUs is how many CPUs were idle on average from c to later, of
// cpus; false when too little time passed to tell.
func (c cpuClock) idleCPUs(later cpuClock, cpus int) (float64, bool) {
	if later.total < c.total+10 || later.idle < c.idle {
		return 0, false
	}
	return float64(later.idle-c.idle) / float64(later.total-c.total) * float64(cpus), true
}

// idleMeter measures the idle CPUs over the last cpuWindow or more.
type idleMeter struct {
	mu    sync.Mutex
	read  func() (cpuClock, bool) // /proc/stat; a test's clock
	cpus  int
	from  cpuClock
	since time.Time
	idle  float64 // the last window's; valid once known
	known bool
}

// newIdleMeter starts measuring; nil (room always) with
// RIPPLE_LATE_KERNELS=always.
func newIdleMeter() *idleMeter {
	if os.Getenv("RIPPLE_LATE_KERNELS") == "always" {
		return nil
	}
	m := &idleMeter{read: readProcStat, cpus: runtime.NumCPU()}
	m.from, _ = m.read()
	m.since = time.Now()
	return m
}

func readProcStat() (cpuClock, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuClock{}, false
	}
	return parseCPUClock(data)
}

// idleNow is the idle CPUs of the last full window; false while none has
// passed, or where the CPU time cannot be read.
func (m *idleMeter) idleNow() (float64, bool) {
	if m == nil {
		return 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.since) >= cpuWindow {
		if now, ok := m.read(); ok {
			if idle, ok := m.from.idleCPUs(now, m.cpus); ok {
				m.idle, m.known = idle, true
			}
			m.from, m.since = now, time.Now()
		}
	}
	return m.idle, m.known
}

// roomForLate reports whether a late kernel may start or join now: the
// machine had lateMinIdle CPUs idle over the last window, or that is not
// known.
func (m *idleMeter) roomForLate() bool {
	if m == nil {
		return true
	}
	idle, ok := m.idleNow()
	return !ok || idle >= lateMinIdle
}
