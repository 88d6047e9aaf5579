package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// PoolConfig describes a pool of kernels.
type PoolConfig struct {
	// Kernel is the template of every kernel. Its ID, if set, prefixes the
	// kernel ids ("k" by default: k1, k2, ...).
	Kernel Config
	// Size is the number of slots; default runtime.NumCPU(), at least 1.
	Size int
	// NoSpare turns off the warm spare kernel that makes a restart cheap.
	NoSpare bool
	// SpareDelay holds the spare's first start back this long after Start
	// returns: at a server's start the first kernel's compile and run are
	// what a user waits for, and a spare booting beside them on a small
	// machine takes the CPU they need.
	SpareDelay time.Duration
	// OnReady runs on every new kernel of a slot (a fresh start or the
	// promoted spare) before the slot serves requests with it. An error
	// counts as a failed start: the kernel is stopped and the slot tries
	// again with backoff. The spare gets OnReady when it is promoted, so
	// it sees the state of the project at that moment.
	OnReady func(ctx context.Context, slot int, k *Kernel) error
	// OnRestart is told every time a slot's kernel was replaced, after the
	// replacement is ready. Called from the slot's owner goroutine: it
	// must return quickly and must not call Restart.
	OnRestart func(RestartEvent)
	// ReconcileInterval is the period of the reconciliation tick, which
	// health-checks idle kernels and the spare; default 5 s.
	ReconcileInterval time.Duration
	// HealthTimeout bounds the ping of an idle kernel; default 5 s.
	HealthTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between failing starts
	// (doubling from min to max); defaults 100 ms and 10 s.
	BackoffMin, BackoffMax time.Duration
	// MaxStartFailures retires a slot (see Retire) whose kernel failed to
	// start that many times in a row (0: retry forever, with backoff). A
	// batch run would rather fail the entries of a slot that cannot start
	// a kernel (the OOM killer, a full disk) than wait for it forever.
	MaxStartFailures int
	// StartConcurrency is how many kernels may be starting at once;
	// default runtime.NumCPU(). A Python start is CPU-bound: four kernels
	// starting together on two CPUs are all ready late, while two at a
	// time make the first two ready in half the time and the others no
	// later, so work begins sooner (the spare waits behind the slots).
	StartConcurrency int
}

// RestartEvent reports that a slot's kernel was replaced.
type RestartEvent struct {
	Slot        int
	OldKernelID string
	NewKernelID string
	// Reason says why: "kernel died: exit status 3", "restart requested",
	// "interrupt timed out", "health check failed: ...".
	Reason string
	// StatePreserved is always false: a new kernel starts empty.
	StatePreserved bool
	// Err is the old kernel's end (an *ExitError) when it died.
	Err error
}

// KernelStatus is one kernel of Pool.Status.
type KernelStatus struct {
	Slot      int    `json:"slot"` // -1 for the warm spare
	KernelID  string `json:"id"`
	PID       int    `json:"pid"`
	State     string `json:"state"`
	LastError string `json:"lastError,omitempty"`
}

// Slot states reported by Pool.Status.
const (
	StateStarting   = "starting"   // the slot's first kernel is starting
	StateReady      = "ready"      // idle, serving
	StateBusy       = "busy"       // a request is in flight
	StateRestarting = "restarting" // replacing its kernel
	StateBackoff    = "backoff"    // waiting before retrying a failed start
	StateSpare      = "spare"      // the warm spare
	StateStopped    = "stopped"
)

// ErrPoolStopped is returned by Pool methods once Stop has been called.
var ErrPoolStopped = errors.New("kernel pool stopped")

// ErrSlotRetired is returned for a slot that Retire closed.
var ErrSlotRetired = errors.New("kernel slot retired")

const (
	defaultReconcile     = 5 * time.Second
	defaultHealthTimeout = 5 * time.Second
	defaultBackoffMin    = 100 * time.Millisecond
	defaultBackoffMax    = 10 * time.Second
	// minHealthyLife: a kernel that dies sooner after becoming ready
	// counts as a failed start for backoff.
	minHealthyLife = time.Second
)

