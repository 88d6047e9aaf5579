package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// CoordinatorConfig describes the agents launcher of a coordinator.
type CoordinatorConfig struct {
	// Listen is the address agents connect to (--agents-listen).
	Listen string
	// Token is the agent token (not the IDE clients' token).
	Token string
	// Slots is how many agent kernels the coordinator can serve at once
	// (engine slots reserved for agents); default 16.
	Slots int
	// Local kernels (children of this process, a kernel.Pool) serve slots
	// 0..Local-1 beside the agents' kernels.
	Local int
	// TLS forces TLS on a loopback address (it is always on otherwise).
	// CertFile and KeyFile name the certificate; default a self-signed one.
	TLS               bool
	CertFile, KeyFile string
	// Lease is how long an agent stays trusted without a heartbeat
	// (default 10 s); Heartbeat how often it sends one (default 1 s).
	Lease, Heartbeat time.Duration
	// Grace is how long a lost agent's contexts wait for it to come back
	// before they move to other kernels (default 60 s).
	Grace time.Duration
	// StartGrace, if positive, keeps the agent slots open from Start
	// until the first agent connects (at most this long): contexts the
	// state log restores at the start of ripple serve are assigned to
	// them and their runs wait, as for a suspended agent, instead of
	// finding every slot closed (no agent has reconnected yet). Once an
	// agent is there, the slots it does not serve close and the waiting
	// runs move to its kernels. ripple serve sets it to Grace; ripple run
	// (which waits for its kernels first) leaves it 0. Without effect
	// when Local kernels serve beside the agents: contexts go to those.
	StartGrace time.Duration
	// HandshakeTimeout bounds hello (default 5 s).
	HandshakeTimeout time.Duration
	// Outbox is the number of frames queued for one agent; an agent whose
	// outbox fills up is too slow and is dropped (default 4096).
	Outbox int
	// Jobs, with a Scheduler, makes this the slurm launcher: the agents
	// are batch jobs the coordinator submits (jobs.go). Slots is then the
	// most kernels it submits (--max-kernels).
	Jobs JobsConfig
	Log  *slog.Logger
}

// Coordinator is the agents launcher (engine.Launcher): its engine slots
// are served by the kernels of runtime agents that connect to it, plus
// Local kernels of its own. Listen opens the listener at once (so Addr and
// Fingerprint are known before the engine starts); the engine's Start and
// Stop of its Kernels start and stop everything else.
type Coordinator struct {
	cfg         CoordinatorConfig
	ln          net.Listener
	tls         *tls.Config
	fingerprint string
	log         *slog.Logger

	mu    sync.Mutex
	slots *slots // guarded by mu: set by Kernels
}

