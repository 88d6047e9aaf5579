// Command slurm times the slurm launcher's cold path (issue 17): from a
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

func run(n, perJob int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "ripple-bench-slurm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "ripple")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/ripple").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	root := filepath.Join(tmp, "project")
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	py, err := kernel.FindPython(ctx, "", root)
	if err != nil {
		return err
	}

	cctx, ccancel := context.WithTimeout(ctx, 2*time.Minute)
	cl, err := slurmtest.Start(cctx)
	ccancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := cl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench/slurm:", err)
		}
	}()
	// The Slurm commands of the launcher read SLURM_CONF from here.
	os.Setenv("SLURM_CONF", cl.Conf)

	sc, err := slurm.New(slurm.Config{Dir: filepath.Join(tmp, "jobs")})
	if err != nil {
		return err
	}
	ts := &timedScheduler{Cluster: sc, submitted: map[string]time.Time{}}
	tokenFile := filepath.Join(tmp, "agent-token")
	const token = "bench-slurm-token"
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return err
	}
	coord, err := agent.Listen(agent.CoordinatorConfig{
		Listen: "127.0.0.1:0", Token: token, Slots: perJob,
		Jobs: agent.JobsConfig{
			Scheduler: ts, KernelsPerJob: perJob, Poll: 200 * time.Millisecond,
			// The job's shell notes when Slurm started it, then runs the
			// agent with the coordinator's flags ("$@").
			Agent: []string{"/bin/sh", "-c", `date +%s.%N > "$0/started-$SLURM_JOB_ID"; exec "$@"`, tmp,
				bin, "agent", "--token-file", tokenFile, "--root", root, "--python", py.Path, "--spare=false", "--log-level", "warn"},
		},
	})
	if err != nil {
		return err
	}
	defer coord.Close()
	slots := coord.Kernels(kernel.PoolConfig{})
	if err := slots.Start(ctx); err != nil {
		return err
	}
	defer slots.Stop(context.Background())
	ak := slots.(engine.AgentKernels)

	var sbatch, started, connect, total, local []time.Duration
	for i := range n {
		// Local kernel: start to the first result.
		start := time.Now()
		k, err := kernel.Start(ctx, kernel.Config{Python: py, Root: root})
		if err != nil {
			return err
		}
		if err := k.Eval(ctx, "x = 1", nil); err != nil {
			return err
		}
		local = append(local, time.Since(start))
		k.Stop(ctx)

		// Slurm: a run waits on the free slot.
		var connected time.Time
		done := make(chan error, 1)
		start = time.Now()
		go func() {
			_, err := slots.Call(ctx, 0, "eval", map[string]string{"code": "x = 1"}, nil)
			done <- err
		}()
		var jobID string
	wait:
		for {
			select {
			case err := <-done:
				if err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
				break wait
			case <-time.After(2 * time.Millisecond):
			}
			for _, a := range ak.Agents() {
				jobID = a.JobID
				if a.Host != "" && connected.IsZero() {
					connected = time.Now()
				}
			}
		}
		end := time.Now()
		for _, a := range ak.Agents() {
			jobID = a.JobID
			if connected.IsZero() && a.Host != "" {
				connected = end
			}
		}
		ts.mu.Lock()
		sub := ts.submitted[jobID]
		ts.mu.Unlock()
		if sub.IsZero() || connected.IsZero() {
			return errors.New("no job seen")
		}
		b, err := os.ReadFile(filepath.Join(tmp, "started-"+jobID))
		if err != nil {
			return err
		}
		var secs float64
		if _, err := fmt.Sscanf(string(b), "%f", &secs); err != nil {
			return fmt.Errorf("job start time %q: %w", b, err)
		}
		jobStart := time.Unix(0, int64(secs*1e9))
		sbatch = append(sbatch, sub.Sub(start))
		started = append(started, jobStart.Sub(sub))
		connect = append(connect, connected.Sub(jobStart))
		total = append(total, end.Sub(start))
		fmt.Fprintf(os.Stderr, "round %d: job %s: %v\n", i+1, jobID, end.Sub(start).Round(time.Millisecond))

		// Cancel the job and wait until the slot is free again.
		if err := cl.Cancel(ctx, jobID); err != nil {
			return err
		}
		for len(ak.Agents()) > 0 {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "slurm launcher, cold (%d jobs, %d kernel(s) each, python %s)\tp50\tmin\tmax\t\n", n, perJob, py.Version)
	fmt.Fprintf(w, "run waits -> sbatch returned\t%s\t%s\t%s\t\n", ms(pct(sbatch, 50)), ms(slices.Min(sbatch)), ms(slices.Max(sbatch)))
	fmt.Fprintf(w, "sbatch returned -> Slurm starts the job\t%s\t%s\t%s\t\n", ms(pct(started, 50)), ms(slices.Min(started)), ms(slices.Max(started)))
	fmt.Fprintf(w, "job started -> its agent connected (kernel up)\t%s\t%s\t%s\t\n", ms(pct(connect, 50)), ms(slices.Min(connect)), ms(slices.Max(connect)))
	fmt.Fprintf(w, "run waits -> its result (total)\t%s\t%s\t%s\t\n", ms(pct(total, 50)), ms(slices.Min(total)), ms(slices.Max(total)))
	fmt.Fprintf(w, "for scale: local kernel start -> first result\t%s\t%s\t%s\t\n", ms(pct(local, 50)), ms(slices.Min(local)), ms(slices.Max(local)))
	return w.Flush()
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
