package batch

// testWorker: the driver of one kernel of a test run. This file holds its
// kernel's life (start, collect, replace) and its loop over the run's
// groups; testworker_call.go holds one request to the kernel and what a
// failed one leaves behind.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// testWorker drives one kernel.
//
// Ownership: during a run (its collection's goroutine, then loop's) the
// fields above mu are the worker's goroutine's; between runs they are the
// pool's goroutine's (testPool.stop, the hot path). The fields under mu
// are shared with the kernel's reader goroutine, which delivers progress
// frames and output (event, output1) while a call is in flight, and with
// the timer of a test's timeout.
type testWorker struct {
	// id is the N of gwN; slots and slot: the launcher slot whose kernels
	// the worker drives (Options.Agents); slots is nil and slot -1 for a
	// child kernel. Set by newTestPool, then only read.
	id    int
	slots engine.Kernels
	slot  int

	// t: the run it works for, set by the pool's goroutine before the
	// worker's goroutines start.
	t     *testRun
	k     *kernel.Kernel
	agent string // the host of the slot's agent when the kernel was taken; "" for a local one
	// stopped: pytest stopped the session (-x). interrupted: which test
	// raised KeyboardInterrupt itself (or sent SIGINT to its own
	// process), "ID raised KeyboardInterrupt": pytest ends its session
	// there, exit status 2, and so does the run. Both written by the
	// worker's goroutine, read by drive once the workers ended.
	stopped     string
	interrupted string
	// stopAt: the entry of the last result it sent when pytest stopped
	// its session (the test that stopped it); stopInterrupts: pytest
	// stopped it as interrupted (shouldstop: --sw), exit status 2, not
	// as failed (-x, --maxfail). Written and read as stopped is.
	stopAt         int
	stopInterrupts bool
	lastSent       int // entry of the last result it sent (w.mu)
	// interruptText: what pytest's terminal shows of the first
	// KeyboardInterrupt that ended one of its tests (testEvent.Text),
	// Ctrl-C's or the test's own (w.mu; drive reads it once the workers
	// ended).
	interruptText string
	// starting: closed once a late worker's kernel started in the
	// background (startLate) is up, or failed or was never started
	// (startErr); nil otherwise. w.k and startErr are the starting
	// goroutine's until then. startNow and startNever (closed once each,
	// by startOnce and neverOnce) tell that goroutine to start the kernel
	// before its delay is out, or not at all; started: it began to.
	starting   chan struct{}
	startErr   error
	startNow   chan struct{}
	startNever chan struct{}
	startOnce  sync.Once
	neverOnce  sync.Once
	started    atomic.Bool
	// up: closed by begin once the worker's kernel is up, before its
	// collection (late workers time their start from it), then nil; nil
	// when no late worker waits on it. Set by the pool's goroutine
	// before the worker's goroutines start, then the worker's.
	up chan struct{}
	// lateKernel: the kernel startLate started (not changed after
	// starting is closed). joined, aborted: guarded by t.mu: the late
	// worker joined the run, or the run ended first (abortLate).
	lateKernel      *kernel.Kernel
	joined, aborted bool
	open            bool // its pytest session is open (counted in t.open)
	// stay: its session failed a wide fixture when no other was left
	// (clash): it reports such failures from then on, as pytest would.
	// retired: it left the run for that reason; its session is closed,
	// also in a watch.
	stay, retired bool

	mu sync.Mutex
	// share: the share its session collects (split.go; 0 without split);
	// steal: when the session collected only a stolen group's module, its
	// kernel indices mapped to the share's. Written by the worker's
	// goroutine (or the pool's, between runs) under mu; that goroutine,
	// their only writer, reads them without it; the reader goroutine
	// (send) reads them under mu.
	share int
	steal *stolen
	// The tests of the call in flight, under mu: the worker's goroutine
	// fills assigned and sets cancel before the call and empties them
	// after it; the reader goroutine marks each test's start and end.
	assigned map[int]time.Time // sent, no outcome yet; value: when it started (zero: not yet)
	running  int               // kernel index of the test running, -1 none
	output   strings.Builder   // what the running test printed outside pytest's capture
	// passOut and passErr: the same, by stream, and passMarks the
	// reports' places in passOut (Result.passOut).
	passOut, passErr strings.Builder
	passMarks        []passMark
	timer            *time.Timer // the running test's timeout: cancels the call with errTestTimeout
	cancel           context.CancelCauseFunc
}

