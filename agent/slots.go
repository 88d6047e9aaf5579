package agent

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// slots implements engine.Kernels for the Coordinator.
//
// Locking: mu guards every agentSlot, agentRec and the maps; kernels are
// ended (EndRemote) and engine callbacks (OnReady, OnRestart) run with mu
// released. changed is closed and replaced under mu at every change that
// a waiter of Kernel or Restart may be waiting for.
//
// Goroutines, all counted by wg and ended by Stop: the accept loop, the
// lease checker, the job loop (with a Scheduler: jobs.go), per connection
// its reader (serveConn) and writer, per attached kernel a watcher that
// wakes waiters when it ends, and the OnReady of each new kernel.
type slots struct {
	c      *Coordinator
	cfg    kernel.PoolConfig
	local  *kernel.Pool // slots 0..nLocal-1; nil when nLocal is 0
	nLocal int
	log    *slog.Logger

	bg     context.Context // per-owner context of OnReady calls; Stop cancels it
	bgStop context.CancelFunc
	wg     sync.WaitGroup

	fencedFrames atomic.Int64
	// clock0 is the origin of the lease clock: lease times are
	// monotonic nanoseconds since it (now).
	clock0 time.Time

	mu      sync.Mutex
	started bool
	stopped bool
	slot    []*agentSlot         // guarded by mu: slot nLocal+i
	agents  map[string]*agentRec // guarded by mu: by agent id
	order   []string             // guarded by mu: agent ids in first-connection order
	changed chan struct{}        // guarded by mu
	conns   map[*agentConn]bool  // guarded by mu: every open connection

	// With a Scheduler (jobs.go). nudge wakes the job loop; coordID and
	// advertise are set by Start; pollErr is the job loop's own.
	nudge         chan struct{}
	coordID       string
	advertise     string
	pollErr       string
	countContexts func(slot int) int // guarded by mu: the engine's (CountContexts)
	jobSeq        int                // guarded by mu: the last job's number
	minKernels    int                // guarded by mu: kernels WaitKernels wants
	jobErr        error              // guarded by mu: the last job that failed
	jobErrGen     uint64             // guarded by mu: bumped with jobErr
	// startOpen keeps the slots no agent serves open from Start until the
	// first agent registers or startTimer fires (CoordinatorConfig.
	// StartGrace). Guarded by mu.
	startOpen  bool
	startTimer *time.Timer // guarded by mu
	// waitReport is the engine's ReportWaits callback (waits.go); nil
	// until it is given. Guarded by mu, called with mu released.
	waitReport func(slot int, detail string)
}

// agentSlot is one engine slot served by an agent kernel. Guarded by
// slots.mu.
type agentSlot struct {
	owner    *agentRec      // nil: free (never served, or its agent was lost)
	index    int            // the kernel's index on owner
	retired  bool           // closed for good by Retire
	k        *kernel.Kernel // ready and published; nil while none is
	pending  *kernel.Kernel // attached, OnReady running
	boot     uint32         // boot of k or pending
	kernelID string         // the last kernel's id (survival check on reconnect)
	pid      int
	gen      uint64 // bumped at every publish (Restart waits for it)
	// restartReason is the reason the next replacement is reported with
	// (a Restart request, or the loss of the agent).
	restartReason string
	// With a Scheduler: waiters counts the runs waiting in Call for this
	// slot's kernel (a free slot with waiters wants a job); failErr is
	// what they fail with when the job for them failed, failGen bumped
	// with it (a wait fails if failGen moved since it began). failGen is
	// kept when the slot changes hands.
	waiters int
	failGen uint64
	failErr error
}

// agentRec is one agent, kept while it is connected or suspended, and
// after it is lost (only its epoch matters then). Guarded by slots.mu.
type agentRec struct {
	id, host, launcher, jobID, runID string
	slots                            []int // slot of each kernel index; nil once lost
	epoch                            uint32
	conn                             *agentConn // the live connection; nil while suspended
	renewed                          int64      // last lease renewal (slots.now), while suspended
	grace                            *time.Timer
	lost                             bool
	job                              *jobRec // the job the coordinator submitted for it; nil for an agent that came by itself
}

// handTo gives the slot to kernel index of agent rec (nil: frees it),
// forgetting its kernel; what outlives a change of hands stays: retired,
// and the waiting runs' waiters, failGen and failErr. Under slots.mu.
func (st *agentSlot) handTo(rec *agentRec, index int) {
	*st = agentSlot{owner: rec, index: index, retired: st.retired, waiters: st.waiters, failGen: st.failGen, failErr: st.failErr}
}

