package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"
)

// The slurm launcher (docs/scale-out.md "Launchers") is the agents
// launcher plus a Scheduler: the coordinator submits `ripple agent` as
// batch jobs when runs wait for kernels, and cancels the jobs whose
// kernels have had no context for an idle timeout. This file is its
// bookkeeping; package slurm is the Scheduler that runs sbatch, squeue
// and scancel.
//
// A job's life, and who moves it:
//
//   - submitted: the job loop reserves free slots for it (an agentRec
//     with no connection and the job's name for its agent id, so its
//     slots look like a suspended agent's: runs on them wait) and runs
//     Submit. A failed Submit frees the slots and fails the runs that
//     wait on them (ErrJobFailed, naming the scheduler's error).
//   - connected: its agent dialled in with --id NAME (register): it gets
//     the reserved slots, as an agent coming back gets its own.
//   - ended: the scheduler says so (a job that is no longer listed, or a
//     final state: CANCELLED, TIMEOUT, PREEMPTED, FAILED, ...). An agent
//     that had connected is lost at once, without the grace: the job is
//     gone, so there is nothing to wait for (expire: kernelRestarted
//     {statePreserved: false, reason: "agent HOST lost"}, and the
//     contexts' runs wait for a new job). One that never connected fails
//     the runs waiting for it, with the end of the job's output.
//   - cancelled: the job loop cancels a job whose kernels have had no
//     context for IdleTimeout (its slots take no new context from then
//     on), and one whose agent has not connected StartTimeout after its
//     submission. Stop cancels every job not known to have ended.
//
// The job loop is one goroutine (jobLoop) and the only caller of the
// Scheduler but for Stop's cancels, so the engine never waits for a
// scheduler command: runs only wait for slots, as they wait for a
// suspended agent.

// Scheduler submits runtime agents as batch jobs (package slurm). Its
// methods are called from one goroutine at a time and must honour ctx.
type Scheduler interface {
	// Name is the launcher's name in runtime/status (protocol.LauncherSlurm).
	Name() string
	// Submit submits a job that runs job.Command.
	Submit(ctx context.Context, job Job) (Submitted, error)
	// States reports the state of the jobs ids; a job missing from the
	// result has ended and is forgotten by the scheduler.
	States(ctx context.Context, ids []string) (map[string]JobState, error)
	// Cancel cancels job id.
	Cancel(ctx context.Context, id string) error
}

// Job is a batch job that runs one agent.
type Job struct {
	// Name is the job's name and its agent's id: ripple-agent-COORD-N.
	Name string
	// Kernels is the agent's number of kernels.
	Kernels int
	// Command is the agent's command line (argv): it carries the token
	// file's name, never the token.
	Command []string
}

// Submitted is a job the scheduler accepted.
type Submitted struct {
	ID string
	// Output is the file the job's output goes to ("" if unknown): the
	// error of a job that ended before its agent connected shows its end.
	Output string
}

// JobState is what the scheduler says of a job.
type JobState struct {
	State  string // PENDING, RUNNING, CANCELLED, TIMEOUT, PREEMPTED, ...
	Reason string // why it is pending, or why it ended ("None" is dropped)
	Ended  bool   // the job is over (its agent is gone or going)
}

// ErrJobFailed is the error of runs (and of WaitKernels) that waited for
// a job that could not be submitted or ended before its agent connected.
var ErrJobFailed = errors.New("no kernel could be launched")

// JobsConfig makes the Coordinator submit its agents (the slurm launcher).
type JobsConfig struct {
	// Scheduler submits, polls and cancels the jobs; nil: agents connect
	// by themselves (the agents launcher) and the rest is unused.
	Scheduler Scheduler
	// Agent is the command line that runs an agent on a compute node,
	// without the flags the coordinator adds for each job (--coordinator,
	// --coordinator-fingerprint, --id, --kernels, --launcher): e.g.
	// [/path/to/ripple agent --token-file F --root DIR].
	Agent []string
	// Advertise is the address the jobs' agents dial; default the
	// listener's, with an unspecified host (0.0.0.0, ::) replaced by this
	// host's name.
	Advertise string
	// KernelsPerJob is each job's number of kernels (default 1).
	KernelsPerJob int
	// IdleTimeout: a job none of whose kernels has had a context for this
	// long is cancelled (default 10 minutes).
	IdleTimeout time.Duration
	// StartTimeout: a job whose agent has not connected this long after
	// its submission (still pending, or its agent cannot reach us) is
	// cancelled, and the runs that waited for it fail (default 10 minutes).
	StartTimeout time.Duration
	// Poll is how often the jobs' states are read (default 2 s).
	Poll time.Duration
	// Batch: jobs are submitted only for WaitKernels (ripple run); a slot
	// whose job is lost is closed, as an agent's, instead of waiting for
	// a new job.
	Batch bool
}

