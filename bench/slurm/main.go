// Command slurm times the slurm launcher's cold path: from a
// run waiting for a kernel on a free slot to that run's result, through
// sbatch, Slurm starting the job, `ripple agent` starting its kernel and
// connecting back, and the run itself. It brings up a one-node Slurm
// cluster on this machine (slurm/slurmtest: Debian's slurm-wlm and
// munge), builds cmd/ripple, and runs the coordinator's slurm launcher in
// process (agent.Listen with a slurm.Cluster, no engine: the waiting run
// is a Call of `x = 1` on the slot, as the engine's run would be). Each
// round's job is cancelled before the next. A local kernel's start to
// its first result is timed alongside, in alternation, for scale.
//
//	go run ./bench/slurm [-n 10] [-kernels-per-job 1]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/slurm"
	"github.com/ripple-run/ripple/slurm/slurmtest"
)

func main() {
	n := flag.Int("n", 10, "rounds (jobs submitted)")
	perJob := flag.Int("kernels-per-job", 1, "kernels of each job's agent")
	flag.Parse()
	if err := run(*n, *perJob); err != nil {
		fmt.Fprintln(os.Stderr, "bench/slurm:", err)
		os.Exit(1)
	}
}

// timedScheduler records when each Submit returned.
type timedScheduler struct {
	*slurm.Cluster
	mu        sync.Mutex
	submitted map[string]time.Time // by job id
}

func (t *timedScheduler) Submit(ctx context.Context, job agent.Job) (agent.Submitted, error) {
	sub, err := t.Cluster.Submit(ctx, job)
	if err == nil {
		t.mu.Lock()
		t.submitted[sub.ID] = time.Now()
		t.mu.Unlock()
	}
	return sub, err
}

// run sets the cluster and the coordinator up, times n rounds (a local
// kernel's start, then a Slurm job's cold path) and prints the table.
func run(n, perJob int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	b, err := setUp(ctx, perJob)
	defer b.tearDown()
	if err != nil {
		return err
	}
	var t timings
	for i := range n {
		local, err := b.localRound(ctx)
		if err != nil {
			return err
		}
		t.local = append(t.local, local)
		if err := b.slurmRound(ctx, i, &t); err != nil {
			return err
		}
	}
	return t.print(n, perJob, b.py.Version)
}

// bench is what the rounds share: the ripple binary, the project, the
// one-node cluster and the coordinator whose slots the rounds wait on.
type bench struct {
	tmp, bin, root string
	py             kernel.Interpreter
	cl             *slurmtest.Cluster
	ts             *timedScheduler
	coord          *agent.Coordinator
	slots          engine.Kernels
	ak             engine.AgentKernels
	cleanups       []func() // run last first by tearDown
}

// timings are the rounds' durations, one slice per row of the table.
type timings struct {
	sbatch, started, connect, total, local []time.Duration
}

// setUp builds cmd/ripple, brings the cluster up and starts the
// coordinator's slurm launcher. The bench it returns is torn down also
// after an error.
func setUp(ctx context.Context, perJob int) (*bench, error) {
	b := &bench{}
	tmp, err := os.MkdirTemp("", "ripple-bench-slurm-")
	if err != nil {
		return b, err
	}
	b.tmp = tmp
	b.cleanups = append(b.cleanups, func() { os.RemoveAll(tmp) })
	b.bin = filepath.Join(tmp, "ripple")
	if out, err := exec.Command("go", "build", "-o", b.bin, "./cmd/ripple").CombinedOutput(); err != nil {
		return b, fmt.Errorf("go build: %v\n%s", err, out)
	}
	b.root = filepath.Join(tmp, "project")
	if err := os.Mkdir(b.root, 0o755); err != nil {
		return b, err
	}
	if b.py, err = kernel.FindPython(ctx, "", b.root); err != nil {
		return b, err
	}
	if err := b.startCluster(ctx); err != nil {
		return b, err
	}
	return b, b.startCoordinator(ctx, perJob)
}

// startCluster brings up the one-node Slurm cluster.
func (b *bench) startCluster(ctx context.Context) error {
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
	cl, err := slurmtest.Start(cctx)
	ccancel()
	if err != nil {
		return err
	}
	b.cl = cl
	b.cleanups = append(b.cleanups, func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench/slurm:", err)
		}
	})
	// The Slurm commands of the launcher read SLURM_CONF from here.
	os.Setenv("SLURM_CONF", cl.Conf)
	return nil
}

