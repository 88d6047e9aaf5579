package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// slot is one place of the pool that always wants a ready kernel. Its
// owner goroutine (run) is the only one that changes cur; callers read it
// through wait.
type slot struct {
	p       *Pool
	index   int
	restart chan restartRequest // owner receives; Restart sends
	tickCh  chan struct{}       // capacity 1: reconciliation tick
	// closing is closed by Retire: the owner stops the slot's kernel and
	// ends without replacing it; waits on the slot fail with ErrSlotRetired.
	closing   chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	cur     *Kernel       // guarded by mu: the published kernel, nil while replacing
	ready   chan struct{} // guarded by mu: closed when cur is published; replaced on unpublish
	retired chan struct{} // guarded by mu: closed when cur is unpublished; replaced on publish
	state   string        // guarded by mu
	lastErr error         // guarded by mu: the last failure of the slot
}

type restartRequest struct {
	reason string
	reply  chan error // capacity 1
}

func newSlot(p *Pool, i int) *slot {
	return &slot{
		p:       p,
		index:   i,
		restart: make(chan restartRequest),
		tickCh:  make(chan struct{}, 1),
		closing: make(chan struct{}),
		ready:   make(chan struct{}),
		retired: make(chan struct{}),
		state:   StateStarting,
	}
}

// wait returns the published kernel, waiting for one. A published kernel
// that has already ended is not returned: the owner is about to replace it.
func (s *slot) wait(ctx context.Context) (*Kernel, error) {
	for {
		if s.isClosing() {
			s.mu.Lock()
			why := s.lastErr
			s.mu.Unlock()
			if why != nil {
				return nil, fmt.Errorf("%w: slot %d: %w", ErrSlotRetired, s.index, why)
			}
			return nil, fmt.Errorf("%w: slot %d", ErrSlotRetired, s.index)
		}
		s.mu.Lock()
		k, ready, retired := s.cur, s.ready, s.retired
		s.mu.Unlock()
		if k != nil && k.Err() == nil {
			return k, nil
		}
		if k != nil {
			ready = retired // wait for the owner to take it down first
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-s.p.ownerCtx.Done():
			return nil, ErrPoolStopped
		case <-s.closing:
		}
	}
}

// isClosing reports whether Retire was called.
func (s *slot) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

func (s *slot) publish(k *Kernel) {
	s.mu.Lock()
	s.cur, s.state, s.lastErr = k, StateReady, nil
	close(s.ready)
	s.retired = make(chan struct{})
	s.mu.Unlock()
}

func (s *slot) unpublish(state string, err error) {
	s.mu.Lock()
	if s.cur != nil {
		s.cur = nil
		s.ready = make(chan struct{})
		close(s.retired)
	}
	s.state = state
	if err != nil {
		s.lastErr = err
	}
	s.mu.Unlock()
}

func (s *slot) status() KernelStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := KernelStatus{Slot: s.index, State: s.state}
	if s.cur != nil {
		st.KernelID, st.PID = s.cur.ID(), s.cur.PID()
		if s.cur.Busy() {
			st.State = StateBusy
		}
	}
	if s.lastErr != nil {
		st.LastError = s.lastErr.Error()
	}
	return st
}