// Pool keeps a fixed number of kernel slots serving, plus one warm spare.
//
// Start it with NewPool(cfg).Start(ctx), send work with Call or Kernel, and
// Stop it. Each slot has one owner goroutine, the supervisor of its
// kernel: it starts the kernel (or promotes the spare), runs OnReady,
// publishes it, and replaces it when it dies, when Restart asks, or when a
// health check fails, with backoff while starts keep failing. Requests do
// not go through the owner: callers use the published *Kernel directly.
// A spare-keeper goroutine keeps one spare kernel started. A ticker
// goroutine sends the reconciliation tick to all of them.
//
// The pool restarts dead kernels forever. Whether a run that killed its
// kernel is run again is the caller's decision (see CrashStreak).
type Pool struct {
	cfg   PoolConfig
	slots []*slot
	seq   atomic.Uint64 // kernel ids

	mu       sync.Mutex
	started  bool    // guarded by mu
	stopped  bool    // guarded by mu
	spare    *Kernel // guarded by mu: the warm spare, nil while none is ready
	spareErr error   // guarded by mu: the spare keeper's last start failure
	// python: guarded by mu: the interpreter of every kernel started from
	// now on (cfg.Kernel.Python until SetPython). A kernel started on
	// another one is never handed to a slot as the spare.
	python Interpreter

	// ownerCtx is the per-owner context of every goroutine of the pool;
	// Stop cancels it. killCtx is cancelled when Stop's own ctx ends,
	// turning graceful kernel stops into kills.
	ownerCtx   context.Context
	ownerStop  context.CancelFunc
	killCtx    context.Context
	killNow    context.CancelFunc
	spareTaken chan struct{} // capacity 1: a slot promoted the spare
	spareTick  chan struct{} // capacity 1: reconciliation tick for the spare keeper
	// starting holds a token per kernel process being started
	// (StartConcurrency of them); its waiters are served in order.
	starting chan struct{}
	wg       sync.WaitGroup
}

// NewPool returns a pool that does nothing until Start.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Size <= 0 {
		cfg.Size = runtime.NumCPU()
	}
	if cfg.Size < 1 {
		cfg.Size = 1
	}
	if cfg.ReconcileInterval <= 0 {
		cfg.ReconcileInterval = defaultReconcile
	}
	if cfg.HealthTimeout <= 0 {
		cfg.HealthTimeout = defaultHealthTimeout
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = defaultBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(defaultBackoffMax, cfg.BackoffMin)
	}
	if cfg.StartConcurrency <= 0 {
		cfg.StartConcurrency = max(1, runtime.NumCPU())
	}
	p := &Pool{
		cfg:        cfg,
		python:     cfg.Kernel.Python,
		spareTaken: make(chan struct{}, 1),
		spareTick:  make(chan struct{}, 1),
		starting:   make(chan struct{}, cfg.StartConcurrency),
	}
	p.ownerCtx, p.ownerStop = context.WithCancel(context.Background())
	p.killCtx, p.killNow = context.WithCancel(context.Background())
	for i := range cfg.Size {
		p.slots = append(p.slots, newSlot(p, i))
	}
	return p
}

// Start starts every slot's kernel and the spare, and returns when the
// first slot has a ready kernel; the other slots finish starting in the
// background (Call and Kernel on a slot wait for its kernel). If every
// slot's first start fails, Start stops the pool and returns the first
// error; a slot that fails to start while another is ready retries with
// backoff like any dead kernel. ctx bounds only the wait: the pool runs
// until Stop.
func (p *Pool) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started || p.stopped {
		p.mu.Unlock()
		return fmt.Errorf("kernel pool: Start called twice")
	}
	p.started = true
	p.mu.Unlock()

	first := make(chan error, len(p.slots))
	for _, s := range p.slots {
		p.wg.Add(1)
		go s.run(p.ownerCtx, first)
	}
	// Wait for the first slot to be ready: work can begin on it while the
	// others finish starting (a request to a slot waits for its kernel).
	// Start fails only when every slot's first start failed (a broken
	// interpreter, a failing OnReady): one slot failing fast must not fail
	// a pool whose other slots are about to be ready; it retries with
	// backoff (or gives up, MaxStartFailures). first has room for every
	// slot, so none ever blocks on it.
	var err error
	for range len(p.slots) {
		var outcome error
		select {
		case outcome = <-first:
		case <-ctx.Done():
			outcome = context.Cause(ctx)
		}
		if outcome == nil {
			err = nil
			break
		}
		if err == nil {
			err = outcome
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		p.Stop(context.Background())
		return fmt.Errorf("kernel pool: start: %w", err)
	}
	if !p.cfg.NoSpare {
		p.wg.Add(1)
		go p.keepSpare(p.ownerCtx)
	}
	p.wg.Add(1)
	go p.tick(p.ownerCtx)
	return nil
}

// Stop stops every kernel (gracefully, then by SIGKILL when ctx ends) and
// waits for all goroutines of the pool. Calls waiting on a slot fail with
// ErrPoolStopped; requests in flight fail with ErrStopped. Idempotent.
func (p *Pool) Stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.ownerStop()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		p.killNow()
		<-done
	}
	p.killNow()
	return nil
}

// Size returns the number of slots.
func (p *Pool) Size() int { return len(p.slots) }

func (p *Pool) slot(i int) (*slot, error) {
	if i < 0 || i >= len(p.slots) {
		return nil, fmt.Errorf("kernel pool: slot %d out of range [0, %d)", i, len(p.slots))
	}
	return p.slots[i], nil
}