// startCoordinator starts agent.Listen with the slurm launcher (jobs of
// perJob kernels) and its slots.
func (b *bench) startCoordinator(ctx context.Context, perJob int) error {
	sc, err := slurm.New(slurm.Config{Dir: filepath.Join(b.tmp, "jobs")})
	if err != nil {
		return err
	}
	b.ts = &timedScheduler{Cluster: sc, submitted: map[string]time.Time{}}
	tokenFile := filepath.Join(b.tmp, "agent-token")
	const token = "bench-slurm-token"
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return err
	}
	coord, err := agent.Listen(agent.CoordinatorConfig{
		Listen: "127.0.0.1:0", Token: token, Slots: perJob,
		Jobs: agent.JobsConfig{
			Scheduler: b.ts, KernelsPerJob: perJob, Poll: 200 * time.Millisecond,
			// The job's shell notes when Slurm started it, then runs the
			// agent with the coordinator's flags ("$@").
			Agent: []string{"/bin/sh", "-c", `date +%s.%N > "$0/started-$SLURM_JOB_ID"; exec "$@"`, b.tmp,
				b.bin, "agent", "--token-file", tokenFile, "--root", b.root, "--python", b.py.Path, "--spare=false", "--log-level", "warn"},
		},
	})
	if err != nil {
		return err
	}
	b.coord = coord
	b.cleanups = append(b.cleanups, func() { coord.Close() })
	slots := coord.Kernels(kernel.PoolConfig{})
	if err := slots.Start(ctx); err != nil {
		return err
	}
	b.cleanups = append(b.cleanups, func() { slots.Stop(context.Background()) })
	b.slots, b.ak = slots, slots.(engine.AgentKernels)
	return nil
}

// tearDown undoes setUp, last first.
func (b *bench) tearDown() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
}

// localRound times a local kernel's start to its first result.
func (b *bench) localRound(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	k, err := kernel.Start(ctx, kernel.Config{Python: b.py, Root: b.root})
	if err != nil {
		return 0, err
	}
	if err := k.Eval(ctx, "x = 1", nil); err != nil {
		return 0, err
	}
	d := time.Since(start)
	k.Stop(ctx)
	return d, nil
}

// slurmRound times round i's cold path: a run waits on the free slot, the
// launcher submits a job, Slurm starts it, its agent connects and the run
// gets its result. The job is cancelled at the end, and the round waits
// until the slot is free again.
func (b *bench) slurmRound(ctx context.Context, i int, t *timings) error {
	start := time.Now()
	jobID, connected, end, err := b.waitForResult(ctx)
	if err != nil {
		return fmt.Errorf("round %d: %w", i, err)
	}
	b.ts.mu.Lock()
	sub := b.ts.submitted[jobID]
	b.ts.mu.Unlock()
	if sub.IsZero() || connected.IsZero() {
		return errors.New("no job seen")
	}
	jobStart, err := b.jobStart(jobID)
	if err != nil {
		return err
	}
	t.sbatch = append(t.sbatch, sub.Sub(start))
	t.started = append(t.started, jobStart.Sub(sub))
	t.connect = append(t.connect, connected.Sub(jobStart))
	t.total = append(t.total, end.Sub(start))
	fmt.Fprintf(os.Stderr, "round %d: job %s: %v\n", i+1, jobID, end.Sub(start).Round(time.Millisecond))

	if err := b.cl.Cancel(ctx, jobID); err != nil {
		return err
	}
	for len(b.ak.Agents()) > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// waitForResult calls `x = 1` on slot 0 and, while it waits, watches the
// agents: it returns the job that served the call, when its agent was
// first seen connected (the result's time if only then; zero if never)
// and when the result came.
func (b *bench) waitForResult(ctx context.Context) (jobID string, connected, end time.Time, err error) {
	done := make(chan error, 1)
	go func() {
		_, err := b.slots.Call(ctx, 0, "eval", map[string]string{"code": "x = 1"}, nil)
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				return "", time.Time{}, time.Time{}, err
			}
			end = time.Now()
			for _, a := range b.ak.Agents() {
				jobID = a.JobID
				if connected.IsZero() && a.Host != "" {
					connected = end
				}
			}
			return jobID, connected, end, nil
		case <-time.After(2 * time.Millisecond):
		}
		for _, a := range b.ak.Agents() {
			jobID = a.JobID
			if a.Host != "" && connected.IsZero() {
				connected = time.Now()
			}
		}
	}
}

// jobStart reads when Slurm started the job (its shell wrote the time).
func (b *bench) jobStart(jobID string) (time.Time, error) {
	data, err := os.ReadFile(filepath.Join(b.tmp, "started-"+jobID))
	if err != nil {
		return time.Time{}, err
	}
	var secs float64
	if _, err := fmt.Sscanf(string(data), "%f", &secs); err != nil {
		return time.Time{}, fmt.Errorf("job start time %q: %w", data, err)
	}
	return time.Unix(0, int64(secs*1e9)), nil
}

// print writes the table of n rounds.
func (t *timings) print(n, perJob int, version string) error {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "slurm launcher, cold (%d jobs, %d kernel(s) each, python %s)\tp50\tmin\tmax\t\n", n, perJob, version)
	for _, row := range []struct {
		name string
		d    []time.Duration
	}{
		{"run waits -> sbatch returned", t.sbatch},
		{"sbatch returned -> Slurm starts the job", t.started},
		{"job started -> its agent connected (kernel up)", t.connect},
		{"run waits -> its result (total)", t.total},
		{"for scale: local kernel start -> first result", t.local},
	} {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\n", row.name, ms(pct(row.d, 50)), ms(slices.Min(row.d)), ms(slices.Max(row.d)))
	}
	return w.Flush()
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