// now reads the lease clock: monotonic nanoseconds since clock0.
func (s *slots) now() int64 { return int64(time.Since(s.clock0)) }

func (s *slots) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *slots) broadcast() {
	s.mu.Lock()
	s.broadcastLocked()
	s.mu.Unlock()
}

// Start starts the local kernels, the accept loop and the lease checker.
func (s *slots) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.stopped {
		s.mu.Unlock()
		return errors.New("agents: Start called twice")
	}
	s.started = true
	s.mu.Unlock()
	if s.local != nil {
		if err := s.local.Start(ctx); err != nil {
			s.c.ln.Close()
			return err
		}
	}
	if s.c.fingerprint != "" {
		s.log.Info("agents listening (TLS)", "addr", s.c.Addr(), "fingerprint", s.c.fingerprint)
	} else {
		s.log.Info("agents listening (loopback, plain TCP)", "addr", s.c.Addr())
	}
	if s.c.cfg.Jobs.Scheduler != nil {
		adv, err := s.c.cfg.Jobs.advertise(s.c.Addr())
		if err != nil {
			s.c.ln.Close()
			if s.local != nil {
				s.local.Stop(ctx)
			}
			return err
		}
		s.advertise, s.coordID = adv, randomHex(3)
		s.log.Info("submitting agents as jobs", "scheduler", s.c.cfg.Jobs.Scheduler.Name(), "dial", adv,
			"maxKernels", len(s.slot), "kernelsPerJob", s.c.cfg.Jobs.KernelsPerJob)
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.jobLoop() }()
	}
	// With local kernels beside the agents, contexts go to them meanwhile
	// (their slots are open): no slot waits for an agent.
	if g := s.c.cfg.StartGrace; g > 0 && s.nLocal == 0 {
		s.mu.Lock()
		if len(s.agents) == 0 && !s.stopped {
			s.startOpen = true
			s.startTimer = time.AfterFunc(g, s.endStartOpen)
		}
		s.mu.Unlock()
	}
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.acceptLoop() }()
	go func() { defer s.wg.Done(); s.leaseLoop() }()
	return nil
}

// endStartOpen closes the slots no agent serves once the start grace ran
// out with no agent: the runs waiting there fail (no kernel).
func (s *slots) endStartOpen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startOpen {
		s.startOpen = false
		s.log.Warn("no agent connected within the start grace: contexts waiting for one fail", "grace", s.c.cfg.StartGrace)
		s.broadcastLocked()
	}
}

// Stop tells every agent to shut down, ends the agent kernels (requests
// in flight fail with ErrStopped), stops the local kernels and waits for
// every goroutine. Idempotent.
func (s *slots) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	if s.startTimer != nil {
		s.startTimer.Stop()
	}
	var conns []*agentConn
	for c := range s.conns {
		conns = append(conns, c)
	}
	var ks []*kernel.Kernel
	for _, st := range s.slot {
		ks = appendKernels(ks, st)
	}
	for _, rec := range s.agents {
		if rec.grace != nil {
			rec.grace.Stop()
		}
	}
	s.broadcastLocked()
	s.mu.Unlock()
	s.c.ln.Close()
	for _, c := range conns {
		c.finish()
	}
	for _, k := range ks {
		k.EndRemote(fmt.Errorf("kernel %s: %w: the coordinator is stopping", k.ID(), kernel.ErrStopped))
	}
	s.bgStop()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, c := range conns {
			c.close()
		}
		<-done
	}
	if s.c.cfg.Jobs.Scheduler != nil {
		// After the job loop ended: a job it was submitting is recorded.
		// Agents told to shut down end their jobs themselves; the rest
		// (pending, or not connected) are cancelled.
		s.cancelJobs(ctx)
	}
	if s.local != nil {
		return s.local.Stop(ctx)
	}
	return nil
}

func appendKernels(ks []*kernel.Kernel, st *agentSlot) []*kernel.Kernel {
	if st.k != nil {
		ks = append(ks, st.k)
	}
	if st.pending != nil {
		ks = append(ks, st.pending)
	}
	return ks
}

// Size is the number of slots.
func (s *slots) Size() int { return s.nLocal + len(s.slot) }

func (s *slots) agentSlot(slot int) (*agentSlot, error) {
	i := slot - s.nLocal
	if i < 0 || i >= len(s.slot) {
		return nil, fmt.Errorf("agents: slot %d out of range [0, %d)", slot, s.Size())
	}
	return s.slot[i], nil
}