// Kernel returns the ready kernel of slot i, waiting while the slot starts
// or replaces its kernel. The kernel may die or be replaced at any time
// after; its calls then fail with *ExitError or ErrStopped.
func (p *Pool) Kernel(ctx context.Context, i int) (*Kernel, error) {
	s, err := p.slot(i)
	if err != nil {
		return nil, err
	}
	return s.wait(ctx)
}

// Call runs a request on slot i's kernel; see Kernel.Call. A request cut
// short because the pool replaced the kernel (Restart, a failed health
// check) fails with an error wrapping ErrKernelRestarted.
//
// A request that could not be sent because the slot's kernel had just died
// or been replaced goes to the slot's next kernel: an *ExitError from Call
// always means the kernel died while this request ran.
func (p *Pool) Call(ctx context.Context, i int, method string, params any, sink Sink) (json.RawMessage, error) {
	for {
		k, err := p.Kernel(ctx, i)
		if err != nil {
			return nil, err
		}
		raw, err := k.Call(ctx, method, params, sink)
		if WasNotSent(err) {
			continue // the slot's owner is replacing k: wait for the next one
		}
		return raw, p.replacedError(err)
	}
}

// Eval runs code on slot i's kernel; see Kernel.Eval and Pool.Call.
func (p *Pool) Eval(ctx context.Context, i int, code string, sink Sink) error {
	for {
		k, err := p.Kernel(ctx, i)
		if err != nil {
			return err
		}
		err = k.Eval(ctx, code, sink)
		if WasNotSent(err) {
			continue
		}
		return p.replacedError(err)
	}
}

func (p *Pool) replacedError(err error) error {
	if err == nil || !errors.Is(err, ErrStopped) {
		return err
	}
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		return fmt.Errorf("%w: %w", ErrPoolStopped, err)
	}
	return fmt.Errorf("%w: %w", ErrKernelRestarted, err)
}

// Retire closes slot i for good: its kernel is stopped gracefully in the
// background and not replaced, and calls on the slot fail with
// ErrSlotRetired (a request in flight fails as at Stop). It returns at
// once; Stop still waits for the kernel to be gone. A batch run retires
// each kernel as soon as no entry is left for it, so that its exit
// overlaps the last entries of the others. Idempotent.
func (p *Pool) Retire(i int) error {
	s, err := p.slot(i)
	if err != nil {
		return err
	}
	s.closeOnce.Do(func() { close(s.closing) })
	return nil
}

// Retired reports whether slot i was closed, by Retire or after
// MaxStartFailures failed starts.
func (p *Pool) Retired(i int) bool {
	s, err := p.slot(i)
	return err == nil && s.isClosing()
}

// Restart replaces slot i's kernel (a reset: its state is lost) and
// returns once the new kernel is ready; with a warm spare that costs about
// OnReady. If the slot is already replacing its kernel, Restart waits for
// that replacement. Requests in flight on the old kernel fail with
// ErrKernelRestarted. OnRestart is told, with the given reason, before
// Restart returns. If the new kernel fails to start (or its OnReady fails),
// Restart returns that error; the slot keeps trying with backoff.
func (p *Pool) Restart(ctx context.Context, i int, reason string) error {
	s, err := p.slot(i)
	if err != nil {
		return err
	}
	if reason == "" {
		reason = "restart requested"
	}
	req := restartRequest{reason: reason, reply: make(chan error, 1)}
	select {
	case s.restart <- req:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-p.ownerCtx.Done():
		return ErrPoolStopped
	case <-s.closing:
		return fmt.Errorf("%w: slot %d", ErrSlotRetired, i)
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// StopAtBoundary asks the request in flight on slot i's kernel to end at
// its next statement boundary (Kernel.StopAtBoundary); nothing happens if
// the slot has no kernel right now.
func (p *Pool) StopAtBoundary(i int) {
	s, err := p.slot(i)
	if err != nil {
		return
	}
	s.mu.Lock()
	k := s.cur
	s.mu.Unlock()
	if k != nil {
		k.StopAtBoundary()
	}
}

// Status reports every slot's kernel, then the spare (slot -1) if any.
func (p *Pool) Status() []KernelStatus {
	out := make([]KernelStatus, 0, len(p.slots)+1)
	for _, s := range p.slots {
		out = append(out, s.status())
	}
	p.mu.Lock()
	spare, spareErr := p.spare, p.spareErr
	p.mu.Unlock()
	if spare != nil {
		out = append(out, KernelStatus{Slot: -1, KernelID: spare.ID(), PID: spare.PID(), State: StateSpare})
	} else if spareErr != nil {
		out = append(out, KernelStatus{Slot: -1, State: StateBackoff, LastError: spareErr.Error()})
	}
	return out
}

// SetPython makes every kernel started from now on run py. Kernels
// already running keep theirs until they are replaced (the caller restarts
// the slots, Restart); the warm spare, if it runs another interpreter, is
// stopped and the keeper starts one on py.
func (p *Pool) SetPython(py Interpreter) {
	p.mu.Lock()
	p.python = py
	k := p.spare
	if k != nil && k.cfg.Python != py {
		p.spare = nil // as a slot takes it: the keeper starts another
	} else {
		k = nil
	}
	p.mu.Unlock()
	if k != nil {
		select {
		case p.spareTaken <- struct{}{}:
		default:
		}
		p.stopAsync(k)
	}
}

// currentPython is the interpreter of kernels started now.
func (p *Pool) currentPython() Interpreter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.python
}

// startKernel starts a kernel with the next id, on the current interpreter.
func (p *Pool) startKernel(ctx context.Context) (*Kernel, error) {
	cfg := p.cfg.Kernel
	cfg.Python = p.currentPython()
	prefix := cfg.ID
	if prefix == "" {
		prefix = "k"
	}
	select {
	case p.starting <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	defer func() { <-p.starting }()
	cfg.ID = fmt.Sprintf("%s%d", prefix, p.seq.Add(1))
	return Start(ctx, cfg)
}

// stopAsync stops a kernel the pool no longer serves, on a goroutine the
// pool waits for in Stop.
func (p *Pool) stopAsync(k *Kernel) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		k.Stop(p.killCtx)
	}()
}

