package agent

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripple-run/ripple/kernel"
)

// Config describes a runtime agent.
type Config struct {
	// Coordinator is the coordinator's agents address (host:port).
	Coordinator string
	// Token is the agent token the coordinator expects.
	Token string
	// Kernels is the number of kernels the agent owns (default 1).
	Kernels int
	// Python runs the kernels; Root is their working directory.
	Python kernel.Interpreter
	Root   string
	// Fingerprint pins the coordinator's certificate ("sha256:HEX"); CAFile
	// verifies it against a CA instead. One of them is required unless the
	// coordinator is on loopback; ForceTLS uses TLS on loopback too.
	Fingerprint string
	CAFile      string
	ForceTLS    bool
	// ID is the agent id, locked for this process (idlock.go); default:
	// kept in ROOT/.ripple/agent-id-HOST (-2, -3, ... when that one is
	// held by another agent of the same host and root).
	ID string
	// Host, Launcher and JobID describe the agent in runtime/status;
	// defaults: the host name, "manual", $SLURM_JOB_ID.
	Host, Launcher, JobID string
	// ReconnectGrace is how long the agent keeps its kernels while it
	// cannot reach the coordinator; then it stops them and Run returns.
	// Default 60 s.
	ReconnectGrace time.Duration
	// NoSpare turns off the pool's warm spare kernel.
	NoSpare bool
	// InterruptTimeout: see kernel.Config (default 2 s).
	InterruptTimeout time.Duration
	// Preload: modules every kernel imports at start (kernel.Config).
	Preload []string
	Log     *slog.Logger
}

// idInUseWait is how long an agent whose id the coordinator says is in
// use keeps trying before it gives up.
const idInUseWait = 5 * time.Second

// Agent is a runtime agent: it owns a kernel.Pool on its host and serves
// its kernels to one coordinator over one connection (PROTOCOL.md).
//
// Goroutines: Run owns them all. The pool's (kernel supervision), and per
// connection a session: its reader, its writer, its heartbeat and one
// goroutine per relayed request. A session ends with its connection;
// Run then reconnects with backoff until ReconnectGrace has passed.
type Agent struct {
	cfg   Config
	tls   *tls.Config
	runID string
	log   *slog.Logger
	pool  *kernel.Pool

	boots atomic.Uint32 // boot numbers of kernel starts
	// idLock holds the agent's id for this process (idlock.go) from New
	// until Run returns.
	idLock *idLock

	mu      sync.Mutex
	kernels []bootedKernel // guarded by mu: index -> its current kernel
	sess    *session       // guarded by mu: the live session, nil between connections
	epoch   uint32         // guarded by mu: the last epoch a coordinator gave
}

// bootedKernel is one start of a kernel of the pool.
type bootedKernel struct {
	boot uint32
	k    *kernel.Kernel
}