// Kernel returns slot's ready kernel, waiting while its kernel starts or
// restarts; ErrSlotRetired when no agent serves the slot (its contexts
// must move). While the slot's agent is suspended it fails at once
// (errAgentSuspended): the engine's compiles and drops skip the slot (a
// kernel that comes back gets OnReady again), and runs wait in Call.
func (s *slots) Kernel(ctx context.Context, slot int) (*kernel.Kernel, error) {
	if slot < s.nLocal {
		return s.local.Kernel(ctx, slot)
	}
	return s.wait(ctx, slot, true)
}

// errAgentSuspended is Kernel's error for a slot whose agent is lost
// and may come back.
var errAgentSuspended = errors.New("its agent is disconnected")

// wait waits for slot's ready kernel; failSuspended: see Kernel.
func (s *slots) wait(ctx context.Context, slot int, failSuspended bool) (*kernel.Kernel, error) {
	st, err := s.agentSlot(slot)
	if err != nil {
		return nil, err
	}
	// A run waits for a slot no agent serves while the job loop submits
	// one (onDemand): it is counted in waiters, and fails if the job for
	// it fails (failGen moves).
	demand := !failSuspended && s.onDemand()
	s.mu.Lock()
	gen := st.failGen
	if demand {
		st.waiters++
		defer func() {
			s.mu.Lock()
			st.waiters--
			s.mu.Unlock()
		}()
	}
	s.mu.Unlock()
	var said string // the wait's detail last reported (waits.go)
	for {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return nil, kernel.ErrPoolStopped
		}
		detail := ""
		if !failSuspended {
			detail = s.waitDetailLocked(st)
		}
		if demand && st.failGen != gen {
			err := st.failErr
			s.mu.Unlock()
			return nil, fmt.Errorf("slot %d: %w", slot, err)
		}
		if st.owner == nil && !st.retired && (demand || s.startOpen && !failSuspended) {
			ch := s.changed
			s.mu.Unlock()
			if demand {
				s.nudgeJobs()
			}
			s.reportWait(slot, detail, &said)
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
			continue
		}
		if st.retired || st.owner == nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: slot %d has no agent", kernel.ErrSlotRetired, slot)
		}
		if k := st.k; k != nil && k.Err() == nil {
			s.mu.Unlock()
			return k, nil
		}
		if failSuspended && st.owner.conn == nil {
			host := st.owner.host
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: slot %d: %w (agent %s)", kernel.ErrStopped, slot, errAgentSuspended, host)
		}
		ch := s.changed
		s.mu.Unlock()
		s.reportWait(slot, detail, &said)
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Call runs a request on slot's kernel; see kernel.Pool.Call.
func (s *slots) Call(ctx context.Context, slot int, method string, params any, sink kernel.Sink) (json.RawMessage, error) {
	if slot < s.nLocal {
		return s.local.Call(ctx, slot, method, params, sink)
	}
	for {
		k, err := s.wait(ctx, slot, false)
		if err != nil {
			return nil, err
		}
		raw, err := k.Call(ctx, method, params, sink)
		if kernel.WasNotSent(err) {
			continue // gone before the request left: the slot's next kernel
		}
		if err != nil && errors.Is(err, kernel.ErrStopped) && !errors.Is(err, kernel.ErrKernelRestarted) {
			s.mu.Lock()
			stopped := s.stopped
			s.mu.Unlock()
			if stopped {
				return nil, fmt.Errorf("%w: %w", kernel.ErrPoolStopped, err)
			}
			return nil, fmt.Errorf("%w: %w", kernel.ErrKernelRestarted, err)
		}
		return raw, err
	}
}

