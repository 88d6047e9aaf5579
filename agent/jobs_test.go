package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
)

// Unit tests of the slurm launcher's bookkeeping (jobs.go) with a fake
// Scheduler at its narrow interface and hand-made agents (fakeAgent).
// tests/slurm_test.go runs the real thing: sbatch, squeue and scancel
// of a one-node cluster, real agents and kernels.

// fakeScheduler records what the coordinator asks of it; job ids are
// 1, 2, ...; states are what the test sets (PENDING until then).
type fakeScheduler struct {
	mu        sync.Mutex
	jobs      []Job
	states    map[string]JobState
	cancelled []string
	submitErr error
}

func (f *fakeScheduler) Name() string { return "fake" }

func (f *fakeScheduler) Submit(ctx context.Context, job Job) (Submitted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.submitErr != nil {
		return Submitted{}, f.submitErr
	}
	f.jobs = append(f.jobs, job)
	id := fmt.Sprint(len(f.jobs))
	f.states[id] = JobState{State: "PENDING", Reason: "Priority"}
	return Submitted{ID: id}, nil
}

func (f *fakeScheduler) States(ctx context.Context, ids []string) (map[string]JobState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]JobState{}
	for _, id := range ids {
		if st, ok := f.states[id]; ok {
			out[id] = st
		}
	}
	return out, nil
}

func (f *fakeScheduler) Cancel(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancelled = append(f.cancelled, id) // the job ends later, when the test says so
	return nil
}

func (f *fakeScheduler) set(id string, st JobState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.states[id] = st
}

func (f *fakeScheduler) submitted() []Job {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.jobs)
}

func (f *fakeScheduler) cancels() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cancelled)
}

// jobsSetup is a coordinator with two agent slots whose agents are
// submitted to a fakeScheduler; restarts the engine would hear of go to
// the returned channel.
func jobsSetup(t *testing.T, jobs JobsConfig) (*Coordinator, *slots, *fakeScheduler, chan kernel.RestartEvent) {
	t.Helper()
	fs := &fakeScheduler{states: map[string]JobState{}}
	jobs.Scheduler = fs
	jobs.Agent = []string{"ripple", "agent", "--token-file", "/x/agent-token"}
	if jobs.Poll == 0 {
		jobs.Poll = 10 * time.Millisecond
	}
	c, err := Listen(CoordinatorConfig{Listen: "127.0.0.1:0", Token: testToken, Slots: 2, Grace: time.Hour, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	restarts := make(chan kernel.RestartEvent, 16)
	s := c.Kernels(kernel.PoolConfig{OnRestart: func(ev kernel.RestartEvent) { restarts <- ev }}).(*slots)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	return c, s, fs, restarts
}

// callAsync runs an execute on slot in the background.
func callAsync(s *slots, slot int) chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := s.Call(ctx, slot, "execute", map[string]any{}, nil)
		done <- err
	}()
	return done
}

// A run waiting on a free slot makes the coordinator submit a job for it
// (the job's agent gets the slot, its command carries no token); the job
// is listed with its state; when the scheduler says it ended the agent
// is lost at once, without the grace (an hour here).
func TestJobsSubmitServeAndLose(t *testing.T) {
	t.Parallel()
	c, s, fs, restarts := jobsSetup(t, JobsConfig{})
	done := callAsync(s, 0)
	testenv.Eventually(t, "a submission", func() bool { return len(fs.submitted()) == 1 })
	job := fs.submitted()[0]
	if job.Kernels != 1 || !strings.HasPrefix(job.Name, "ripple-agent-") {
		t.Fatalf("job %+v", job)
	}
	cmd := strings.Join(job.Command, " ")
	for _, want := range []string{"--id " + job.Name, "--coordinator " + c.Addr(), "--kernels 1", "--launcher fake", "--token-file /x/agent-token"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("job command %q lacks %q", cmd, want)
		}
	}
	if strings.Contains(cmd, testToken) {
		t.Errorf("the token is on the job's command line: %q", cmd)
	}
	testenv.Eventually(t, "the job listed as pending", func() bool {
		as := s.Agents()
		return len(as) == 1 && as[0].JobName == job.Name && as[0].JobID == "1" && as[0].JobState == "PENDING" && as[0].JobReason == "Priority"
	})
	if st := s.Status(); len(st) != 1 || st[0].State != kernel.StateStarting {
		t.Fatalf("status %+v, want slot 0 starting", st)
	}

	h := goodHello(job.Name)
	fa, f := dialFake(t, c.Addr(), h)
	if f.kind != kindWelcome {
		t.Fatalf("hello: %s %s", f.kind, f.payload)
	}
	var w welcome
	json.Unmarshal(f.payload, &w)
	if !slices.Equal(w.Slots, []int{0}) {
		t.Fatalf("welcome slots %v, want the reserved [0]", w.Slots)
	}
	req := fa.nextOf(kindReq)
	fa.write(frame{kind: kindRes, kernel: 0, boot: 1, epoch: fa.epoch, id: req.id, payload: []byte(`{"status":"ok","result":{}}`)})
	if err := <-done; err != nil {
		t.Fatalf("the run on the job's kernel: %v", err)
	}
	if as := s.Agents(); len(as) != 1 || as[0].JobState != "RUNNING" || as[0].JobID != "1" {
		t.Fatalf("agents %+v, want the job running", as)
	}

	fs.set("1", JobState{State: "PREEMPTED", Ended: true})
	ev := <-restarts
	// The job is named by its id and state, not only as a lost agent.
	if want := "fake job 1 PREEMPTED: agent " + h.Host + " lost"; ev.Slot != 0 || ev.Reason != want {
		t.Fatalf("restart %+v, want slot 0, %q", ev, want)
	}
	if len(s.Agents()) != 0 || s.Retired(0) {
		t.Fatalf("after the job ended: agents %+v, slot 0 retired %v; want none, open", s.Agents(), s.Retired(0))
	}
	// Its agent, still alive for a moment, is not taken back.
	if _, f := dialFake(t, c.Addr(), h); f.kind != kindRefused || !strings.Contains(errorText(t, f), "not taken back") {
		t.Fatalf("the ended job's agent again: %s %s", f.kind, f.payload)
	}
}

