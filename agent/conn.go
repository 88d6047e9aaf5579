package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ripple-run/ripple/kernel"
)

// agentConn is one agent connection on the coordinator.
//
// The reader (serveConn) owns the frame reader; the writer goroutine owns
// writes after the welcome; every other goroutine queues frames on out
// without blocking (send).
type agentConn struct {
	s     *slots
	conn  net.Conn
	host  string
	rec   *agentRec // set by register under slots.mu, then read-only
	epoch uint32    // likewise

	out       chan []byte
	done      chan struct{} // closed by close
	quit      chan struct{} // closed by finish: flush, then close
	closeOnce sync.Once
	quitOnce  sync.Once
	fenced    atomic.Bool  // the lease expired: frames are refused
	lastBeat  atomic.Int64 // slots.now of the last heartbeat (lease renewal)
}

// errConnClosed is a frame for an agent connection that is gone.
var errConnClosed = errors.New("agent connection closed")

func (c *agentConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.conn.Close()
	})
}

// finish sends shutdown and closes the connection once the writer has
// flushed it (Stop).
func (c *agentConn) finish() {
	if c.rec == nil {
		c.close()
		return
	}
	c.send(frame{kind: kindShutdown})
	c.quitOnce.Do(func() { close(c.quit) })
}

// send queues f without blocking: an agent whose outbox is full is too
// slow, and is dropped (handled as lost).
func (c *agentConn) send(f frame) error {
	f.epoch = c.epoch
	b := appendFrame(nil, f)
	select {
	case <-c.done:
		return errConnClosed
	default:
	}
	select {
	case c.out <- b:
		return nil
	default:
		c.s.log.Warn("agent too slow (outbox full): dropping its connection", "host", c.host)
		c.close()
		return fmt.Errorf("agent %s: outbox full", c.host)
	}
}

func (c *agentConn) sendJSON(f frame, v any) error {
	f.payload, _ = json.Marshal(v)
	return c.send(f)
}

func (c *agentConn) sendError(msg string) {
	c.s.log.Warn("agents: refused a frame", "host", c.host, "error", msg)
	c.sendJSON(frame{kind: kindError}, errorMsg{Error: msg})
}

// refuse answers a hello with refused and closes (the handshake's writer).
func (c *agentConn) refuse(msg string) { c.refuseWith(errorMsg{Error: msg}) }

// refuseWith refuses the connection's hello with m.
func (c *agentConn) refuseWith(m errorMsg) {
	c.s.log.Warn("agents: connection refused", "remote", c.conn.RemoteAddr().String(), "error", m.Error)
	p, _ := json.Marshal(m)
	c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	c.conn.Write(appendFrame(nil, frame{kind: kindRefused, payload: p}))
}

func (c *agentConn) writeLoop() {
	w := bufio.NewWriterSize(c.conn, 64<<10)
	write := func(b []byte) bool {
		w.Write(b)
		for {
			select {
			case b := <-c.out:
				w.Write(b)
			default:
				return w.Flush() == nil
			}
		}
	}
	for {
		select {
		case b := <-c.out:
			if !write(b) {
				c.close()
				return
			}
		case <-c.quit:
			select {
			case b := <-c.out:
				write(b)
			default:
			}
			c.close()
			return
		case <-c.done:
			return
		}
	}
}

// readLoop handles the agent's frames until the connection fails.
func (c *agentConn) readLoop(fr *frameReader) error {
	s := c.s
	for {
		f, err := fr.next()
		if err != nil {
			if errors.Is(err, ErrProtocol) {
				s.log.Warn("agents: malformed frame; closing the connection", "host", c.host, "err", err)
			}
			return err
		}
		if c.fenced.Load() || f.epoch != c.epoch {
			s.fencedFrames.Add(1)
			s.log.Warn("agents: refused a frame of a fenced connection", "host", c.host, "kind", f.kind, "epoch", f.epoch)
			c.sendJSON(frame{kind: kindFencedMsg}, errorMsg{Error: fmt.Sprintf("epoch %d is fenced (lease expired); reconnect", f.epoch)})
			continue
		}
		switch f.kind {
		case kindHeartbeat:
			c.lastBeat.Store(s.now())
			c.send(frame{kind: kindAck})
		case kindKernelUp:
			var ki kernelInfo
			if err := json.Unmarshal(f.payload, &ki); err != nil {
				return fmt.Errorf("%w: kernelUp: %v", ErrProtocol, err)
			}
			s.kernelUp(c, ki)
		case kindOut, kindErr, kindProg, kindRes, kindFail:
			k, known := s.kernelFor(c, f.kernel, f.boot)
			if !known {
				c.sendError(fmt.Sprintf("%s frame for unknown kernel index %d (the agent has %d kernels)", f.kind, f.kernel, len(c.rec.slots)))
				continue
			}
			if k == nil {
				continue // a kernel start that is gone: its late frames are dropped
			}
			switch f.kind {
			case kindOut:
				k.DeliverOutput(f.id, kernel.Stdout, f.payload)
			case kindErr:
				k.DeliverOutput(f.id, kernel.Stderr, f.payload)
			case kindProg:
				k.DeliverProgress(f.id, f.payload)
			case kindRes:
				k.DeliverResult(f.id, f.payload)
			case kindFail:
				var m failMsg
				if err := json.Unmarshal(f.payload, &m); err != nil {
					return fmt.Errorf("%w: fail: %v", ErrProtocol, err)
				}
				k.EndRemote(failError(k, c.host, m))
			}
		default:
			return fmt.Errorf("%w: unexpected %s frame from an agent", ErrProtocol, f.kind)
		}
	}
}

// failError is the end of a remote kernel whose request failed on its
// agent, as a local kernel's failure would read.
func failError(k *kernel.Kernel, host string, m failMsg) error {
	switch {
	case m.NotSent:
		return kernel.NotSent(fmt.Errorf("kernel %s on agent %s: %w: %s", k.ID(), host, kernel.ErrStopped, m.Message))
	case m.Restarted:
		return fmt.Errorf("kernel %s on agent %s: %w: %s", k.ID(), host, kernel.ErrKernelRestarted, m.Message)
	case m.Exit != nil:
		return &kernel.ExitError{KernelID: m.Exit.KernelID, PID: m.Exit.PID, Code: m.Exit.Code, Signal: syscall.Signal(m.Exit.Signal),
			Killed: m.Exit.Killed, Stderr: m.Exit.Stderr, LogPath: host + ":" + m.Exit.LogPath}
	case m.Stopped:
		return fmt.Errorf("kernel %s on agent %s: %w: %s", k.ID(), host, kernel.ErrStopped, m.Message)
	}
	return fmt.Errorf("kernel %s on agent %s: %w: %s", k.ID(), host, kernel.ErrKernelRestarted, m.Message)
}

// remoteCtl is a remote kernel's kernel.RemoteControl: frames to its
// agent's connection. It never blocks (agentConn.send).
type remoteCtl struct {
	c     *agentConn
	index uint16
	boot  uint32
}

func (r *remoteCtl) Send(id uint64, payload []byte) error {
	return r.c.send(frame{kind: kindReq, kernel: r.index, boot: r.boot, id: id, payload: payload})
}

func (r *remoteCtl) Interrupt(id uint64) {
	r.c.send(frame{kind: kindInterrupt, kernel: r.index, boot: r.boot, id: id})
}

func (r *remoteCtl) StopAtBoundary(id uint64) {
	r.c.send(frame{kind: kindStopAt, kernel: r.index, boot: r.boot, id: id})
}

func (r *remoteCtl) Abandon(reason string) {}