// Restart asks the slot's agent to replace its kernel and waits for the
// new one (OnRestart is told first).
func (s *slots) Restart(ctx context.Context, slot int, reason string) error {
	if slot < s.nLocal {
		return s.local.Restart(ctx, slot, reason)
	}
	st, err := s.agentSlot(slot)
	if err != nil {
		return err
	}
	if reason == "" {
		reason = "restart requested"
	}
	s.mu.Lock()
	if st.retired || st.owner == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: slot %d", kernel.ErrSlotRetired, slot)
	}
	rec, index, gen := st.owner, st.index, st.gen
	conn := rec.conn
	if conn == nil {
		s.mu.Unlock()
		return fmt.Errorf("agents: slot %d: agent %s is disconnected; its kernel cannot be restarted now", slot, rec.host)
	}
	st.restartReason = reason
	s.mu.Unlock()
	if err := conn.sendJSON(frame{kind: kindRestart, kernel: uint16(index)}, restartMsg{Reason: reason}); err != nil {
		return err
	}
	for {
		s.mu.Lock()
		if st.gen != gen {
			s.mu.Unlock()
			return nil
		}
		if s.stopped {
			s.mu.Unlock()
			return kernel.ErrPoolStopped
		}
		if st.owner != rec {
			s.mu.Unlock()
			return fmt.Errorf("%w: slot %d: agent %s lost", kernel.ErrSlotRetired, slot, rec.host)
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// StopAtBoundary asks the slot's request in flight to stop at its next
// statement boundary (relayed to the agent).
func (s *slots) StopAtBoundary(slot int) {
	if slot < s.nLocal {
		s.local.StopAtBoundary(slot)
		return
	}
	st, err := s.agentSlot(slot)
	if err != nil {
		return
	}
	s.mu.Lock()
	k := st.k
	s.mu.Unlock()
	if k != nil {
		k.StopAtBoundary()
	}
}

// Retire closes slot for good; an agent kernel serving it stays idle.
func (s *slots) Retire(slot int) error {
	if slot < s.nLocal {
		return s.local.Retire(slot)
	}
	st, err := s.agentSlot(slot)
	if err != nil {
		return err
	}
	s.mu.Lock()
	st.retired = true
	s.broadcastLocked()
	s.mu.Unlock()
	return nil
}

// Retired reports whether slot is closed: retired, or served by no agent
// (contexts are not assigned to it; those on it move).
func (s *slots) Retired(slot int) bool {
	if slot < s.nLocal {
		return s.local.Retired(slot)
	}
	st, err := s.agentSlot(slot)
	if err != nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case st.retired:
		return true
	case st.owner == nil:
		// Open: a run on it makes the job loop submit a job, or (at
		// start) waits for the first agent.
		return !s.onDemand() && !s.startOpen
	default:
		return st.owner.job != nil && st.owner.job.cancelling
	}
}

// Status reports the local kernels, then every agent slot that has an
// agent.
func (s *slots) Status() []kernel.KernelStatus {
	var out []kernel.KernelStatus
	if s.local != nil {
		out = s.local.Status()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, st := range s.slot {
		if st.owner == nil {
			continue
		}
		ks := kernel.KernelStatus{Slot: s.nLocal + i, KernelID: st.kernelID, PID: st.pid}
		switch {
		case st.owner.job != nil && !st.owner.job.connected:
			ks.State = kernel.StateStarting // its job is pending, or its agent starting
		case st.owner.conn == nil:
			ks.State = "suspended"
		case st.k != nil && st.k.Err() == nil && st.k.Busy():
			ks.State = kernel.StateBusy
		case st.k != nil && st.k.Err() == nil:
			ks.State = kernel.StateReady
		case st.kernelID == "":
			ks.State = kernel.StateStarting
		default:
			ks.State = kernel.StateRestarting
		}
		if st.retired {
			ks.State = kernel.StateStopped
		}
		out = append(out, ks)
	}
	return out
}

// SlotAgent names the agent serving slot; nil for a local kernel.
func (s *slots) SlotAgent(slot int) *protocol.AgentRef {
	if slot < s.nLocal {
		return nil
	}
	st, err := s.agentSlot(slot)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.owner == nil {
		return nil
	}
	return &protocol.AgentRef{ID: st.owner.id, Host: st.owner.host, Launcher: st.owner.launcher, JobID: st.owner.jobID}
}

// Agents lists the agents that serve slots, connected or suspended.
func (s *slots) Agents() []protocol.AgentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []protocol.AgentStatus{}
	for _, id := range s.order {
		rec := s.agents[id]
		if rec.lost {
			continue
		}
		renewed := rec.renewed
		if rec.conn != nil {
			renewed = rec.conn.lastBeat.Load()
		}
		as := protocol.AgentStatus{
			AgentRef:   protocol.AgentRef{ID: rec.id, Host: rec.host, Launcher: rec.launcher, JobID: rec.jobID},
			Kernels:    append([]int(nil), rec.slots...),
			LeaseAgeMs: time.Duration(s.now() - renewed).Milliseconds(),
		}
		if job := rec.job; job != nil {
			as.JobName, as.JobState = job.name, job.state
			if job.reason != "None" {
				as.JobReason = job.reason
			}
			if !job.connected {
				as.LeaseAgeMs = 0 // no lease yet
			}
		}
		out = append(out, as)
	}
	return out
}

var _ engine.Kernels = (*slots)(nil)
var _ engine.AgentKernels = (*slots)(nil)

func (s *slots) acceptLoop() {
	for {
		nc, err := s.c.ln.Accept()
		if err != nil {
			s.mu.Lock()
			stopped := s.stopped
			s.mu.Unlock()
			if stopped || errors.Is(err, net.ErrClosed) {
				return
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				time.Sleep(100 * time.Millisecond) // out of fds: let some close
			}
			s.log.Warn("agents: accept", "err", err)
			continue
		}
		if s.c.tls != nil {
			nc = tls.Server(nc, s.c.tls)
		}
		c := &agentConn{s: s, conn: nc, out: make(chan []byte, s.c.cfg.Outbox), done: make(chan struct{}),
			quit: make(chan struct{}), host: nc.RemoteAddr().String()}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[c] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// leaseLoop fences every connection whose lease expired.
func (s *slots) leaseLoop() {
	lease := s.c.cfg.Lease
	t := time.NewTicker(max(lease/8, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-s.bg.Done():
			return
		case <-t.C:
		}
		var expired []*agentConn
		s.mu.Lock()
		for _, rec := range s.agents {
			if c := rec.conn; c != nil && time.Duration(s.now()-c.lastBeat.Load()) > lease {
				expired = append(expired, c)
			}
		}
		s.mu.Unlock()
		for _, c := range expired {
			// Fenced: later frames of this connection are refused; the
			// connection stays open so that the agent is told so.
			c.fenced.Store(true)
			s.connLost(c, fmt.Sprintf("lease expired (no heartbeat for %v)", lease))
		}
	}
}

// serveConn runs one agent connection: hello, welcome, then its frames.
func (s *slots) serveConn(c *agentConn) {
	defer c.close()
	fr := newFrameReader(c.conn)
	fr.limit = maxHello
	c.conn.SetDeadline(time.Now().Add(s.c.cfg.HandshakeTimeout))
	f, err := fr.next()
	fr.limit = maxPayload
	if err != nil {
		s.log.Warn("agents: connection without hello", "remote", c.host, "err", err)
		return
	}
	if f.kind != kindHello {
		c.refuse(fmt.Sprintf("first frame is %s, want hello", f.kind))
		return
	}
	var h hello
	if err := json.Unmarshal(f.payload, &h); err != nil {
		c.refuse("hello is not valid JSON: " + err.Error())
		return
	}
	if subtle.ConstantTimeCompare([]byte(h.Token), []byte(s.c.cfg.Token)) != 1 {
		c.refuse(fmt.Sprintf("wrong agent token from agent %q on %s", h.AgentID, h.Host))
		return
	}
	switch {
	case h.Protocol != ProtocolVersion:
		c.refuse(fmt.Sprintf("agent protocol %d, the coordinator speaks %d", h.Protocol, ProtocolVersion))
		return
	case h.AgentID == "":
		c.refuse("hello without agentId")
		return
	case h.Kernels <= 0:
		c.refuse(fmt.Sprintf("hello: %d kernels", h.Kernels))
		return
	}
	if h.Host != "" {
		c.host = h.Host
	}
	w, ready, ends, err := s.register(c, h)
	for _, k := range ends {
		k.EndRemote(fmt.Errorf("kernel %s: %w: agent %s reconnected", k.ID(), kernel.ErrStopped, h.Host))
	}
	if err != nil {
		c.refuseWith(errorMsg{Error: err.Error(), IDInUse: errors.Is(err, ErrIDInUse)})
		return
	}
	p, _ := json.Marshal(w)
	if _, err := c.conn.Write(appendFrame(nil, frame{kind: kindWelcome, epoch: c.epoch, payload: p})); err != nil {
		s.connLost(c, "welcome: "+err.Error())
		return
	}
	c.conn.SetDeadline(time.Time{})
	s.log.Info("agent connected", "agent", h.AgentID, "host", h.Host, "kernels", h.Kernels, "slots", w.Slots, "epoch", w.Epoch)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); c.writeLoop() }()
	for _, r := range ready {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.ready(r) }()
	}
	err = c.readLoop(fr)
	s.connLost(c, err.Error())
}