// run is the slot's owner goroutine. first receives the outcome of the
// slot's first start (nil once a kernel is ready), exactly once.
func (s *slot) run(ctx context.Context, first chan<- error) {
	defer s.p.wg.Done()
	defer s.unpublish(StateStopped, nil)
	var (
		failures     int              // starts in a row that failed or died young
		failedStarts int              // starts in a row that failed (MaxStartFailures)
		waiting      []restartRequest // Restart calls answered by the next publish
		old          *Kernel          // the kernel being replaced, nil at first
		reason       string           // why old is replaced
		oldErr       error            // how old ended, if it died
	)
	reply := func(err error) {
		for _, r := range waiting {
			r.reply <- err
		}
		waiting = waiting[:0]
	}
	defer func() { reply(ErrPoolStopped) }()

	for {
		if s.isClosing() {
			return
		}
		if failures > 0 {
			s.unpublish(StateBackoff, nil)
			if !s.pause(ctx, backoff(failures, s.p.cfg.BackoffMin, s.p.cfg.BackoffMax), &waiting) {
				return
			}
		}
		k, err := s.obtain(ctx, &waiting)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if first != nil {
				// Start fails with the first start error it sees and stops
				// the pool (ending this goroutine through ctx); a slot whose
				// first start fails after Start returned retries like any.
				first <- err
				first = nil
			}
			failures++
			failedStarts++
			if limit := s.p.cfg.MaxStartFailures; limit > 0 && failedStarts >= limit {
				s.unpublish(StateStopped, fmt.Errorf("gave up after %d failed starts: %w", failedStarts, err))
				s.closeOnce.Do(func() { close(s.closing) })
				return
			}
			s.unpublish(StateBackoff, err)
			// A restart that was asked for is answered with the failure
			// rather than kept waiting through the backoffs: the slot goes
			// on trying, the caller decides whether to wait more.
			reply(fmt.Errorf("kernel start failed: %w", err))
			continue
		}
		failedStarts = 0
		readyAt := time.Now()
		s.publish(k)
		if first != nil {
			first <- nil
			first = nil
		}
		// OnRestart is told before Restart calls return, so a caller that
		// acts on the new kernel (pushes a frame, say) acts after the
		// owner of the slot's contexts has re-enqueued their runs: told
		// after, it would re-run a context the caller had just started.
		if old != nil && s.p.cfg.OnRestart != nil {
			s.p.cfg.OnRestart(RestartEvent{
				Slot: s.index, OldKernelID: old.ID(), NewKernelID: k.ID(),
				Reason: reason, Err: oldErr,
			})
		}
		reply(nil)

		reason, oldErr = s.serve(ctx, k, &waiting)
		if ctx.Err() != nil || s.isClosing() {
			s.unpublish(StateStopped, oldErr)
			k.Stop(s.p.killCtx)
			return
		}
		s.unpublish(StateRestarting, oldErr)
		old = k
		if k.Err() == nil {
			s.p.stopAsync(k) // replaced on purpose: stop it in the background
		}
		if oldErr != nil && time.Since(readyAt) < minHealthyLife {
			failures++
		} else {
			failures = 0
		}
	}
}

// obtain gets a new kernel for the slot (the spare, else a fresh start)
// and runs OnReady on it. Restart requests that arrive meanwhile wait for
// this kernel.
func (s *slot) obtain(ctx context.Context, waiting *[]restartRequest) (*Kernel, error) {
	type result struct {
		k   *Kernel
		err error
	}
	ch := make(chan result, 1)
	go func() {
		k := s.p.takeSpare()
		if k == nil {
			var err error
			if k, err = s.p.startKernel(ctx); err != nil {
				ch <- result{nil, err}
				return
			}
		}
		if s.p.cfg.OnReady != nil {
			if err := s.p.cfg.OnReady(ctx, s.index, k); err != nil {
				k.Stop(s.p.killCtx)
				ch <- result{nil, fmt.Errorf("kernel %s: OnReady for slot %d: %w", k.ID(), s.index, err)}
				return
			}
		}
		ch <- result{k, nil}
	}()
	for {
		select {
		case r := <-ch:
			if r.err == nil && ctx.Err() != nil {
				r.k.Stop(s.p.killCtx)
				return nil, context.Cause(ctx)
			}
			return r.k, r.err
		case req := <-s.restart:
			*waiting = append(*waiting, req)
		}
	}
}

// pause waits d (backoff), collecting Restart requests; false when ctx ended.
func (s *slot) pause(ctx context.Context, d time.Duration, waiting *[]restartRequest) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case req := <-s.restart:
			*waiting = append(*waiting, req)
		case <-ctx.Done():
			return false
		case <-s.closing:
			return false
		}
	}
}

// serve watches the published kernel until it must be replaced; it
// returns why, and the kernel's end if it died.
func (s *slot) serve(ctx context.Context, k *Kernel, waiting *[]restartRequest) (string, error) {
	for {
		select {
		case <-k.Done():
			err := k.Err()
			var exit *ExitError
			if errors.As(err, &exit) && exit.Killed != "" {
				return "kernel killed: " + exit.Killed, err
			}
			if errors.As(err, &exit) {
				return "kernel died: " + exit.Status(), err
			}
			return "kernel stopped", err
		case req := <-s.restart:
			*waiting = append(*waiting, req)
			return req.reason, nil
		case <-s.tickCh:
			_, err := k.pingIfIdle(s.p.cfg.HealthTimeout)
			if err == nil || errors.Is(err, ErrKernelDied) {
				continue // alive, or died by itself: the Done case reports it
			}
			// A ping that timed out was interrupted and the kernel killed;
			// any other failure kills it here.
			k.kill("health check failed: " + err.Error())
			<-k.Done()
			return "health check failed: " + err.Error(), k.Err()
		case <-ctx.Done():
			return "pool stopped", nil
		case <-s.closing:
			return "slot retired", nil
		}
	}
}