// sbatch failing: the run waiting for the job fails naming its error,
// and the next run tries again.
func TestJobsSubmitFailure(t *testing.T) {
	t.Parallel()
	_, s, fs, _ := jobsSetup(t, JobsConfig{})
	fs.submitErr = errors.New("sbatch: error: invalid partition specified: nosuch")
	err := <-callAsync(s, 0)
	if !errors.Is(err, ErrJobFailed) || !strings.Contains(err.Error(), "invalid partition") {
		t.Fatalf("run: %v, want ErrJobFailed naming sbatch's error", err)
	}
	if s.Retired(0) || len(s.Agents()) != 0 {
		t.Fatalf("slot 0 retired %v, agents %+v", s.Retired(0), s.Agents())
	}
	fs.mu.Lock()
	fs.submitErr = nil
	fs.mu.Unlock()
	callAsync(s, 0)
	testenv.Eventually(t, "a second submission", func() bool { return len(fs.submitted()) == 1 })
}

// A job that ends before its agent connects fails the run waiting for
// it; one whose agent does not connect within the start timeout is
// cancelled, and its run fails saying so.
func TestJobsEndedBeforeConnectingAndStartTimeout(t *testing.T) {
	t.Parallel()
	_, s, fs, _ := jobsSetup(t, JobsConfig{})
	done := callAsync(s, 0)
	testenv.Eventually(t, "a submission", func() bool { return len(fs.submitted()) == 1 })
	fs.set("1", JobState{State: "FAILED", Reason: "NonZeroExitCode", Ended: true})
	if err := <-done; !errors.Is(err, ErrJobFailed) || !strings.Contains(err.Error(), "ended FAILED (NonZeroExitCode) before its agent connected") {
		t.Fatalf("run: %v", err)
	}

	_, s, fs, _ = jobsSetup(t, JobsConfig{StartTimeout: 50 * time.Millisecond})
	err := <-callAsync(s, 1)
	if !errors.Is(err, ErrJobFailed) || !strings.Contains(err.Error(), "did not connect within 50ms") || !strings.Contains(err.Error(), "PENDING (Priority)") {
		t.Fatalf("run: %v", err)
	}
	if got := fs.cancels(); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("cancelled %v, want [1]", got)
	}
}

// A job whose kernel has no context for the idle timeout is cancelled
// (its slot is closed from then on); Stop cancels the jobs still
// pending.
func TestJobsIdleCancelAndStop(t *testing.T) {
	t.Parallel()
	c, s, fs, _ := jobsSetup(t, JobsConfig{IdleTimeout: 50 * time.Millisecond})
	var contexts atomic.Int32
	contexts.Store(1)
	s.CountContexts(func(slot int) int {
		if slot == 0 {
			return int(contexts.Load())
		}
		return 0
	})
	done := callAsync(s, 0)
	testenv.Eventually(t, "a submission", func() bool { return len(fs.submitted()) == 1 })
	fa, _ := dialFake(t, c.Addr(), goodHello(fs.submitted()[0].Name))
	req := fa.nextOf(kindReq)
	fa.write(frame{kind: kindRes, kernel: 0, boot: 1, epoch: fa.epoch, id: req.id, payload: []byte(`{"status":"ok","result":{}}`)})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A pending job on slot 1, never connected.
	callAsync(s, 1)
	testenv.Eventually(t, "a second submission", func() bool { return len(fs.submitted()) == 2 })
	if len(fs.cancels()) != 0 {
		t.Fatalf("cancelled %v while slot 0 had a context", fs.cancels())
	}
	contexts.Store(0)
	testenv.Eventually(t, "the idle job cancelled", func() bool { return slices.Equal(fs.cancels(), []string{"1"}) })
	if !s.Retired(0) {
		t.Error("slot 0 open while its job is cancelled")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fs.cancels(); !slices.Equal(got, []string{"1", "2"}) {
		t.Fatalf("cancelled %v, want [1 2] (the pending job at Stop)", got)
	}
}

// A run waiting for a job says why, as the job's state and the
// scheduler's reason change (engine.WaitReporting): submitted, PENDING
// (Priority), then PENDING (Resources).
func TestJobsWaitingIsReported(t *testing.T) {
	t.Parallel()
	_, s, fs, _ := jobsSetup(t, JobsConfig{})
	var mu sync.Mutex
	var said []string
	s.ReportWaits(func(slot int, detail string) {
		mu.Lock()
		defer mu.Unlock()
		said = append(said, fmt.Sprintf("%d: %s", slot, detail))
	})
	saidSo := func(want string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, want) })
		}
	}
	callAsync(s, 0)
	testenv.Eventually(t, "the pending job reported", saidSo("0: fake job 1 PENDING (Priority)"))
	fs.set("1", JobState{State: "PENDING", Reason: "Resources"})
	testenv.Eventually(t, "the new reason reported", saidSo("0: fake job 1 PENDING (Resources)"))
}