// jobRec is a job the coordinator submitted for one agent (agentRec.job).
// Guarded by slots.mu.
type jobRec struct {
	name      string
	id        string // the scheduler's; "" until Submit returns
	output    string
	state     string
	reason    string
	submitted time.Time
	connected bool      // its agent connected at least once
	idleSince time.Time // zero while one of its kernels has a context or a run
	// cancelling: idle or never started, and cancelled: Retired reports
	// its slots closed so that no context goes to them.
	cancelling bool
	ended      bool
}

func (j *JobsConfig) withDefaults() {
	if j.KernelsPerJob <= 0 {
		j.KernelsPerJob = 1
	}
	if j.IdleTimeout <= 0 {
		j.IdleTimeout = 10 * time.Minute
	}
	if j.StartTimeout <= 0 {
		j.StartTimeout = 10 * time.Minute
	}
	if j.Poll <= 0 {
		j.Poll = 2 * time.Second
	}
}

// advertise returns the address jobs' agents dial, given the listener's.
func (j *JobsConfig) advertise(addr string) (string, error) {
	if j.Advertise != "" {
		return j.Advertise, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		name, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("the address agents dial: %w (give it with --agents-advertise)", err)
		}
		return net.JoinHostPort(name, port), nil
	}
	return addr, nil
}

// onDemand reports whether a slot no agent serves is open: its contexts
// wait for a job the job loop submits.
func (s *slots) onDemand() bool {
	return s.c.cfg.Jobs.Scheduler != nil && !s.c.cfg.Jobs.Batch
}

// nudgeJobs wakes the job loop (a run waits for a kernel).
func (s *slots) nudgeJobs() {
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// CountContexts implements engine.ContextCounting: idle jobs are those
// whose kernels have no context.
func (s *slots) CountContexts(count func(slot int) int) {
	s.mu.Lock()
	s.countContexts = count
	s.mu.Unlock()
}

// jobLoop submits jobs for waiting runs, reads the jobs' states and
// cancels idle jobs, until Stop.
func (s *slots) jobLoop() {
	j := s.c.cfg.Jobs
	t := time.NewTicker(j.Poll)
	defer t.Stop()
	lastPoll := time.Time{}
	for {
		select {
		case <-s.bg.Done():
			return
		case <-s.nudge:
		case <-t.C:
		}
		s.submitWanted()
		if time.Since(lastPoll) >= j.Poll/2 {
			lastPoll = time.Now()
			s.pollJobs()
		}
		s.cancelIdle()
	}
}

// cmdCtx is the context of one scheduler command: it is not cancelled
// by Stop (a job submitted while stopping is still recorded, and so
// cancelled), only bounded.
func (s *slots) cmdCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(s.bg), time.Minute)
}

// submitWanted submits the jobs that runs waiting on free slots (and
// WaitKernels) want, each reserving its slots before it is submitted.
func (s *slots) submitWanted() {
	j := s.c.cfg.Jobs
	type planned struct {
		rec *agentRec
		job Job
	}
	var plan []planned
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	var wanted, other []int // free slots: with runs waiting, without
	live := 0               // kernels of agents that serve or will
	for i, st := range s.slot {
		switch {
		case st.retired:
		case st.owner == nil && st.waiters > 0:
			wanted = append(wanted, i)
		case st.owner == nil:
			other = append(other, i)
		case st.owner.job == nil || !st.owner.job.cancelling:
			live++
		}
	}
	need := len(wanted) + max(0, s.minKernels-live-len(wanted))
	free := append(wanted, other...)
	need = min(need, len(free))
	for need > 0 {
		k := min(j.KernelsPerJob, len(free))
		s.jobSeq++
		name := fmt.Sprintf("ripple-agent-%s-%d", s.coordID, s.jobSeq)
		rec := &agentRec{id: name, host: "", launcher: s.c.Name(),
			job: &jobRec{name: name, state: "SUBMITTING", submitted: time.Now()}}
		for i, idx := range free[:k] {
			rec.slots = append(rec.slots, s.nLocal+idx)
			s.slot[idx].handTo(rec, i)
		}
		free = free[k:]
		need -= k
		s.agents[name] = rec
		s.order = append(s.order, name)
		cmd := slices.Clone(j.Agent)
		cmd = append(cmd, "--coordinator", s.advertise, "--id", name, "--kernels", strconv.Itoa(k), "--launcher", s.c.Name())
		if s.c.fingerprint != "" {
			cmd = append(cmd, "--coordinator-fingerprint", s.c.fingerprint)
		}
		plan = append(plan, planned{rec, Job{Name: name, Kernels: k, Command: cmd}})
	}
	if len(plan) > 0 {
		s.broadcastLocked()
	}
	s.mu.Unlock()
	for _, p := range plan {
		ctx, cancel := s.cmdCtx()
		sub, err := j.Scheduler.Submit(ctx, p.job)
		cancel()
		if err != nil {
			err = fmt.Errorf("%w: submitting %s job %s: %w", ErrJobFailed, j.Scheduler.Name(), p.job.Name, err)
			s.log.Error("job submission failed", "job", p.job.Name, "err", err)
			s.jobFailed(p.rec, err)
			continue
		}
		s.mu.Lock()
		p.rec.job.id, p.rec.job.output, p.rec.jobID = sub.ID, sub.Output, sub.ID
		if p.rec.job.state == "SUBMITTING" {
			p.rec.job.state = "PENDING"
		}
		s.broadcastLocked() // runs waiting for it name it now (waits.go)
		s.mu.Unlock()
		s.log.Info("job submitted", "job", p.job.Name, "id", sub.ID, "kernels", p.job.Kernels, "output", sub.Output)
	}
}