// readyKernel is a kernel attached to a slot whose OnReady is to run.
type readyKernel struct {
	slot int
	k    *kernel.Kernel
	ev   *kernel.RestartEvent // reported once it is ready; nil: state preserved or first start
}

// register makes c the connection of the agent of hello h: a new agent
// gets free slots; a known one (a reconnect) gets its own back, with the
// kernels that survived. It returns the welcome, the kernels to make
// ready, and the kernels of the agent's previous connection to end.
func (s *slots) register(c *agentConn, h hello) (welcome, []readyKernel, []*kernel.Kernel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return welcome{}, nil, nil, errors.New("the coordinator is stopping")
	}
	rec, err := s.claimLocked(h)
	if err != nil {
		return welcome{}, nil, nil, err
	}
	rec.host, rec.launcher = h.Host, h.Launcher
	if h.JobID != "" || rec.job == nil {
		rec.jobID = h.JobID // a submitted job's id is known already
	}
	rec.epoch = max(rec.epoch, h.LastEpoch) + 1
	rec.conn = c
	// The first agent is here: the slots it does not serve close, and the
	// runs waiting there (restored contexts) move to its kernels.
	s.startOpen = false
	c.rec, c.epoch = rec, rec.epoch
	c.lastBeat.Store(s.now())
	ready, ends := s.takeKernelsLocked(c, rec, h)
	s.broadcastLocked()
	w := welcome{Epoch: rec.epoch, LeaseMs: s.c.cfg.Lease.Milliseconds(), HeartbeatMs: s.c.cfg.Heartbeat.Milliseconds(),
		Slots: append([]int(nil), rec.slots...)}
	return w, ready, ends, nil
}

