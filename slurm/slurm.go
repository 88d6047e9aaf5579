// Package slurm is the Scheduler of ripple's slurm launcher
// (docs/scale-out.md): it submits runtime agents (`ripple agent`) as
// Slurm jobs with sbatch, reads their states with squeue and cancels
// them with scancel. The bookkeeping (when to submit, which job serves
// which kernel, idle and lost jobs) is the agent package's Coordinator;
// this package only runs the commands:
//
//	cl, err := slurm.New(slurm.Config{Dir: dir, Args: []string{"--partition=debug"}})
//	coord, err := agent.Listen(agent.CoordinatorConfig{..., Jobs: agent.JobsConfig{Scheduler: cl, Agent: argv}})
//
// Every command runs with a timeout and its own process group, so a hung
// controller costs a job loop's turn, never the engine's. The agent token
// travels in the file the agent's command line names (--token-file, mode
// 0600): it is neither in the job's script nor on a command line, and the
// token variables are removed from the environment sbatch passes on.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/internal/busyexec"
	"github.com/ripple-run/ripple/protocol"
)

// ErrCommand is the error of a Slurm command that failed, wrapped with
// the command and what it printed.
var ErrCommand = errors.New("slurm command failed")

// Config describes a Cluster.
type Config struct {
	// Dir holds the jobs' scripts and output files (NAME.sh, NAME.out);
	// created with mode 0700. On a cluster it must be on a filesystem the
	// compute nodes share.
	Dir string
	// Args are extra sbatch arguments, after ripple's own (so they win):
	// --partition, --time, --account, --mem...
	Args []string
	// Timeout bounds each command (default 30 s).
	Timeout time.Duration
	// Sbatch, Squeue and Scancel are the commands (default: found on PATH).
	Sbatch, Squeue, Scancel string
}

// Cluster is an agent.Scheduler over Slurm's commands.
type Cluster struct {
	cfg Config
}

var _ agent.Scheduler = (*Cluster)(nil)

// New checks that the Slurm commands are there and makes cfg.Dir.
func New(cfg Config) (*Cluster, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	for _, c := range []struct {
		path *string
		name string
	}{{&cfg.Sbatch, "sbatch"}, {&cfg.Squeue, "squeue"}, {&cfg.Scancel, "scancel"}} {
		if *c.path == "" {
			*c.path = c.name
		}
		p, err := exec.LookPath(*c.path)
		if err != nil {
			return nil, fmt.Errorf("slurm launcher: %s not found (is this a Slurm login node with Slurm's commands on PATH?): %w", c.name, err)
		}
		*c.path = p
	}
	if cfg.Dir == "" {
		return nil, errors.New("slurm launcher: no directory for the jobs' scripts and output")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("slurm launcher: %w", err)
	}
	return &Cluster{cfg: cfg}, nil
}

// Name is protocol.LauncherSlurm.
func (c *Cluster) Name() string { return protocol.LauncherSlurm }

// Submit writes the job's script and submits it with sbatch --parsable:
// one task with a CPU per kernel, its output in Dir/NAME.out.
func (c *Cluster) Submit(ctx context.Context, job agent.Job) (agent.Submitted, error) {
	script := filepath.Join(c.cfg.Dir, job.Name+".sh")
	output := filepath.Join(c.cfg.Dir, job.Name+".out")
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# A ripple runtime agent, submitted by ripple's slurm launcher. Its agent\n# token is read from the --token-file; it is not in this script.\nexec")
	for _, a := range job.Command {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	if err := os.WriteFile(script, []byte(b.String()), 0o700); err != nil {
		return agent.Submitted{}, fmt.Errorf("job script: %w", err)
	}
	args := []string{"--parsable", "--job-name=" + job.Name, "--output=" + output,
		"--ntasks=1", "--cpus-per-task=" + strconv.Itoa(max(job.Kernels, 1))}
	args = append(append(args, c.cfg.Args...), script)
	out, err := c.run(ctx, c.cfg.Sbatch, args...)
	if err != nil {
		return agent.Submitted{}, err
	}
	// --parsable: "ID" or "ID;CLUSTER", after any warnings on stderr.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id, _, _ := strings.Cut(strings.TrimSpace(lines[len(lines)-1]), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return agent.Submitted{}, fmt.Errorf("%w: sbatch printed %q, want a job id", ErrCommand, out)
	}
	return agent.Submitted{ID: id, Output: output}, nil
}

// States runs squeue for ids, with every state (Slurm lists a job that
// ended for MinJobAge, 300 s by default, with its final state). A job
// squeue does not list has ended.
func (c *Cluster) States(ctx context.Context, ids []string) (map[string]agent.JobState, error) {
	out, err := c.run(ctx, c.cfg.Squeue, "--noheader", "--states=all", "--jobs="+strings.Join(ids, ","), "--format=%i|%T|%r")
	if err != nil {
		if strings.Contains(err.Error(), "Invalid job id specified") {
			return map[string]agent.JobState{}, nil // none of them is known any more
		}
		return nil, err
	}
	states := make(map[string]agent.JobState, len(ids))
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 || !slices.Contains(ids, f[0]) {
			continue
		}
		states[f[0]] = agent.JobState{State: f[1], Reason: f[2], Ended: Ended(f[1])}
	}
	return states, nil
}

// Cancel runs scancel.
func (c *Cluster) Cancel(ctx context.Context, id string) error {
	_, err := c.run(ctx, c.cfg.Scancel, id)
	return err
}

// Ended reports whether a job in Slurm state st is over: its processes
// are gone or being killed (COMPLETING), so its agent is lost.
func Ended(st string) bool {
	switch strings.TrimSuffix(st, "+") { // "CANCELLED+" in some versions' output
	case "PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
		"RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "STOPPED", "SPECIAL_EXIT":
		return false
	}
	return true // COMPLETED, COMPLETING, CANCELLED, FAILED, TIMEOUT, PREEMPTED, NODE_FAIL, BOOT_FAIL, DEADLINE, OUT_OF_MEMORY, REVOKED
}

// run runs one command with the timeout; its error names the command and
// carries what it printed on stderr.
func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := busyexec.Run(ctx, func() *exec.Cmd {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = commandEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 5 * time.Second
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd
	})
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), c.cfg.Timeout)
		}
		if msg != "" {
			return "", fmt.Errorf("%w: %s: %w: %s", ErrCommand, filepath.Base(name), err, msg)
		}
		return "", fmt.Errorf("%w: %s: %w", ErrCommand, filepath.Base(name), err)
	}
	return stdout.String(), nil
}

// commandEnv is this process's environment without the tokens: sbatch
// hands its environment to the job (--export=ALL), where it would be
// stored with the job and readable by the cluster's administrators.
func commandEnv() []string {
	env := os.Environ()
	return slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "RIPPLE_AGENT_TOKEN=") || strings.HasPrefix(kv, "RIPPLE_TOKEN=")
	})
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