// agentLost reports whether err ended the worker's kernel because its
// agent was lost (its connection closed, killed, lease expired) or is
// stopping: not the test's doing, unlike a kernel that died or was
// restarted.
func (w *testWorker) agentLost(err error) bool {
	return w.agent != "" && errors.Is(err, kernel.ErrStopped) && !errors.Is(err, kernel.ErrKernelRestarted) && !errors.Is(err, kernel.ErrKernelDied)
}

// setShare sets the share of the worker's next session.
func (w *testWorker) setShare(s int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.share = s
}

// setSteal sets (nil: clears) the stolen module of the worker's session.
func (w *testWorker) setSteal(s *stolen) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steal = s
}

// name is the kernel's name in messages: gw1, or gw1 (agent beta).
func (w *testWorker) name() string {
	if w.agent != "" {
		return fmt.Sprintf("gw%d (agent %s)", w.id, w.agent)
	}
	return fmt.Sprintf("gw%d", w.id)
}

// begin collects, starting the kernel if it is not up.
func (w *testWorker) begin(ctx context.Context) (*collectAnswer, error) {
	if w.k != nil {
		w.isUp()
		return w.collect(ctx)
	}
	return w.start(ctx)
}

// isUp tells the late workers waiting on w.up that its kernel is up.
func (w *testWorker) isUp() {
	if w.up != nil {
		close(w.up)
		w.up = nil
	}
}

// startLate starts a late worker's child kernel in the background (see
// testRun.late) once after has passed since from closed (the first
// kernel is up and begins to collect), so that it is up when the first
// kernel has collected, or at once when its hand-over pays before that
// (startLateNow), or never when the run is done with it first
// (neverStart): a collection that takes less than a kernel's start
// (lateStartDelay) is a small suite's, whose late kernels would only
// cost the run their start. The delay counts from the collection, not
// the run's start: counted from the run's start, the first kernel's own
// start (0.15-0.3 s, more on a loaded machine) used most of it, and a
// small suite's late kernel started while its tests ran, competing with
// them for the CPU, to be killed unused.
func (w *testWorker) startLate(ctx context.Context, from <-chan struct{}, after time.Duration) {
	w.starting = make(chan struct{})
	w.startNow, w.startNever = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.starting)
		if w.startErr = w.lateDelay(ctx, from, after); w.startErr != nil {
			return
		}
		w.started.Store(true)
		k, err := kernel.Start(ctx, w.kernelConfig())
		if err != nil {
			w.startErr = fmt.Errorf("%w: %w", ErrProject, err)
			return
		}
		w.k, w.lateKernel = k, k
	}()
}