// New checks cfg and returns an agent; Run starts it.
func New(cfg Config) (*Agent, error) {
	if cfg.Coordinator == "" {
		return nil, errors.New("agent: no coordinator address")
	}
	if cfg.Token == "" {
		return nil, errors.New("agent: no agent token")
	}
	if cfg.Kernels <= 0 {
		cfg.Kernels = 1
	}
	if cfg.Kernels > 1<<15 {
		return nil, fmt.Errorf("agent: %d kernels is too many", cfg.Kernels)
	}
	if cfg.ReconnectGrace <= 0 {
		cfg.ReconnectGrace = 60 * time.Second
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.Launcher == "" {
		cfg.Launcher = "manual"
	}
	if cfg.JobID == "" {
		cfg.JobID = os.Getenv("SLURM_JOB_ID")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	tc, err := clientTLS(cfg.Coordinator, cfg.Fingerprint, cfg.CAFile, cfg.ForceTLS)
	if err != nil {
		return nil, err
	}
	lock, err := lockAgentID(cfg.Root, cfg.Host, cfg.ID)
	if err != nil {
		return nil, err
	}
	cfg.ID = lock.id
	a := &Agent{cfg: cfg, tls: tc, runID: randomHex(8), log: cfg.Log.With("agent", cfg.ID),
		kernels: make([]bootedKernel, cfg.Kernels), idLock: lock}
	a.pool = kernel.NewPool(kernel.PoolConfig{
		Kernel: kernel.Config{Python: cfg.Python, Root: cfg.Root, ID: "a", InterruptTimeout: cfg.InterruptTimeout, Preload: cfg.Preload,
			Env: []string{"RIPPLE_VALUES_DB=" + journalPath(cfg.Root, cfg.Host, cfg.Coordinator)}},
		Size:      cfg.Kernels,
		NoSpare:   cfg.NoSpare,
		OnReady:   a.kernelReady,
		OnRestart: a.kernelRestarted,
	})
	return a, nil
}

// ID returns the agent's id.
func (a *Agent) ID() string { return a.cfg.ID }

// Run starts the kernels, connects and serves the coordinator until ctx
// ends (nil), the coordinator says shutdown (nil), the coordinator refuses
// the agent (ErrRefused: a wrong token) or it stays unreachable for
// ReconnectGrace. The kernels are stopped before it returns.
func (a *Agent) Run(ctx context.Context) error {
	defer a.idLock.release()
	if err := a.pool.Start(ctx); err != nil {
		return fmt.Errorf("agent: start kernels: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		a.pool.Stop(sctx)
	}()
	lastSeen := time.Now()
	delay := 50 * time.Millisecond
	var inUseSince time.Time // the first of a run of ErrIDInUse refusals
	for {
		res := a.connect(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case res.shutdown:
			a.log.Info("coordinator said shutdown")
			return nil
		case errors.Is(res.err, ErrIDInUse):
			// Our own previous connection may be one the coordinator has
			// not yet seen die (it lets go after a few silent heartbeats):
			// try again for a while, then give up with the refusal.
			if inUseSince.IsZero() {
				inUseSince = time.Now()
			}
			if time.Since(inUseSince) > idInUseWait {
				return res.err
			}
		case errors.Is(res.err, ErrRefused):
			return res.err
		default:
			inUseSince = time.Time{}
		}
		if res.welcomed {
			lastSeen, delay = time.Now(), 50*time.Millisecond
		}
		if time.Since(lastSeen) > a.cfg.ReconnectGrace {
			return fmt.Errorf("agent: coordinator %s unreachable for %v (last error: %v); kernels stopped", a.cfg.Coordinator, a.cfg.ReconnectGrace, res.err)
		}
		a.log.Warn("disconnected; reconnecting", "err", res.err, "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

type sessionEnd struct {
	err      error
	welcomed bool
	shutdown bool
}

// connect runs one session: dial, hello, welcome, serve until it ends.
func (a *Agent) connect(ctx context.Context) sessionEnd {
	d := net.Dialer{Timeout: 5 * time.Second}
	var conn net.Conn
	var err error
	if a.tls != nil {
		td := tls.Dialer{NetDialer: &d, Config: a.tls}
		conn, err = td.DialContext(ctx, "tcp", a.cfg.Coordinator)
	} else {
		conn, err = d.DialContext(ctx, "tcp", a.cfg.Coordinator)
	}
	if err != nil {
		return sessionEnd{err: fmt.Errorf("dial coordinator %s: %w", a.cfg.Coordinator, err)}
	}
	s := &session{a: a, conn: conn, fr: newFrameReader(conn), out: make(chan []byte, 1024),
		done: make(chan struct{}), relays: make(map[relayKey]*relay), clock0: time.Now()}
	defer s.close()
	w, err := s.handshake(ctx)
	if err != nil {
		return sessionEnd{err: err}
	}
	s.epoch = w.Epoch
	lease := time.Duration(w.LeaseMs) * time.Millisecond
	beat := time.Duration(w.HeartbeatMs) * time.Millisecond
	s.lastAck.Store(int64(time.Since(s.clock0)))
	a.log.Info("connected", "coordinator", a.cfg.Coordinator, "epoch", w.Epoch, "slots", w.Slots)

	a.mu.Lock()
	a.sess = s
	a.epoch = w.Epoch
	// Kernels that became ready between hello and now.
	var late []kernelInfo
	for i, bk := range a.kernels {
		if bk.k != nil && bk.boot != s.announced[i] {
			late = append(late, kernelInfo{Index: i, Boot: bk.boot, ID: bk.k.ID(), PID: bk.k.PID()})
		}
	}
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.sess == s {
			a.sess = nil
		}
		a.mu.Unlock()
	}()
	for _, ki := range late {
		s.sendJSON(frame{kind: kindKernelUp, kernel: uint16(ki.Index), boot: ki.Boot}, ki)
	}

	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.writeLoop() }()
	go func() { defer s.wg.Done(); s.heartbeat(beat, lease) }()
	err = s.readLoop(ctx)
	return sessionEnd{err: err, welcomed: true, shutdown: s.shutdown.Load()}
}

// kernelReady is the pool's OnReady: it records the kernel, and a live
// session announces a first start (replacements are announced by
// kernelRestarted, which knows why).
func (a *Agent) kernelReady(ctx context.Context, slot int, k *kernel.Kernel) error {
	boot := a.boots.Add(1)
	a.mu.Lock()
	first := a.kernels[slot].k == nil
	a.kernels[slot] = bootedKernel{boot: boot, k: k}
	s := a.sess
	a.mu.Unlock()
	if first && s != nil {
		s.sendJSON(frame{kind: kindKernelUp, kernel: uint16(slot), boot: boot},
			kernelInfo{Index: slot, Boot: boot, ID: k.ID(), PID: k.PID(), Python: k.Info().Python})
	}
	return nil
}

// kernelRestarted is the pool's OnRestart: the coordinator learns of the
// replacement and why.
func (a *Agent) kernelRestarted(ev kernel.RestartEvent) {
	a.mu.Lock()
	bk := a.kernels[ev.Slot]
	s := a.sess
	a.mu.Unlock()
	a.log.Info("kernel replaced", "index", ev.Slot, "old", ev.OldKernelID, "new", ev.NewKernelID, "reason", ev.Reason)
	if s != nil && bk.k != nil {
		s.sendJSON(frame{kind: kindKernelUp, kernel: uint16(ev.Slot), boot: bk.boot},
			kernelInfo{Index: ev.Slot, Boot: bk.boot, ID: bk.k.ID(), PID: bk.k.PID(), Reason: ev.Reason, Died: ev.Err != nil})
	}
}

// kernelAt returns kernel index's current start if it is boot.
func (a *Agent) kernelAt(index int, boot uint32) *kernel.Kernel {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index < 0 || index >= len(a.kernels) || a.kernels[index].boot != boot {
		return nil
	}
	return a.kernels[index].k
}

// session is one connection to the coordinator.
//
// The reader goroutine owns fr; the writer owns the connection's writes
// (everything else queues on out). relays are guarded by mu.
type session struct {
	a         *Agent
	conn      net.Conn
	fr        *frameReader
	epoch     uint32
	announced []uint32 // boot of each kernel named in hello, 0 if none (handshake, then read-only)

	out       chan []byte
	done      chan struct{}
	closeOnce sync.Once
	lastAck   atomic.Int64 // the last heartbeat ack: monotonic ns since clock0
	clock0    time.Time
	shutdown  atomic.Bool
	wg        sync.WaitGroup // writer, heartbeat, relays

	mu     sync.Mutex
	relays map[relayKey]*relay // guarded by mu: requests in flight

}

// relayKey names a request in flight: request ids are per kernel (each
// of the coordinator's kernels numbers its own).
type relayKey struct {
	kernel uint16
	id     uint64
}

// relay is one request the agent runs for the coordinator.
type relay struct {
	k      *kernel.Kernel
	cancel context.CancelFunc
}

func (s *session) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.conn.Close()
	})
	s.mu.Lock()
	for _, r := range s.relays {
		r.cancel() // interrupts what the kernels run for this session
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// handshake sends hello and reads welcome (or refused).
func (s *session) handshake(ctx context.Context) (welcome, error) {
	a := s.a
	h := hello{Token: a.cfg.Token, AgentID: a.cfg.ID, RunID: a.runID, Host: a.cfg.Host, Launcher: a.cfg.Launcher,
		JobID: a.cfg.JobID, Kernels: a.cfg.Kernels, Python: a.cfg.Python.Version, Protocol: ProtocolVersion, Root: a.cfg.Root}
	s.announced = make([]uint32, a.cfg.Kernels)
	a.mu.Lock()
	h.LastEpoch = a.epoch
	for i, bk := range a.kernels {
		if bk.k != nil {
			h.Running = append(h.Running, kernelInfo{Index: i, Boot: bk.boot, ID: bk.k.ID(), PID: bk.k.PID()})
			s.announced[i] = bk.boot
		}
	}
	a.mu.Unlock()
	p, _ := json.Marshal(h)
	s.conn.SetDeadline(time.Now().Add(10 * time.Second))
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := s.conn.Write(appendFrame(nil, frame{kind: kindHello, payload: p})); err != nil {
		return welcome{}, fmt.Errorf("send hello: %w", err)
	}
	f, err := s.fr.next()
	if err != nil {
		return welcome{}, fmt.Errorf("read welcome: %w", err)
	}
	s.conn.SetDeadline(time.Time{})
	switch f.kind {
	case kindRefused:
		var m errorMsg
		json.Unmarshal(f.payload, &m)
		if m.IDInUse {
			return welcome{}, fmt.Errorf("%w: %w: %s", ErrRefused, ErrIDInUse, m.Error)
		}
		return welcome{}, fmt.Errorf("%w: %s", ErrRefused, m.Error)
	case kindWelcome:
		var w welcome
		if err := json.Unmarshal(f.payload, &w); err != nil {
			return welcome{}, fmt.Errorf("%w: welcome: %v", ErrProtocol, err)
		}
		if w.LeaseMs <= 0 || w.HeartbeatMs <= 0 {
			return welcome{}, fmt.Errorf("%w: welcome without lease", ErrProtocol)
		}
		return w, nil
	}
	return welcome{}, fmt.Errorf("%w: %s frame instead of welcome", ErrProtocol, f.kind)
}

// send queues an encoded frame; it waits while the outbox is full (the
// back-pressure reaches the kernel's output) and drops it once the
// session ended.
func (s *session) send(f frame) {
	f.epoch = s.epoch
	b := appendFrame(nil, f)
	select {
	case s.out <- b:
	case <-s.done:
	}
}

func (s *session) sendJSON(f frame, v any) {
	f.payload, _ = json.Marshal(v)
	s.send(f)
}

func (s *session) writeLoop() {
	w := bufio.NewWriterSize(s.conn, 64<<10)
	for {
		select {
		case b := <-s.out:
			w.Write(b)
			for more := true; more; {
				select {
				case b := <-s.out:
					w.Write(b)
				default:
					more = false
				}
			}
			if err := w.Flush(); err != nil {
				s.closeConn()
				return
			}
		case <-s.done:
			return
		}
	}
}

func (s *session) closeConn() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.conn.Close()
	})
}