// claimLocked returns the record of h's agent: its own for a reconnect,
// else a new one on free slots. It refuses the agent of a job that
// ended. s.mu is held.
func (s *slots) claimLocked(h hello) (*agentRec, error) {
	rec := s.agents[h.AgentID]
	if rec != nil && rec.lost && rec.job != nil {
		// The agent of a job that ended (or was given up) and is still
		// alive for a moment: it would serve slots until Slurm kills it.
		return nil, fmt.Errorf("agent %s: its job %s ended (%s): it is not taken back", h.AgentID, rec.job.id, rec.job.state)
	}
	if rec != nil && !rec.lost {
		if err := s.resumeLocked(rec, h); err != nil {
			return nil, err
		}
		return rec, nil
	}
	return s.assignLocked(rec, h)
}

// resumeLocked takes a reconnecting agent back on its own slots: its
// previous connection is fenced and closed, its grace timer stopped, and
// its job (if any) counts as running. s.mu is held.
func (s *slots) resumeLocked(rec *agentRec, h hello) error {
	if old := rec.conn; old != nil && h.RunID != rec.runID {
		// Another process with the same id while this one's connection
		// lives (its heartbeats arrive): taking it over would fence the
		// live agent, which would reconnect and fence this one, and so on.
		// A connection silent for a few heartbeats is a dead agent's that
		// the coordinator has not noticed yet: a restart of it goes on.
		if age := time.Duration(s.now() - old.lastBeat.Load()); age < 3*s.c.cfg.Heartbeat {
			return fmt.Errorf("%w: agent id %s is in use by a connected agent on %s (another process, heard %v ago): give this agent another --id, or stop the other",
				ErrIDInUse, h.AgentID, rec.host, age.Round(time.Millisecond))
		}
	}
	if len(rec.slots) != h.Kernels {
		return fmt.Errorf("agent %s on %s had %d kernels and now says %d: restart it with --kernels %d or as a new agent (--id)",
			h.AgentID, h.Host, len(rec.slots), h.Kernels, len(rec.slots))
	}
	if old := rec.conn; old != nil {
		old.fenced.Store(true)
		rec.conn = nil
		go old.close()
	}
	if rec.grace != nil {
		rec.grace.Stop()
		rec.grace = nil
	}
	if rec.job != nil {
		rec.job.connected = true // its reserved slots are its own
		rec.job.idleSince = time.Time{}
		if !rec.job.ended {
			// Its agent runs: the job does, whatever the last poll said.
			rec.job.state, rec.job.reason = "RUNNING", ""
		}
	}
	return nil
}

// assignLocked makes a new record for h's agent on free slots; prev is
// the record of a lost agent of the same id (nil for a new one), whose
// epoch goes on. s.mu is held.
func (s *slots) assignLocked(prev *agentRec, h hello) (*agentRec, error) {
	var free []int
	for i, st := range s.slot {
		if st.owner == nil && !st.retired {
			free = append(free, s.nLocal+i)
		}
	}
	if len(free) < h.Kernels {
		return nil, fmt.Errorf("no free kernel slots for agent %s on %s: it has %d kernels, %d of the coordinator's %d agent slots are free (--agents-slots)",
			h.AgentID, h.Host, h.Kernels, len(free), len(s.slot))
	}
	var epoch uint32
	if prev != nil {
		epoch = prev.epoch
	} else {
		s.order = append(s.order, h.AgentID)
	}
	rec := &agentRec{id: h.AgentID, slots: free[:h.Kernels], epoch: epoch}
	s.agents[h.AgentID] = rec
	for i, slot := range rec.slots {
		st := s.slot[slot-s.nLocal]
		st.handTo(rec, i)
	}
	return rec, nil
}