// takeSpare hands the warm spare to a slot, or returns nil.
func (p *Pool) takeSpare() *Kernel {
	p.mu.Lock()
	k := p.spare
	p.spare = nil
	p.mu.Unlock()
	if k == nil {
		return nil
	}
	select {
	case p.spareTaken <- struct{}{}:
	default:
	}
	if k.Err() != nil {
		return nil // died as a spare; the keeper starts another
	}
	if k.cfg.Python != p.currentPython() {
		p.stopAsync(k) // started before SetPython: the keeper starts another
		return nil
	}
	return k
}

// keepSpare is the spare keeper: it keeps one started kernel in p.spare.
// Invariant: only the keeper sets p.spare to a kernel; slots only take it
// (set it to nil). The keeper stops the spare it holds when the pool stops.
func (p *Pool) keepSpare(ctx context.Context) {
	defer p.wg.Done()
	if p.cfg.SpareDelay > 0 && !sleepCtx(ctx, p.cfg.SpareDelay) {
		return
	}
	failures := 0
	var held *Kernel // the kernel the keeper last published
	for {
		p.mu.Lock()
		still := p.spare == held && held != nil
		if still && held.Err() != nil {
			p.spare = nil // died while waiting: replace it
			still = false
		}
		p.mu.Unlock()
		if !still {
			held = nil
			if failures > 0 && !sleepCtx(ctx, backoff(failures, p.cfg.BackoffMin, p.cfg.BackoffMax)) {
				return
			}
			k, err := p.startKernel(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				p.mu.Lock()
				p.spareErr = err
				p.mu.Unlock()
				continue
			}
			failures = 0
			p.mu.Lock()
			if k.cfg.Python != p.python {
				// SetPython came during its start: start one on the new
				// interpreter instead.
				p.mu.Unlock()
				p.stopAsync(k)
				continue
			}
			p.spare, p.spareErr, held = k, nil, k
			p.mu.Unlock()
		}
		select {
		case <-held.Done():
		case <-p.spareTaken:
		case <-p.spareTick:
			if !p.checkSpare(held) {
				held.kill("health check failed as a spare")
				<-held.Done()
			}
		case <-ctx.Done():
			p.mu.Lock()
			mine := p.spare == held
			if mine {
				p.spare = nil
			}
			p.mu.Unlock()
			if mine {
				held.Stop(p.killCtx)
			}
			return
		}
	}
}

// checkSpare pings the spare if it is still the spare and idle.
func (p *Pool) checkSpare(k *Kernel) bool {
	p.mu.Lock()
	mine := p.spare == k
	p.mu.Unlock()
	if !mine {
		return true
	}
	_, err := k.pingIfIdle(p.cfg.HealthTimeout)
	return err == nil
}

// tick is the reconciliation ticker.
func (p *Pool) tick(ctx context.Context) {
	defer p.wg.Done()
	t := time.NewTicker(p.cfg.ReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.reconcile()
		case <-ctx.Done():
			return
		}
	}
}

// reconcile asks every owner to compare its slot with the desired state.
func (p *Pool) reconcile() {
	for _, s := range p.slots {
		select {
		case s.tickCh <- struct{}{}:
		default: // the owner has one pending already
		}
	}
	select {
	case p.spareTick <- struct{}{}:
	default:
	}
}

func backoff(failures int, min, max time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := min
	for i := 1; i < failures && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d
}

// sleepCtx waits d or until ctx ends; reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