// jobFailed gives up on a job whose agent never connected: its slots are
// freed and the runs waiting on them (and WaitKernels) fail with err.
func (s *slots) jobFailed(rec *agentRec, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec.lost {
		return
	}
	rec.lost = true
	rec.job.ended = true
	for _, slot := range rec.slots {
		st := s.slot[slot-s.nLocal]
		st.handTo(nil, 0)
		st.failGen, st.failErr = st.failGen+1, err
	}
	rec.slots = nil
	s.jobErr, s.jobErrGen = err, s.jobErrGen+1
	s.minKernels = 0 // WaitKernels fails; no job is submitted again for it
	s.broadcastLocked()
}

// pollJobs reads the states of the jobs not known to have ended, and
// handles those that ended or did not start in time.
func (s *slots) pollJobs() {
	j := s.c.cfg.Jobs
	s.mu.Lock()
	var ids []string
	for _, rec := range s.agents {
		if rec.job != nil && rec.job.id != "" && !rec.job.ended {
			ids = append(ids, rec.job.id)
		}
	}
	s.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	ctx, cancel := s.cmdCtx()
	states, err := j.Scheduler.States(ctx, ids)
	cancel()
	if err != nil {
		// Nothing is concluded from a failed poll; said once per error.
		if msg := err.Error(); msg != s.pollErr {
			s.pollErr = msg
			s.log.Warn("reading the jobs' states failed; retrying", "scheduler", j.Scheduler.Name(), "err", err)
		}
		return
	}
	s.pollErr = ""
	type ended struct {
		rec       *agentRec
		id, state string
		err       error // for a job whose agent never connected
	}
	var ends []ended
	var late []*agentRec
	changed := false
	s.mu.Lock()
	for _, rec := range s.agents {
		job := rec.job
		if job == nil || job.id == "" || job.ended || !slices.Contains(ids, job.id) {
			continue
		}
		st, ok := states[job.id]
		if !ok {
			st = JobState{State: "ENDED", Reason: "no longer listed by the scheduler", Ended: true}
		}
		// A poll that started before the agent connected may say
		// PENDING or CONFIGURING still: the connection knows better (register).
		if !job.connected || st.Ended || (st.State != "PENDING" && st.State != "CONFIGURING") {
			if job.state != st.State || job.reason != st.Reason {
				changed = true // runs waiting for it say the new state (waits.go)
			}
			job.state, job.reason = st.State, st.Reason
		}
		switch {
		case st.Ended:
			job.ended = true
			var err error
			if !job.connected {
				err = fmt.Errorf("%w: %s job %s (%s) ended %s before its agent connected%s",
					ErrJobFailed, j.Scheduler.Name(), job.id, job.name, stateText(st), outputTail(job.output))
			}
			ends = append(ends, ended{rec, job.id, stateText(st), err})
		case !job.connected && !job.cancelling && time.Since(job.submitted) > j.StartTimeout:
			job.cancelling = true
			late = append(late, rec)
		}
	}
	if changed {
		s.broadcastLocked()
	}
	s.mu.Unlock()
	for _, e := range ends {
		if e.err != nil {
			s.log.Error("job ended before its agent connected", "job", e.rec.id, "err", e.err)
			s.jobFailed(e.rec, e.err)
			continue
		}
		s.log.Warn("job ended: its agent is lost", "job", e.rec.id, "id", e.id, "state", e.state)
		s.jobEnded(e.rec, fmt.Sprintf("%s job %s %s", j.Scheduler.Name(), e.id, e.state))
	}
	for _, rec := range late {
		s.mu.Lock()
		id, state, reason, output := rec.job.id, rec.job.state, rec.job.reason, rec.job.output
		s.mu.Unlock()
		err := fmt.Errorf("%w: %s job %s (%s) was cancelled: its agent did not connect within %v of its submission (job %s%s)%s",
			ErrJobFailed, j.Scheduler.Name(), id, rec.id, j.StartTimeout, state, reasonText(reason), outputTail(output))
		s.log.Error("job did not start in time", "job", rec.id, "err", err)
		ctx, cancel := s.cmdCtx()
		if cerr := j.Scheduler.Cancel(ctx, id); cerr != nil {
			s.log.Error("cancelling a job failed", "job", rec.id, "id", id, "err", cerr)
		}
		cancel()
		s.jobFailed(rec, err)
	}
}

