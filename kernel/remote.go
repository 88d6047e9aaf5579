package kernel

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"
)

// RemoteControl carries out, on a remote kernel's host, what a local
// Kernel does with its connection and signals: a runtime agent's relay
// (agent/PROTOCOL.md). A remote Kernel is a *Kernel like any other for
// its callers (Call, Eval, StopAtBoundary, Stop); only these operations
// cross the network.
//
// Interrupt, StopAtBoundary and Abandon are called with the Kernel's mutex
// held: they must not block and must not call back into the Kernel. Send
// is called by the request's caller without the mutex.
type RemoteControl interface {
	// Send forwards request id with its payload ({"method", "params"},
	// valid only during the call). An error means the request did not
	// leave: the Kernel ends and the call fails as not sent.
	Send(id uint64, payload []byte) error
	// Interrupt asks the host to interrupt request id (the host's kernel
	// code does it as locally: interrupt cell, SIGINT, InterruptTimeout).
	Interrupt(id uint64)
	// StopAtBoundary asks the host to stop request id at its next
	// statement boundary.
	StopAtBoundary(id uint64)
	// Abandon tells the relay that this side gave up the kernel (a kill
	// after an unanswered interrupt, Stop) with the reason.
	Abandon(reason string)
}

// RemoteConfig describes a kernel that runs on another host.
type RemoteConfig struct {
	// ID is the kernel's id (the agent's kernel id, so it names one boot).
	ID string
	// PID is the kernel's process id on its host (for status only).
	PID int
	// Info is what the kernel reported when it became ready.
	Info    ReadyInfo
	Control RemoteControl
	// Background receives output that belongs to no request.
	Background Sink
	// InterruptTimeout bounds the wait after an interrupt on this side;
	// past it the Kernel is abandoned and the call fails with
	// ErrKernelRestarted. It should exceed the host's own interrupt
	// timeout, which normally decides. Default 2 s + 2x the local default.
	InterruptTimeout time.Duration
}

// remote is the part of a Kernel attached to a relay rather than a
// process. Its queue is filled by the relay's reader (Deliver*) and
// drained by the Kernel's remoteLoop goroutine, so a slow sink never
// holds up the relay (or the other kernels that share it).
type remote struct {
	ctl RemoteControl

	mu    sync.Mutex
	queue []frame       // guarded by mu: frames delivered, not yet dispatched
	wake  chan struct{} // capacity 1: the queue grew

	endOnce sync.Once
	endErr  error         // written once before ended is closed
	ended   chan struct{} // closed by end
}

// Attach returns a Kernel served by a relay: requests go out through
// cfg.Control and come back through the Deliver methods. It is ready at
// once; it ends (Done) when EndRemote, Stop or a kill ends it.
func Attach(cfg RemoteConfig) *Kernel {
	to := cfg.InterruptTimeout
	if to <= 0 {
		to = 2*time.Second + 2*defaultInterruptTimeout
	}
	kc := Config{ID: cfg.ID, Background: cfg.Background, InterruptTimeout: to}
	kc = kc.withDefaults()
	k := &Kernel{
		cfg:    kc,
		id:     kc.ID,
		pid:    cfg.PID,
		info:   cfg.Info,
		turn:   make(chan struct{}, 1),
		resCh:  make(chan struct{}, 1),
		done:   make(chan struct{}),
		remote: &remote{ctl: cfg.Control, wake: make(chan struct{}, 1), ended: make(chan struct{})},
	}
	k.readers.Add(1)
	go k.remoteLoop()
	go k.superviseRemote()
	return k
}

// IsRemote reports whether the kernel was made by Attach.
func (k *Kernel) IsRemote() bool { return k.remote != nil }

// DeliverOutput hands the kernel output of request id (0: none) that
// its host relayed. It never blocks; p is copied.
func (k *Kernel) DeliverOutput(id uint64, s Stream, p []byte) {
	kind := kindOut
	if s == Stderr {
		kind = kindErr
	}
	k.deliver(frame{kind: kind, id: id, payload: bytes.Clone(p)})
}