// lateDelay waits until a late worker's kernel is to start (nil), or
// must not (why).
func (w *testWorker) lateDelay(ctx context.Context, from <-chan struct{}, after time.Duration) error {
	var timeout <-chan time.Time // nil, never ready, until from closes
	for {
		select {
		case <-from:
			timer := time.NewTimer(after)
			defer timer.Stop()
			timeout, from = timer.C, nil
		case <-timeout:
			if w.t.cpu.roomForLate() {
				attrs := []any{"kernel", w.name()}
				if idle, ok := w.t.cpu.idleNow(); ok {
					attrs = append(attrs, "idleCPUs", idle)
				}
				w.t.opts.Logger.Debug("late kernel starts", attrs...)
				return nil
			}
			// The machine has no CPU to spare (cpuload.go): the kernel
			// starts only if its hand-over pays (startLateNow).
			timeout = nil
		case <-w.startNow:
			return nil
		case <-w.startNever:
			return errLateNotStarted
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// errLateNotStarted: the run was done with a late worker before its
// kernel had to start.
var errLateNotStarted = errors.New("late kernel not needed before its start")

// startLateNow and neverStart tell a late worker's starting goroutine to
// start its kernel now, or not at all (no-ops for another worker, or
// once it decided).
func (w *testWorker) startLateNow() {
	if w.startNow != nil {
		w.startOnce.Do(func() { close(w.startNow) })
	}
}

func (w *testWorker) neverStart() {
	if w.startNever != nil {
		w.neverOnce.Do(func() { close(w.startNever) })
	}
}

// abortLate stops a late worker's kernel if it has not joined the run:
// the others are done, its collection would only make the run wait.
func (w *testWorker) abortLate(ctx context.Context) {
	w.neverStart()
	<-w.starting
	w.t.mu.Lock()
	abort := !w.joined
	w.aborted = abort
	w.t.mu.Unlock()
	if abort && w.lateKernel != nil {
		// Killed, not stopped: nothing of its session is worth a clean
		// exit, and the run waits for it.
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cancel()
		w.lateKernel.Stop(sctx)
	}
}

// lateJoin waits, once the run's first kernel collected, until joining
// pays for the late worker's kernel, collects its hand-over then and
// joins the run if it can still run queued tests: true when it did (its
// session is open and counted). See handover.go. Its collection runs
// while the other kernels run tests.
func (w *testWorker) lateJoin(ctx context.Context) bool {
	h, ok := w.t.awaitHandOver(ctx, w)
	if !ok {
		w.neverStart()
		return false
	}
	w.startLateNow()
	<-w.starting
	if w.startErr != nil {
		w.t.opts.Logger.Debug("late kernel did not start", "kernel", w.name(), "err", w.startErr)
		return false
	}
	w.setSteal(h.stolen())
	began := time.Now()
	if err := w.join(ctx); err != nil {
		w.t.opts.Logger.Debug("late kernel left", "kernel", w.name(), "err", err)
		return false
	}
	ok = w.t.joinLate(w)
	w.t.opts.Logger.Debug("late kernel collected", "kernel", w.name(), "took", time.Since(began), "joined", ok)
	return ok
}

func (w *testWorker) kernelConfig() kernel.Config {
	return kernel.Config{Python: w.t.python, Root: w.t.root, ID: fmt.Sprintf("gw%d", w.id), HoldProgress: true,
		Env: append([]string{fmt.Sprintf("PYTEST_XDIST_WORKER=gw%d", w.id), fmt.Sprintf("PYTEST_XDIST_WORKER_COUNT=%d", w.t.workers),
			"RIPPLE_PYTEST_KERNEL=1"}, // pytest only: no engine (kernel/PROTOCOL.md)
			kernelThreadLimits(w.t.workers)...)}
}

// start starts the kernel (takes the slot's kernel) and collects.
func (w *testWorker) start(ctx context.Context) (*collectAnswer, error) {
	for w.slots != nil {
		k, err := w.slots.Kernel(ctx, w.slot)
		if err != nil {
			return nil, fmt.Errorf("%w: kernel %s, slot %d: %w", ErrProject, w.name(), w.slot, err)
		}
		w.k, w.agent = k, ""
		if ak, ok := w.slots.(engine.AgentKernels); ok {
			if ref := ak.SlotAgent(w.slot); ref != nil {
				w.agent = ref.Host
			}
		}
		a, err := w.collect(ctx)
		if kernel.WasNotSent(err) && ctx.Err() == nil {
			continue // the kernel was gone before the request left: the slot's next one
		}
		return a, err
	}
	k, err := kernel.Start(ctx, w.kernelConfig())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProject, err)
	}
	w.k = k
	w.isUp()
	return w.collect(ctx)
}

// collectParams is the request that opens the worker's session: pytest's
// collection, or unittest's when pytest is missing.
func (w *testWorker) collectParams() any {
	t := w.t
	if t.unit {
		return unittestCollectRequest{Op: opUnittest, Step: "collect", Paths: t.args}
	}
	// Without split the first kernel's dependencies are the suite's; with
	// it, each kernel tells its share's.
	r := collectRequest{Op: opCollect, Args: t.args, Worker: w.id, Workers: t.workers,
		Purge: t.flags.purge && !t.running, Deps: t.flags.deps && (w.id == 0 || t.split) && !t.running,
		Watch: t.flags.watch, TTY: t.opts.Terminal, Columns: t.opts.Columns}
	if t.opts.Dist == DistLoadScope {
		r.Dist = DistLoadScope
	}
	if t.split {
		r.Split = &splitRequest{Share: w.share, Shares: t.shares}
		if w.steal != nil {
			r.Split.Only = []string{w.steal.file}
		}
	}
	if w.steal != nil && w.steal.handOver {
		r.Select = w.steal.sel
	}
	if w.slots != nil {
		// The launcher started the kernel: it gets the worker variables
		// a child kernel gets at its start.
		r.Env = map[string]string{"PYTEST_XDIST_WORKER": fmt.Sprintf("gw%d", w.id),
			"PYTEST_XDIST_WORKER_COUNT": fmt.Sprint(t.workers)}
	}
	return r
}

// collectFrames gathers the progress frames of a collect call (the
// kernel's reader goroutine writes it during the call; the worker reads
// it after).
type collectFrames struct {
	items, reports []testItem
	files          []string
	owners         []int
	deps           map[string][]string
	console        strings.Builder // "console" frames: a --collect-only listing too long for the answer
	fileTimes      map[string]float64
	bad            error // a frame that could not be read
}

func (f *collectFrames) progress(raw json.RawMessage) {
	var ev collectEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		f.bad = err
	}
	switch ev.Event {
	case "items":
		f.items = append(f.items, ev.Items...)
	case "collectReport":
		f.reports = append(f.reports, ev.Report)
	case "deps":
		f.deps[ev.Path] = ev.Deps
	case "files":
		f.files = append(f.files, ev.Files...)
		f.owners = append(f.owners, ev.Owners...)
	case "console":
		f.console.WriteString(ev.Text)
	case "fileTimes":
		if f.fileTimes == nil {
			f.fileTimes = map[string]float64{}
		}
		maps.Copy(f.fileTimes, ev.Times)
	}
}

