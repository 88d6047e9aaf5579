package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/kernel"
)

const agentUsage = `usage: ripple agent --coordinator HOST:PORT (--token-file F | --token T) [flags]

Run a runtime agent: own --kernels Python kernels on this host and serve
them to a coordinator (ripple serve --agents-listen ADDR). The agent dials
the coordinator and keeps one connection; kernels are supervised here
(signals, output capture, restarts, health checks, no orphans). While the
coordinator is unreachable the agent keeps its kernels for --reconnect-grace,
then stops them and exits 1. Plain TCP only to a loopback address;
otherwise TLS 1.3 with the coordinator's certificate pinned by
--coordinator-fingerprint (printed by the coordinator) or checked with --ca.
The agent protocol: agent/PROTOCOL.md.

Exit status: 0 after Ctrl-C, SIGTERM or the coordinator's shutdown; 1 when
the coordinator refuses the agent (a wrong token) or stays unreachable;
2 for a usage error.

flags:`

// agentCmd runs `ripple agent`.
func agentCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), agentUsage)
		fs.PrintDefaults()
	}
	coord := fs.String("coordinator", "", "the coordinator's agents `address` (host:port, its --agents-listen)")
	token := fs.String("token", "", "agent `token` (visible in ps: prefer --token-file or $RIPPLE_AGENT_TOKEN)")
	tokenFile := fs.String("token-file", "", "read the agent token from `file`")
	kernels := fs.Int("kernels", 1, "number of kernels this agent owns")
	python := fs.String("python", "", "Python `interpreter` (default: $RIPPLE_PYTHON, ROOT/.venv/bin/python, python3 on PATH)")
	root := fs.String("root", ".", "the kernels' working `directory` (where the code finds its data files)")
	fingerprint := fs.String("coordinator-fingerprint", "", "pin the coordinator's certificate: `sha256:HEX` of its public key")
	ca := fs.String("ca", "", "verify the coordinator's certificate with the CA certificates in `file` (PEM)")
	forceTLS := fs.Bool("tls", false, "use TLS on a loopback address too")
	id := fs.String("id", "", "agent `id`, held by this process while it runs (default: kept in ROOT/.ripple/agent-id-HOST, so a restarted agent is the same agent; a second agent of the same host and root gets agent-id-HOST-2, ...)")
	host := fs.String("host", "", "host `name` shown in runtime/status (default: the host name)")
	launcher := fs.String("launcher", "manual", "`launcher` shown in runtime/status (manual, slurm, ...)")
	jobID := fs.String("job-id", "", "job `id` shown in runtime/status (default: $SLURM_JOB_ID)")
	grace := fs.Duration("reconnect-grace", 60*time.Second, "how long to keep the kernels while the coordinator is unreachable")
	spare := fs.Bool("spare", true, "keep a warm spare kernel for fast restarts")
	preload := fs.String("preload", "", "installed `modules` (comma-separated) every kernel imports when it starts, before it is ready: warm kernels (pytest, for test runs)")
	logLevel := fs.String("log-level", "info", "log `level` on stderr: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "ripple agent: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageErr("unexpected arguments %q", fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageErr("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	if *coord == "" {
		return usageErr("--coordinator HOST:PORT is required")
	}
	if *kernels <= 0 {
		return usageErr("--kernels %d: want a positive number", *kernels)
	}
	if *grace <= 0 {
		return usageErr("--reconnect-grace %v: want a positive duration", *grace)
	}
	if *fingerprint != "" && *ca != "" {
		return usageErr("--coordinator-fingerprint and --ca: give one of them")
	}
	tok, err := readToken(*token, *tokenFile, "RIPPLE_AGENT_TOKEN")
	if err != nil {
		return usageErr("%v", err)
	}
	if tok == "" {
		return usageErr("no agent token: give --token-file F, --token T or $RIPPLE_AGENT_TOKEN")
	}
	dir, err := projectDir(*root)
	if err != nil {
		return usageErr("--root %s: %v", *root, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("component", "agent")
	py, err := kernel.FindPython(ctx, *python, dir)
	if err != nil {
		fmt.Fprintf(stderr, "ripple agent: %v\n", err)
		return 1
	}
	a, err := agent.New(agent.Config{
		Coordinator: *coord, Token: tok, Kernels: *kernels, Python: py, Root: dir,
		Fingerprint: *fingerprint, CAFile: *ca, ForceTLS: *forceTLS,
		ID: *id, Host: *host, Launcher: *launcher, JobID: *jobID,
		ReconnectGrace: *grace, NoSpare: !*spare, Preload: splitList(*preload), Log: log,
	})
	if err != nil {
		if errors.Is(err, agent.ErrInsecure) {
			return usageErr("%v", err)
		}
		fmt.Fprintf(stderr, "ripple agent: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "ripple agent %s: %d kernels (python %s) for coordinator %s\n", a.ID(), *kernels, py.Version, *coord)
	if err := a.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "ripple agent: %v\n", err)
		return 1
	}
	return 0
}

// splitList is a comma-separated flag's items, blanks dropped.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readToken returns the token given on the command line, in file, or in
// the environment variable env, in that order.
func readToken(flagValue, file, env string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		t := strings.TrimSpace(string(b))
		if t == "" {
			return "", fmt.Errorf("token file %s is empty", file)
		}
		return t, nil
	}
	return os.Getenv(env), nil
}

// agentsFlags are the coordinator's flags of the agents launcher (serve).
type agentsFlags struct {
	listen, token, tokenFile, cert, key *string
	slots                               *int
	tls                                 *bool
	lease, grace                        *time.Duration
	// waitAtStart (not a flag; ripple serve's): the agent slots stay open
	// until the first agent connects, for the contexts the state log
	// restores (agent.CoordinatorConfig.StartGrace).
	waitAtStart bool
}

func addAgentsFlags(fs *flag.FlagSet) *agentsFlags {
	return &agentsFlags{
		listen:    fs.String("agents-listen", "", "accept runtime agents (ripple agent) on `address` (host:port); TLS unless it is loopback. With it, serve's --kernels counts local kernels beside the agents' (default 0); run's counts the agent kernels it waits for (default 1)"),
		token:     fs.String("agents-token", "", "the agents' `token` (prefer --agents-token-file or $RIPPLE_AGENT_TOKEN)"),
		tokenFile: fs.String("agents-token-file", "", "read the agents' token from `file`"),
		slots:     fs.Int("agents-slots", 16, "how many agent kernels the coordinator serves at most"),
		tls:       fs.Bool("agents-tls", false, "use TLS for agents on a loopback address too"),
		cert:      fs.String("agents-cert", "", "TLS certificate `file` for agents (default: self-signed, its fingerprint printed at start)"),
		key:       fs.String("agents-key", "", "TLS key `file` of --agents-cert"),
		lease:     fs.Duration("agents-lease", 10*time.Second, "an agent without a heartbeat for this long is fenced"),
		grace:     fs.Duration("agents-grace", 60*time.Second, "how long a lost agent's contexts wait for it before they move to other kernels"),
	}
}

// open opens the agents launcher on --agents-listen (the slurm launcher
// with jobs' Scheduler); a non-empty message is a usage error.
func (f *agentsFlags) open(local int, localSet bool, log *slog.Logger, jobs agent.JobsConfig) (*agent.Coordinator, string) {
	if !localSet {
		local = 0
	}
	tok, err := readToken(*f.token, *f.tokenFile, "RIPPLE_AGENT_TOKEN")
	switch {
	case err != nil:
		return nil, "--agents-token-file: " + err.Error()
	case tok == "":
		return nil, "--agents-listen needs the agents' token: --agents-token-file F, --agents-token T or $RIPPLE_AGENT_TOKEN"
	case *f.slots <= 0 && jobs.Scheduler == nil:
		return nil, fmt.Sprintf("--agents-slots %d: want a positive number", *f.slots)
	case (*f.cert == "") != (*f.key == ""):
		return nil, "--agents-cert and --agents-key go together"
	case *f.lease <= time.Second:
		return nil, fmt.Sprintf("--agents-lease %v: want more than the 1 s heartbeat", *f.lease)
	case *f.grace <= 0:
		return nil, fmt.Sprintf("--agents-grace %v: want a positive duration", *f.grace)
	}
	var startGrace time.Duration
	if f.waitAtStart {
		startGrace = *f.grace
	}
	c, err := agent.Listen(agent.CoordinatorConfig{
		Listen: *f.listen, Token: tok, Slots: *f.slots, Local: local,
		TLS: *f.tls, CertFile: *f.cert, KeyFile: *f.key,
		Lease: *f.lease, Grace: *f.grace, StartGrace: startGrace, Jobs: jobs, Log: log,
	})
	if err != nil {
		return nil, err.Error()
	}
	return c, ""
}