// DeliverProgress hands the kernel a progress event of request id.
func (k *Kernel) DeliverProgress(id uint64, p []byte) {
	k.deliver(frame{kind: kindProg, id: id, payload: bytes.Clone(p)})
}

// DeliverResult hands the kernel the result frame payload of request id
// ({"status": ...}, kernel/PROTOCOL.md).
func (k *Kernel) DeliverResult(id uint64, p []byte) {
	k.deliver(frame{kind: kindRes, id: id, payload: bytes.Clone(p)})
}

func (k *Kernel) deliver(f frame) {
	r := k.remote
	r.mu.Lock()
	r.queue = append(r.queue, f)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// EndRemote ends a remote kernel: calls in flight and later ones fail with
// err once the frames delivered before are dispatched. The first end wins.
// Wrap err with NotSent when the request in flight never ran.
func (k *Kernel) EndRemote(err error) {
	r := k.remote
	r.endOnce.Do(func() {
		r.endErr = err
		close(r.ended)
	})
}

// NotSent marks err as the end of a kernel that a request never reached
// (WasNotSent reports true): a pool may send it to the slot's next kernel.
func NotSent(err error) error { return notSent{err} }

// remoteLoop is a remote Kernel's reader goroutine: it dispatches the
// delivered frames in order and exits once the kernel ended and the
// queue is drained (a result delivered before the end still counts).
func (k *Kernel) remoteLoop() {
	defer k.readers.Done()
	r := k.remote
	for {
		r.mu.Lock()
		if len(r.queue) > 0 {
			f := r.queue[0]
			r.queue[0] = frame{}
			r.queue = r.queue[1:]
			r.mu.Unlock()
			if err := k.dispatch(f); err != nil {
				k.EndRemote(fmt.Errorf("kernel %s: %w", k.id, err))
			}
			continue
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-r.ended:
			r.mu.Lock()
			empty := len(r.queue) == 0
			r.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// superviseRemote is a remote Kernel's supervisor: it waits for the end,
// then for the reader, and closes done.
func (k *Kernel) superviseRemote() {
	r := k.remote
	<-r.ended
	k.mu.Lock()
	k.exited = true
	stopping := k.stopping
	k.mu.Unlock()
	k.readers.Wait()
	if stopping {
		k.err = fmt.Errorf("kernel %s: %w", k.id, ErrStopped)
	} else {
		k.err = r.endErr
	}
	close(k.done)
}

// killRemote is kill for a remote kernel (k.mu held).
func (k *Kernel) killRemote(reason string) {
	k.remote.ctl.Abandon(reason)
	k.EndRemote(&ExitError{KernelID: k.id, PID: k.pid, Code: -1, Killed: reason})
}

// stopRemote is Stop for a remote kernel.
func (k *Kernel) stopRemote(ctx context.Context) error {
	k.mu.Lock()
	first := !k.stopping
	k.stopping = true
	if first && !k.exited {
		k.remote.ctl.Abandon("stopped")
	}
	k.mu.Unlock()
	k.EndRemote(fmt.Errorf("kernel %s: %w", k.id, ErrStopped))
	select {
	case <-k.done:
	case <-ctx.Done():
	}
	return nil
}

// CallRaw runs a request whose payload is encoded already ({"method",
// "params"}, as a relayed request carries it) and returns the payload of
// its result frame as the kernel sent it ({"status": ...}), undecoded: a
// Python exception or an answered interrupt is in the payload, not an
// error. Other errors as for Call. A runtime agent relays with it.
func (k *Kernel) CallRaw(ctx context.Context, payload []byte, sink Sink) ([]byte, error) {
	const method = "relayed request"
	if err := k.acquire(ctx, method); err != nil {
		return nil, err
	}
	defer k.release()
	k.pbuf = append(k.pbuf[:0], payload...)
	if err := k.exchange(ctx, method, sink); err != nil {
		return nil, err
	}
	return bytes.Clone(k.resBuf), nil
}