// heartbeat sends one every beat; without an ack for a lease the agent
// must assume it is fenced and drops the connection (PROTOCOL.md).
func (s *session) heartbeat(beat, lease time.Duration) {
	t := time.NewTicker(beat)
	defer t.Stop()
	assumed := false
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		var hb heartbeatMsg
		for _, st := range s.a.pool.Status() {
			if st.Slot >= 0 {
				hb.Kernels = append(hb.Kernels, kernelState{Index: st.Slot, ID: st.KernelID, State: st.State})
			}
		}
		s.sendJSON(frame{kind: kindHeartbeat}, hb)
		// The mirror of the coordinator's lease (PROTOCOL.md): without an
		// ack for a lease the agent must assume it is fenced: it
		// interrupts what its kernels run for this session and waits for
		// the coordinator's fenced answer to the heartbeat just sent
		// (which ends the session); a coordinator that says nothing for
		// another lease is given up.
		age := time.Since(s.clock0) - time.Duration(s.lastAck.Load())
		if age > lease+beat && !assumed {
			assumed = true
			s.a.log.Warn("no heartbeat acknowledged for a lease: assuming fenced")
			s.mu.Lock()
			for _, r := range s.relays {
				r.cancel()
			}
			s.mu.Unlock()
		}
		if age > 2*lease+beat {
			s.a.log.Warn("the coordinator is silent: dropping the connection")
			s.closeConn()
			return
		}
	}
}