// jobEnded handles the end of a job whose agent had connected: the agent
// is lost now, not after the grace (a job that ended does not come back).
// job names it with its id and state ("slurm job 17 CANCELLED"), which
// the contexts' owners are told (kernelRestarted's reason).
func (s *slots) jobEnded(rec *agentRec, job string) {
	s.mu.Lock()
	conn := rec.conn
	s.mu.Unlock()
	if conn != nil {
		s.connLost(conn, job)
		conn.close()
	}
	s.graceExpired(rec, job)
}

// cancelIdle cancels the jobs none of whose kernels has had a context (or
// a run) for IdleTimeout. Without the engine's count of contexts
// (CountContexts) no job is idle.
func (s *slots) cancelIdle() {
	j := s.c.cfg.Jobs
	var idle []*agentRec
	s.mu.Lock()
	count := s.countContexts
	if count == nil || s.stopped {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	for _, rec := range s.agents {
		job := rec.job
		if job == nil || rec.lost || job.cancelling || job.ended || rec.conn == nil {
			continue
		}
		used := false
		for _, slot := range rec.slots {
			st := s.slot[slot-s.nLocal]
			used = used || count(slot) > 0 || st.waiters > 0 || (st.k != nil && st.k.Busy())
		}
		switch {
		case used:
			job.idleSince = time.Time{}
		case job.idleSince.IsZero():
			job.idleSince = now
		case now.Sub(job.idleSince) >= j.IdleTimeout:
			// Closed first, then counted again: a context assigned
			// between the two counts stays (and the job with it); one
			// assigned after sees the slots closed.
			job.cancelling = true
			for _, slot := range rec.slots {
				used = used || count(slot) > 0
			}
			if used {
				job.cancelling, job.idleSince = false, time.Time{}
				continue
			}
			idle = append(idle, rec)
		}
	}
	if len(idle) > 0 {
		s.broadcastLocked()
	}
	s.mu.Unlock()
	for _, rec := range idle {
		s.mu.Lock()
		id := rec.job.id
		s.mu.Unlock()
		s.log.Info("cancelling an idle job", "job", rec.id, "id", id, "idle", j.IdleTimeout)
		ctx, cancel := s.cmdCtx()
		err := j.Scheduler.Cancel(ctx, id)
		cancel()
		if err != nil {
			s.log.Error("cancelling an idle job failed; it stays", "job", rec.id, "id", id, "err", err)
			s.mu.Lock()
			rec.job.cancelling, rec.job.idleSince = false, time.Now()
			s.broadcastLocked()
			s.mu.Unlock()
		}
	}
}

// cancelJobs cancels every job not known to have ended, and not
// cancelled already, in submission order (Stop).
func (s *slots) cancelJobs(ctx context.Context) {
	sched := s.c.cfg.Jobs.Scheduler
	s.mu.Lock()
	var ids, names []string
	for _, id := range s.order {
		rec := s.agents[id]
		if rec.job != nil && rec.job.id != "" && !rec.job.ended && !rec.job.cancelling {
			ids, names = append(ids, rec.job.id), append(names, rec.id)
			rec.job.ended = true
		}
	}
	s.mu.Unlock()
	for i, id := range ids {
		if err := sched.Cancel(ctx, id); err != nil {
			s.log.Error("cancelling a job at stop failed", "job", names[i], "id", id, "err", err)
		}
	}
}

func stateText(st JobState) string { return st.State + reasonText(st.Reason) }

func reasonText(r string) string {
	if r == "" || r == "None" {
		return ""
	}
	return " (" + r + ")"
}

// outputTail returns the end of a job's output file for an error.
func outputTail(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "" // the job never ran
	}
	if err != nil {
		return "; its output " + path + ": " + err.Error()
	}
	const max = 600
	if len(b) > max {
		b = b[len(b)-max:]
	}
	if len(b) == 0 {
		return "; its output " + path + " is empty"
	}
	return "; the end of its output (" + path + "):\n" + string(b)
}