// collect opens a new session on the worker's kernel and returns its
// collection.
func (w *testWorker) collect(ctx context.Context) (*collectAnswer, error) {
	f := &collectFrames{deps: map[string][]string{}}
	began := time.Now()
	raw, err := w.k.Call(ctx, pytestMethod, w.collectParams(), kernel.SinkFuncs{ProgressFunc: f.progress})
	if err != nil {
		return nil, fmt.Errorf("%w: kernel %s: collect: %w", ErrProject, w.name(), err)
	}
	var a collectAnswer
	if err := cmp.Or(json.Unmarshal(raw, &a), f.bad); err != nil {
		return nil, fmt.Errorf("%w: kernel %s: collect: %w", ErrProject, w.name(), err)
	}
	a.Items, a.CollectReports, a.Deps, a.Files, a.Owners, a.FileTimes = f.items, f.reports, f.deps, f.files, f.owners, f.fileTimes
	if f.console.Len() > 0 {
		a.Console = f.console.String() // the answer's is cut
	}
	a.took = time.Since(began)
	if len(a.Items) != a.Count {
		return nil, fmt.Errorf("%w: kernel %s: collect: %d items announced, %d received", ErrProject, w.name(), a.Count, len(a.Items))
	}
	return &a, nil
}

// stopKernel stops a child kernel; a slot's kernel is only let go (its
// launcher stops it).
func (w *testWorker) stopKernel(ctx context.Context) {
	if w.starting != nil {
		w.neverStart()
		<-w.starting // a kernel starting in the background is this worker's too
	}
	if w.k == nil {
		return
	}
	if w.slots == nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		w.k.Stop(sctx)
	}
	w.k = nil
}

// rejoin gives the worker a kernel with a session of this run again, after
// its kernel died, timed out or was lost: a child kernel is replaced; a
// slot's kernel is restarted when it is still alive (restart), else the
// slot's next kernel is awaited (a lost agent's slot fails at once). The
// new kernel's collection must be the run's. Its error says why the worker
// cannot go on.
func (w *testWorker) rejoin(ctx context.Context, restart bool) error {
	old := w.k
	w.stopKernel(ctx)
	if w.slots != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, replaceTimeout)
		defer cancel()
		if restart && old != nil && old.Err() == nil {
			if err := w.slots.Restart(ctx, w.slot, "test timed out"); err != nil {
				return fmt.Errorf("kernel %s could not be restarted: %w", w.name(), err)
			}
		}
	}
	w.t.replaced()
	if err := w.join(ctx); err != nil {
		return fmt.Errorf("kernel %s could not be replaced: %w", w.name(), err)
	}
	return nil
}

