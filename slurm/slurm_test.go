package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/agent"
)

// Unit tests of the command wrapping with stand-in scripts for sbatch,
// squeue and scancel (what they print, how they fail). The real commands
// against a one-node cluster: tests/slurm_test.go.

// fakeCommands writes scripts named sbatch, squeue and scancel into a
// directory and returns a Config that uses them.
func fakeCommands(t *testing.T, scripts map[string]string) Config {
	t.Helper()
	bin := t.TempDir()
	cfg := Config{Dir: filepath.Join(t.TempDir(), "jobs")}
	for _, name := range []string{"sbatch", "squeue", "scancel"} {
		body, ok := scripts[name]
		if !ok {
			body = "exit 0"
		}
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		switch name {
		case "sbatch":
			cfg.Sbatch = p
		case "squeue":
			cfg.Squeue = p
		case "scancel":
			cfg.Scancel = p
		}
	}
	return cfg
}

func TestSubmitWritesScriptAndParsesID(t *testing.T) {
	// Not parallel: t.Setenv.
	args := filepath.Join(t.TempDir(), "args")
	cfg := fakeCommands(t, map[string]string{
		// sbatch's arguments and its environment's token, for the test;
		// --parsable prints ID;CLUSTER after a warning on stderr.
		"sbatch": `echo "$@" > ` + args + `; echo "token=$RIPPLE_AGENT_TOKEN" >> ` + args + `; echo "sbatch: warning: something" >&2; echo "42;cluster1"`,
	})
	cfg.Args = []string{"--partition=debug"}
	t.Setenv("RIPPLE_AGENT_TOKEN", "secret-token")
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := c.Submit(context.Background(), agent.Job{Name: "ripple-agent-x-1", Kernels: 2,
		Command: []string{"/opt/ripple", "agent", "--token-file", "/p/agent token", "--root", "/p/it's"}})
	if err != nil {
		t.Fatal(err)
	}
	if sub.ID != "42" || sub.Output != filepath.Join(cfg.Dir, "ripple-agent-x-1.out") {
		t.Fatalf("submitted %+v", sub)
	}
	b, _ := os.ReadFile(args)
	got := string(b)
	for _, want := range []string{"--parsable", "--job-name=ripple-agent-x-1", "--cpus-per-task=2", "--partition=debug", filepath.Join(cfg.Dir, "ripple-agent-x-1.sh"), "token=\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("sbatch got %q, want %q in it", got, want)
		}
	}
	script, _ := os.ReadFile(filepath.Join(cfg.Dir, "ripple-agent-x-1.sh"))
	if !strings.Contains(string(script), `exec '/opt/ripple' 'agent' '--token-file' '/p/agent token' '--root' '/p/it'\''s'`) {
		t.Errorf("script:\n%s", script)
	}
	if fi, _ := os.Stat(cfg.Dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("job directory mode %v, want 0700", fi.Mode().Perm())
	}
}

func TestCommandErrorsNameTheCommand(t *testing.T) {
	t.Parallel()
	cfg := fakeCommands(t, map[string]string{
		"sbatch":  `echo "sbatch: error: invalid partition specified: nosuch" >&2; exit 1`,
		"squeue":  `echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2; exit 1`,
		"scancel": `sleep 5`,
	})
	cfg.Timeout = 100 * time.Millisecond
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Submit(context.Background(), agent.Job{Name: "j", Kernels: 1, Command: []string{"x"}})
	if !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "sbatch: exit status 1: sbatch: error: invalid partition") {
		t.Errorf("sbatch: %v", err)
	}
	_, err = c.States(context.Background(), []string{"1"})
	if !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Errorf("squeue: %v", err)
	}
	if err := c.Cancel(context.Background(), "1"); !errors.Is(err, ErrCommand) || !strings.Contains(err.Error(), "deadline exceeded after 100ms") {
		t.Errorf("scancel past its timeout: %v", err)
	}
}

func TestStates(t *testing.T) {
	t.Parallel()
	cfg := fakeCommands(t, map[string]string{
		"squeue": `printf '7|RUNNING|None\n8|PENDING|Resources\n9|CANCELLED|None\n99|RUNNING|None\n'`,
	})
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.States(context.Background(), []string{"7", "8", "9", "10"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]agent.JobState{
		"7": {State: "RUNNING", Reason: "None"},
		"8": {State: "PENDING", Reason: "Resources"},
		"9": {State: "CANCELLED", Reason: "None", Ended: true},
	}
	if len(st) != len(want) {
		t.Fatalf("states %+v, want %+v (10 unlisted: ended; 99 not asked for)", st, want)
	}
	for id, w := range want {
		if st[id] != w {
			t.Errorf("job %s: %+v, want %+v", id, st[id], w)
		}
	}

	// Every id unknown: squeue fails so; they all ended.
	cfg = fakeCommands(t, map[string]string{"squeue": `echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1`})
	c, _ = New(cfg)
	if st, err := c.States(context.Background(), []string{"5"}); err != nil || len(st) != 0 {
		t.Fatalf("unknown ids: %v, %v; want none listed", st, err)
	}
}

func TestEnded(t *testing.T) {
	t.Parallel()
	for st, want := range map[string]bool{
		"PENDING": false, "RUNNING": false, "CONFIGURING": false, "SUSPENDED": false, "REQUEUED": false,
		"COMPLETING": true, "COMPLETED": true, "CANCELLED": true, "CANCELLED+": true, "TIMEOUT": true,
		"PREEMPTED": true, "FAILED": true, "NODE_FAIL": true, "OUT_OF_MEMORY": true, "BOOT_FAIL": true, "DEADLINE": true,
	} {
		if Ended(st) != want {
			t.Errorf("Ended(%s) = %v, want %v", st, !want, want)
		}
	}
}

func TestNewNamesMissingCommand(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Dir: t.TempDir(), Sbatch: "/nonexistent/sbatch"})
	if err == nil || !strings.Contains(err.Error(), "sbatch not found") {
		t.Fatalf("New: %v", err)
	}
}

// A command file still open for writing somewhere (a process forked while
// it was being written holds it until it execs: golang.org/issue/22315)
// fails to start with ETXTBSY for a moment; the command is tried again.
func TestCommandBusyIsRetried(t *testing.T) {
	t.Parallel()
	cfg := fakeCommands(t, map[string]string{"squeue": `printf '7|RUNNING|None\n'`})
	w, err := os.OpenFile(cfg.Squeue, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(30*time.Millisecond, func() { w.Close() })
	defer release.Stop()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.States(context.Background(), []string{"7"})
	if err != nil || st["7"].State != "RUNNING" {
		t.Fatalf("squeue while its file was busy: %+v, %v", st, err)
	}
}
