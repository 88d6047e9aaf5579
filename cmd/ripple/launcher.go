package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/slurm"
)

// launcherFlags are the coordinator's flags that choose where kernels
// come from (serve and run): --launcher, the agents launcher's flags
// (agent.go) and the slurm launcher's.
type launcherFlags struct {
	agents                    *agentsFlags
	launcher                  *string
	maxKernels, kernelsPerJob *int
	idleTimeout, startTimeout *time.Duration
	sbatchArgs                stringList
	dir, advertise            *string
}

// stringList collects a repeated flag.
type stringList []string

func (l *stringList) String() string { return fmt.Sprint(*l) }
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func addLauncherFlags(fs *flag.FlagSet) *launcherFlags {
	f := &launcherFlags{
		agents:        addAgentsFlags(fs),
		launcher:      fs.String("launcher", "", "where kernels come from (a `launcher`): local (children of this process; the default), agents (runtime agents that connect to --agents-listen) or slurm (agents this process submits as Slurm jobs with sbatch)"),
		maxKernels:    fs.Int("max-kernels", 4, "with --launcher slurm: the most kernels submitted at once (ripple serve)"),
		kernelsPerJob: fs.Int("kernels-per-job", 1, "with --launcher slurm: kernels of each job's agent (one CPU each)"),
		idleTimeout:   fs.Duration("idle-timeout", 10*time.Minute, "with --launcher slurm: cancel a job whose kernels have had no context for this long"),
		startTimeout:  fs.Duration("start-timeout", 10*time.Minute, "with --launcher slurm: cancel a job whose agent has not connected this long after its submission; the runs waiting for it fail"),
		dir:           fs.String("slurm-dir", "", "with --launcher slurm: `directory` of the jobs' scripts, output and token file, on a filesystem the compute nodes share (default PROJECT_DIR/.ripple/slurm)"),
		advertise:     fs.String("agents-advertise", "", "the `address` (host:port) agents dial (default --agents-listen's, this host's name for an unspecified host)"),
	}
	fs.Var(&f.sbatchArgs, "sbatch-arg", "with --launcher slurm: an extra sbatch `argument`, e.g. --partition=gpu or --time=8:00:00 (repeatable)")
	return f
}

// open opens the launcher the flags name: nil for local kernels, else the
// coordinator of the agents or slurm launcher. root and python are the
// project's (the agents' --root and --python), local and localSet the
// --kernels flag (local kernels beside the agents'), batchKernels the
// kernels a batch run waits for (0 for serve), preload the modules the
// kernels of the Slurm jobs' agents import at start (--preload). A
// non-empty message is a usage error.
func (f *launcherFlags) open(root, python string, local int, localSet bool, batchKernels int, preload []string, log *slog.Logger) (*agent.Coordinator, string) {
	name := *f.launcher
	if name == "" {
		name = protocol.LauncherLocal
		if *f.agents.listen != "" {
			name = protocol.LauncherAgents
		}
	}
	switch name {
	case protocol.LauncherLocal:
		if *f.agents.listen != "" {
			return nil, "--agents-listen needs --launcher agents or slurm"
		}
		return nil, ""
	case protocol.LauncherAgents:
		if *f.agents.listen == "" {
			return nil, "--launcher agents needs --agents-listen ADDR"
		}
		f.agents.waitAtStart = batchKernels == 0 // ripple serve: restored contexts wait for their agents
		return f.agents.open(local, localSet, log, agent.JobsConfig{})
	case protocol.LauncherSlurm:
	default:
		return nil, fmt.Sprintf("--launcher %q: want local, agents or slurm", name)
	}
	switch {
	case *f.maxKernels <= 0:
		return nil, fmt.Sprintf("--max-kernels %d: want a positive number", *f.maxKernels)
	case *f.kernelsPerJob <= 0:
		return nil, fmt.Sprintf("--kernels-per-job %d: want a positive number", *f.kernelsPerJob)
	case *f.idleTimeout <= 0:
		return nil, fmt.Sprintf("--idle-timeout %v: want a positive duration", *f.idleTimeout)
	case *f.startTimeout <= 0:
		return nil, fmt.Sprintf("--start-timeout %v: want a positive duration", *f.startTimeout)
	}
	abs, err := projectDir(root)
	if err != nil {
		return nil, fmt.Sprintf("project directory %s: %v", root, err)
	}
	dir := *f.dir
	if dir == "" {
		dir = filepath.Join(abs, ".ripple", "slurm")
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, "--slurm-dir: " + err.Error()
	}
	cl, err := slurm.New(slurm.Config{Dir: dir, Args: f.sbatchArgs})
	if err != nil {
		return nil, err.Error()
	}
	// The jobs' agents read the token from a file of the coordinator's
	// own: made here (random unless given), mode 0600, never on a
	// command line.
	tok, err := readToken(*f.agents.token, *f.agents.tokenFile, "RIPPLE_AGENT_TOKEN")
	if err != nil {
		return nil, "--agents-token-file: " + err.Error()
	}
	if tok == "" {
		tok = randomToken()
	}
	tokenFile := filepath.Join(dir, "agent-token")
	if err := writeSecret(tokenFile, tok); err != nil {
		return nil, "the agents' token file: " + err.Error()
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, "the ripple binary the jobs run: " + err.Error()
	}
	argv := []string{exe, "agent", "--token-file", tokenFile, "--root", abs}
	if python != "" {
		argv = append(argv, "--python", python)
	}
	if len(preload) > 0 {
		argv = append(argv, "--preload", strings.Join(preload, ","))
	}
	if *f.agents.listen == "" {
		*f.agents.listen = ":0" // every interface, TLS; agents dial this host's name
	}
	*f.agents.token = tok
	slots := *f.maxKernels
	if batchKernels > 0 {
		// A batch run submits the jobs for its kernels, no more.
		slots = (batchKernels + *f.kernelsPerJob - 1) / *f.kernelsPerJob * *f.kernelsPerJob
	}
	*f.agents.slots = slots
	return f.agents.open(local, localSet, log, agent.JobsConfig{
		Scheduler: cl, Agent: argv, Advertise: *f.advertise, KernelsPerJob: *f.kernelsPerJob,
		IdleTimeout: *f.idleTimeout, StartTimeout: *f.startTimeout, Batch: batchKernels > 0,
	})
}

// writeSecret writes s to path with mode 0600 (also when the file was
// there with another mode).
func writeSecret(path, s string) error {
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := fh.Chmod(0o600); err != nil {
		fh.Close()
		return err
	}
	if _, err := fh.WriteString(s + "\n"); err != nil {
		fh.Close()
		return err
	}
	return errors.Join(fh.Sync(), fh.Close())
}

// printAgentsAddr tells on stderr where agents connect.
func printAgentsAddr(stderr io.Writer, coord *agent.Coordinator) {
	if fp := coord.Fingerprint(); fp != "" {
		fmt.Fprintf(stderr, "ripple: agents connect to %s (TLS; --coordinator-fingerprint %s)\n", coord.Addr(), fp)
	} else {
		fmt.Fprintf(stderr, "ripple: agents connect to %s (loopback, plain TCP)\n", coord.Addr())
	}
	if coord.Name() == protocol.LauncherSlurm {
		fmt.Fprintf(stderr, "ripple: kernels are Slurm jobs (sbatch) submitted when runs wait for them\n")
	}
}