// join opens a new session of the run on the worker's kernel (starting
// it, or taking the slot's, if there is none): its collection must be the
// run's (with split collection, that of the worker's share).
func (w *testWorker) join(ctx context.Context) error {
	a, err := w.begin(ctx)
	switch {
	case err != nil:
		return err
	case a.NoPytest != "" || a.Usage != "":
		return fmt.Errorf("it cannot run pytest: %s", cmp.Or(a.NoPytest, a.Usage))
	}
	if w.steal != nil {
		return w.steal.index(a.Items, w.t.indexOf[w.share])
	}
	if d := differ(w.t.shareItems[w.share], a.Items); d != "" && !w.t.unit {
		return fmt.Errorf("it collected other tests than the run's kernels did: %s", d)
	}
	return nil
}

// loop runs groups until none is left or the run stops: with its session
// open it takes what the queue has, and finishes the session (the
// held-back test, session teardown) once the queue is empty; then it
// waits for tests that another kernel puts back, which it runs in a new
// session, until no open session is left (testRun's invariant).
func (w *testWorker) loop(ctx context.Context) {
	w.assigned = make(map[int]time.Time)
	w.running = -1
	w.open = true
	defer func() {
		if w.open {
			w.open = false
			w.t.closed(w.share)
		}
	}()
	if w.t.only != nil && w.t.only != w {
		// Another worker runs every test (testRun.only).
		if w.open {
			w.finishSession(ctx, !w.t.unit)
		}
		return
	}
	for {
		var can func(testGroup) bool
		if w.open && w.steal != nil && w.steal.handOver {
			can = w.steal.has
		}
		g, steal, ok := w.t.next(w.share, w.open, can)
		if !ok {
			if !w.open {
				return
			}
			began := time.Now()
			if !w.finishSession(ctx, !w.t.unit) {
				return
			}
			w.t.opts.Logger.Debug("session finished", "kernel", w.name(), "took", time.Since(began))
			continue
		}
		if !w.open && !w.openSession(ctx, g, steal) {
			return
		}
		indices := g.indices
		if w.steal != nil {
			indices = w.steal.fromShare(indices)
		}
		began := time.Now()
		if !w.call(ctx, opRun, indices) {
			return
		}
		w.t.opts.Logger.Debug("group ran", "kernel", w.name(), "tests", len(indices), "took", time.Since(began))
		if w.steal != nil && !w.steal.handOver && w.open {
			// A stolen module's session ends with it.
			if !w.finishSession(ctx, true) {
				return
			}
			w.setSteal(nil)
		}
	}
}

// finishSession finishes the worker's open session (with call, unless the
// run stopped) and counts it closed; false when the worker must end.
func (w *testWorker) finishSession(ctx context.Context, call bool) bool {
	if !w.t.isStopped() && call && !w.call(ctx, opFinish, nil) {
		return false
	}
	w.open = false
	w.t.closed(w.share)
	return true
}

// openSession opens a new session (a collection) for g: tests put back
// after this kernel finished its session, the share of a kernel that is
// gone, or a stolen group, whose module alone it collects. false when it
// cannot: g goes back to the queue and the worker ends.
func (w *testWorker) openSession(ctx context.Context, g testGroup, steal bool) bool {
	w.setShare(g.share)
	w.setSteal(nil)
	if steal {
		w.setSteal(&stolen{file: w.t.fileOf(g), want: g.indices})
		w.t.opts.Logger.Debug("stealing a module", "kernel", w.name(), "module", w.steal.file, "tests", len(g.indices))
	}
	w.t.opened(w.share)
	w.open = true
	if err := w.join(ctx); err != nil {
		w.t.requeue(g)
		if steal {
			// Not this kernel's fault: the group goes back to
			// its share's kernel, the worker ends.
			w.t.opts.Logger.Warn("work stealing failed", "kernel", w.name(), "err", err)
		}
		w.t.left(fmt.Sprintf("kernel %s: %v", w.name(), err))
		return false
	}
	return true
}