// readLoop serves the coordinator's frames until the connection ends.
func (s *session) readLoop(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.closeConn)
	defer stop()
	for {
		f, err := s.fr.next()
		if err != nil {
			s.closeConn()
			return err
		}
		switch f.kind {
		case kindAck:
			s.lastAck.Store(int64(time.Since(s.clock0)))
		case kindReq:
			s.startRelay(f)
		case kindInterrupt:
			s.mu.Lock()
			if r := s.relays[relayKey{f.kernel, f.id}]; r != nil {
				r.cancel()
			}
			s.mu.Unlock()
		case kindStopAt:
			s.mu.Lock()
			if r := s.relays[relayKey{f.kernel, f.id}]; r != nil {
				r.k.StopAtBoundary()
			}
			s.mu.Unlock()
		case kindRestart:
			var m restartMsg
			json.Unmarshal(f.payload, &m)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				rctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if err := s.a.pool.Restart(rctx, int(f.kernel), m.Reason); err != nil {
					s.a.log.Warn("restart", "index", f.kernel, "err", err)
				}
			}()
		case kindShutdown:
			s.shutdown.Store(true)
			s.closeConn()
			return nil
		case kindFencedMsg, kindError:
			var m errorMsg
			json.Unmarshal(f.payload, &m)
			s.a.log.Warn("coordinator refused a frame", "kind", f.kind, "error", m.Error)
			if f.kind == kindFencedMsg {
				s.closeConn()
				return fmt.Errorf("%w: %s", ErrFenced, m.Error)
			}
		default:
			s.closeConn()
			return fmt.Errorf("%w: unexpected %s frame from the coordinator", ErrProtocol, f.kind)
		}
	}
}