// takeKernelsLocked attaches the kernels h says are running to rec's
// slots through c. It returns the kernels to make ready (with the restart
// to report for each that did not survive) and the kernels of the slots'
// previous connection to end. s.mu is held.
func (s *slots) takeKernelsLocked(c *agentConn, rec *agentRec, h hello) ([]readyKernel, []*kernel.Kernel) {
	sameRun := h.RunID == rec.runID
	rec.runID = h.RunID
	running := make(map[int]kernelInfo)
	for _, ki := range h.Running {
		running[ki.Index] = ki
	}
	lostReason := fmt.Sprintf("agent %s lost", h.Host)
	var ready []readyKernel
	var ends []*kernel.Kernel
	for i, slot := range rec.slots {
		st := s.slot[slot-s.nLocal]
		ends = appendKernels(ends, st)
		st.k, st.pending = nil, nil
		ki, ok := running[i]
		survived := ok && sameRun && ki.ID == st.kernelID && ki.Boot == st.boot
		if !ok {
			if st.kernelID != "" {
				st.restartReason = lostReason // its kernelUp reports the loss
			}
			continue
		}
		r := readyKernel{slot: slot, k: s.attach(c, i, ki)}
		if !survived && st.kernelID != "" {
			r.ev = &kernel.RestartEvent{Slot: slot, OldKernelID: st.kernelID, NewKernelID: ki.ID, Reason: lostReason}
		}
		st.pending, st.boot, st.kernelID, st.pid = r.k, ki.Boot, ki.ID, ki.PID
		ready = append(ready, r)
	}
	return ready, ends
}

// attach makes the coordinator's side of kernel ki of c's agent.
func (s *slots) attach(c *agentConn, index int, ki kernelInfo) *kernel.Kernel {
	k := kernel.Attach(kernel.RemoteConfig{
		ID: ki.ID, PID: ki.PID, Info: kernel.ReadyInfo{PID: ki.PID, Python: ki.Python, Protocol: 1},
		Control:    &remoteCtl{c: c, index: uint16(index), boot: ki.Boot},
		Background: s.cfg.Kernel.Background,
	})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-k.Done()
		s.broadcast() // waiters of the slot look again
	}()
	return k
}

// ready runs OnReady on a new kernel, publishes it and reports its event.
func (s *slots) ready(r readyKernel) {
	if s.cfg.OnReady != nil {
		if err := s.cfg.OnReady(s.bg, r.slot, r.k); err != nil {
			if s.bg.Err() == nil {
				s.log.Warn("agents: kernel set-up failed", "slot", r.slot, "kernel", r.k.ID(), "err", err)
			}
			r.k.EndRemote(fmt.Errorf("kernel %s: %w: set-up failed: %v", r.k.ID(), kernel.ErrKernelRestarted, err))
			return
		}
	}
	st := s.slot[r.slot-s.nLocal]
	s.mu.Lock()
	if st.pending != r.k || s.stopped {
		s.mu.Unlock()
		return
	}
	st.k, st.pending = r.k, nil
	st.gen++
	s.mu.Unlock()
	if r.ev != nil && s.cfg.OnRestart != nil {
		s.cfg.OnRestart(*r.ev)
	}
	s.broadcast()
}