// Listen checks cfg and opens the agents' listener.
func Listen(cfg CoordinatorConfig) (*Coordinator, error) {
	if cfg.Token == "" {
		return nil, errors.New("agents: no agent token")
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 16
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 10 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.Heartbeat >= cfg.Lease {
		return nil, fmt.Errorf("agents: heartbeat %v must be shorter than the lease %v", cfg.Heartbeat, cfg.Lease)
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 60 * time.Second
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 5 * time.Second
	}
	if cfg.Outbox <= 0 {
		cfg.Outbox = 4096
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Jobs.Scheduler != nil {
		cfg.Jobs.withDefaults()
		if len(cfg.Jobs.Agent) == 0 {
			return nil, errors.New("agents: a scheduler without the agent's command line (JobsConfig.Agent)")
		}
	}
	c := &Coordinator{cfg: cfg, log: cfg.Log.With("component", "agents")}
	if cfg.TLS || cfg.CertFile != "" || !IsLoopback(cfg.Listen) {
		host, _, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("--agents-listen %q: %w", cfg.Listen, err)
		}
		if c.tls, c.fingerprint, err = serverTLS(cfg.CertFile, cfg.KeyFile, host); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("--agents-listen %s: %w", cfg.Listen, err)
	}
	c.ln = ln
	return c, nil
}

// Addr is the address agents connect to.
func (c *Coordinator) Addr() string { return c.ln.Addr().String() }

// Fingerprint is the pin of the coordinator's certificate for
// --coordinator-fingerprint; "" without TLS.
func (c *Coordinator) Fingerprint() string { return c.fingerprint }

// Size is the number of engine slots: the local kernels and the agents'.
// The engine's Config.Kernels must be this.
func (c *Coordinator) Size() int { return c.cfg.Local + c.cfg.Slots }

// Name is protocol.LauncherAgents, or the Scheduler's name
// (protocol.LauncherSlurm) when the coordinator submits its agents.
func (c *Coordinator) Name() string {
	if c.cfg.Jobs.Scheduler != nil {
		return c.cfg.Jobs.Scheduler.Name()
	}
	return protocol.LauncherAgents
}

// Kernels returns the engine's slots: 0..Local-1 local, then the agents'.
// Call it once.
func (c *Coordinator) Kernels(cfg kernel.PoolConfig) engine.Kernels {
	s := &slots{c: c, cfg: cfg, nLocal: c.cfg.Local, log: c.log, agents: make(map[string]*agentRec),
		changed: make(chan struct{}), conns: make(map[*agentConn]bool), nudge: make(chan struct{}, 1)}
	if c.cfg.Local > 0 {
		lc := cfg
		lc.Size = c.cfg.Local
		s.local = kernel.NewPool(lc)
	}
	for range c.cfg.Slots {
		s.slot = append(s.slot, &agentSlot{})
	}
	s.bg, s.bgStop = context.WithCancel(context.Background())
	s.clock0 = time.Now()
	c.mu.Lock()
	c.slots = s
	c.mu.Unlock()
	return s
}

// WaitKernels waits until at least n agent kernels are ready (a batch run
// waits for its agents before it creates contexts); it fails when ctx
// ends first, naming how many are ready, or when the Kernels stop. With
// a Scheduler it submits the jobs for them, and fails (ErrJobFailed) if
// one cannot be submitted or ends before its agent connects.
func (c *Coordinator) WaitKernels(ctx context.Context, n int) error {
	c.mu.Lock()
	s := c.slots
	c.mu.Unlock()
	if s == nil {
		return errors.New("agents: WaitKernels before the engine started the kernels")
	}
	s.mu.Lock()
	errGen := s.jobErrGen
	if c.cfg.Jobs.Scheduler != nil {
		s.minKernels = max(s.minKernels, n)
		s.nudgeJobs()
	}
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if s.jobErrGen != errGen {
			err := s.jobErr
			s.mu.Unlock()
			return err
		}
		ready := 0
		for _, st := range s.slot {
			if st.owner != nil && st.owner.conn != nil && st.k != nil && st.k.Err() == nil {
				ready++
			}
		}
		stopped, ch := s.stopped, s.changed
		s.mu.Unlock()
		switch {
		case ready >= n:
			return nil
		case stopped:
			return kernel.ErrPoolStopped
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d agent kernels (%d ready): %w", n, ready, context.Cause(ctx))
		}
	}
}

// Close closes the listener of a coordinator whose Kernels never started
// (Stop of the Kernels closes it otherwise).
func (c *Coordinator) Close() { c.ln.Close() }

// FencedFrames counts frames refused because their lease had expired.
func (c *Coordinator) FencedFrames() int64 {
	c.mu.Lock()
	s := c.slots
	c.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.fencedFrames.Load()
}

// DropAgent closes the connection of agent id as a network failure
// would (tests and operators); its kernels keep running there.
func (c *Coordinator) DropAgent(id string) bool {
	c.mu.Lock()
	s := c.slots
	c.mu.Unlock()
	if s == nil {
		return false
	}
	s.mu.Lock()
	rec := s.agents[id]
	var conn *agentConn
	if rec != nil {
		conn = rec.conn
	}
	s.mu.Unlock()
	if conn == nil {
		return false
	}
	conn.close()
	return true
}