// startRelay runs request f on its kernel in a goroutine of its own.
func (s *session) startRelay(f frame) {
	k := s.a.kernelAt(int(f.kernel), f.boot)
	if k == nil {
		s.sendJSON(frame{kind: kindFail, kernel: f.kernel, boot: f.boot, id: f.id},
			failMsg{NotSent: true, Message: fmt.Sprintf("kernel %d (boot %d) is gone", f.kernel, f.boot)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	payload := append([]byte(nil), f.payload...)
	s.mu.Lock()
	key := relayKey{f.kernel, f.id}
	s.relays[key] = &relay{k: k, cancel: cancel}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.relays, key)
			s.mu.Unlock()
			cancel()
		}()
		hdr := frame{kernel: f.kernel, boot: f.boot, id: f.id}
		res, err := k.CallRaw(ctx, payload, &relaySink{s: s, hdr: hdr})
		if err == nil {
			hdr.kind, hdr.payload = kindRes, res
			s.send(hdr)
			return
		}
		hdr.kind = kindFail
		var exit *kernel.ExitError
		switch {
		case kernel.WasNotSent(err):
			s.sendJSON(hdr, failMsg{NotSent: true, Message: err.Error()})
		case errors.Is(err, kernel.ErrKernelRestarted):
			s.sendJSON(hdr, failMsg{Restarted: true, Message: err.Error()})
		case errors.As(err, &exit):
			s.sendJSON(hdr, failMsg{Message: err.Error(), Exit: &exitInfo{KernelID: exit.KernelID, PID: exit.PID, Code: exit.Code,
				Signal: int(exit.Signal), Killed: exit.Killed, Stderr: exit.Stderr, LogPath: exit.LogPath}})
		case errors.Is(err, kernel.ErrInterrupted):
			// Interrupted before it reached the kernel: the answer an
			// interrupted request gets.
			hdr.kind, hdr.payload = kindRes, []byte(`{"status":"int"}`)
			s.send(hdr)
		case errors.Is(err, kernel.ErrStopped):
			s.sendJSON(hdr, failMsg{Stopped: true, Message: err.Error()})
		default:
			s.sendJSON(hdr, failMsg{Message: err.Error()})
		}
	}()
}

// relaySink forwards a relayed request's output and progress, and the
// late output of its threads, under the coordinator's request id.
type relaySink struct {
	s   *session
	hdr frame
}

func (r *relaySink) Output(st kernel.Stream, p []byte) {
	f := r.hdr
	f.kind = kindOut
	if st == kernel.Stderr {
		f.kind = kindErr
	}
	f.payload = p
	r.s.send(f) // appendFrame copies p
}

func (r *relaySink) LateOutput(st kernel.Stream, p []byte) { r.Output(st, p) }

func (r *relaySink) Progress(ev json.RawMessage) {
	f := r.hdr
	f.kind, f.payload = kindProg, ev
	r.s.send(f)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