// kernelUp handles a kernel (re)start the agent of c announced.
func (s *slots) kernelUp(c *agentConn, ki kernelInfo) {
	s.mu.Lock()
	rec := c.rec
	if s.stopped {
		s.mu.Unlock()
		return
	}
	if rec.conn != c || ki.Index < 0 || ki.Index >= len(rec.slots) {
		s.mu.Unlock()
		if rec.conn == c {
			c.sendError(fmt.Sprintf("kernelUp: unknown kernel index %d (the agent has %d kernels)", ki.Index, len(rec.slots)))
		}
		return
	}
	slot := rec.slots[ki.Index]
	st := s.slot[slot-s.nLocal]
	if st.boot == ki.Boot && (st.k != nil || st.pending != nil) {
		s.mu.Unlock()
		return // announced already (hello)
	}
	var ends []*kernel.Kernel
	ends = appendKernels(ends, st)
	var ev *kernel.RestartEvent
	if st.kernelID != "" {
		reason := ki.Reason
		if st.restartReason != "" {
			reason = st.restartReason
		}
		if reason == "" {
			reason = "kernel restarted on agent " + rec.host
		}
		ev = &kernel.RestartEvent{Slot: slot, OldKernelID: st.kernelID, NewKernelID: ki.ID, Reason: reason}
	}
	st.restartReason = ""
	k := s.attach(c, ki.Index, ki)
	st.k, st.pending, st.boot, st.kernelID, st.pid = nil, k, ki.Boot, ki.ID, ki.PID
	s.mu.Unlock()
	for _, old := range ends {
		if ki.Died {
			old.EndRemote(&kernel.ExitError{KernelID: old.ID(), PID: old.PID(), Code: -1, Stderr: ki.Reason})
		} else {
			old.EndRemote(fmt.Errorf("kernel %s: %w: replaced on agent %s: %s", old.ID(), kernel.ErrKernelRestarted, rec.host, ki.Reason))
		}
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.ready(readyKernel{slot: slot, k: k, ev: ev}) }()
}

// kernelFor returns the coordinator's side of kernel index/boot of c's
// agent: nil and false for an index the agent does not have, nil and true
// for a start that is no longer current.
func (s *slots) kernelFor(c *agentConn, index uint16, boot uint32) (*kernel.Kernel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := c.rec
	if int(index) >= len(rec.slots) {
		return nil, false
	}
	if rec.conn != c {
		return nil, true
	}
	st := s.slot[rec.slots[index]-s.nLocal]
	if st.boot != boot {
		return nil, true
	}
	if st.k != nil {
		return st.k, true
	}
	return st.pending, true
}

// connLost suspends the agent of c if c is its live connection: its
// kernels end here (runs on them go back to the queue and wait), and the
// grace timer starts.
func (s *slots) connLost(c *agentConn, reason string) {
	s.mu.Lock()
	rec := c.rec
	if rec == nil || rec.conn != c {
		s.mu.Unlock()
		return
	}
	rec.conn = nil
	rec.renewed = c.lastBeat.Load()
	var ends []*kernel.Kernel
	for _, slot := range rec.slots {
		st := s.slot[slot-s.nLocal]
		ends = appendKernels(ends, st)
		st.k, st.pending = nil, nil
	}
	stopping := s.stopped
	if !stopping {
		rec.grace = time.AfterFunc(s.c.cfg.Grace, func() { s.graceExpired(rec, "") })
	}
	s.broadcastLocked()
	s.mu.Unlock()
	if !stopping { // the coordinator's own shutdown is no loss to warn of
		s.log.Warn("agent lost; its contexts wait for it", "agent", rec.id, "host", rec.host, "reason", reason, "grace", s.c.cfg.Grace)
	}
	for _, k := range ends {
		k.EndRemote(fmt.Errorf("kernel %s: %w: %w", k.ID(), kernel.ErrStopped, &kernel.AgentLostError{Host: rec.host, Reason: reason}))
	}
}

// graceExpired gives up on an agent that did not come back: its slots
// are freed (Retired reports them closed, so their contexts move) and
// every slot's loss is reported as a restart that lost the state, its
// reason "agent HOST lost" after why (the job that ended, if any).
func (s *slots) graceExpired(rec *agentRec, why string) {
	s.mu.Lock()
	if rec.conn != nil || rec.lost || s.stopped {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()
	rec.lost = true
	reason := fmt.Sprintf("agent %s lost", rec.host)
	if why != "" {
		reason = why + ": " + reason
	}
	var evs []kernel.RestartEvent
	for _, slot := range rec.slots {
		st := s.slot[slot-s.nLocal]
		evs = append(evs, kernel.RestartEvent{Slot: slot, OldKernelID: st.kernelID, Reason: reason})
		st.handTo(nil, 0)
	}
	rec.slots = nil
	s.mu.Unlock()
	s.log.Warn("agent did not come back: its contexts move to other kernels", "agent", rec.id, "host", rec.host)
	// The engine hears of the loss before runs waiting on the slots are
	// woken (and move their contexts away): the notification names every
	// context that was on the slots.
	if s.cfg.OnRestart != nil {
		for _, ev := range evs {
			s.cfg.OnRestart(ev)
		}
	}
	s.broadcast()
}
