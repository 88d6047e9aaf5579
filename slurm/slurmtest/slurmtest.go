// Package slurmtest brings up a one-node Slurm cluster on this machine
// for tests and benchmarks of the slurm launcher: Debian's slurm-wlm and
// munge, the daemons in the foreground, their configuration, state, logs
// and munge's key and socket in a directory of the cluster's own, and
// SLURM_CONF pointing at it in the environment Env returns. Nothing of
// the machine's own Slurm or munge (/etc/slurm, /run/munge) is read or
// touched.
//
//	cl, err := slurmtest.Start(ctx)
//	var de *slurmtest.DaemonError
//	if errors.As(err, &de) { t.Skip(de) } // e.g. no munge in a container
//	defer cl.Stop()
//	cmd.Env = append(os.Environ(), cl.Env()...)
//
// Stop cancels every job, waits for them to end, stops the daemons and
// kills whatever is left that carries the cluster's SLURM_CONF in its
// environment (a job's processes, a slurmstepd), so nothing outlives it.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DaemonError is a daemon that could not start: its name and what it
// printed. Tests skip on it (the machine cannot run Slurm) and say why.
type DaemonError struct {
	Daemon string
	Output string
	Err    error
}

func (e *DaemonError) Error() string {
	return fmt.Sprintf("%s did not start (%v): %s", e.Daemon, e.Err, strings.TrimSpace(e.Output))
}

func (e *DaemonError) Unwrap() error { return e.Err }

// Cluster is a running one-node cluster.
type Cluster struct {
	Dir  string // everything of the cluster's
	Conf string // its slurm.conf (SLURM_CONF)

	daemons []*daemon
	stopped sync.Once
	stopErr error
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	out  *buffer
	done chan struct{}
}

// buffer is a bytes.Buffer safe for a writer goroutine and readers.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Binaries are the programs the cluster needs.
var Binaries = []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo", "scontrol"}

// Missing returns the programs of Binaries not on PATH.
func Missing() []string {
	var out []string
	for _, b := range Binaries {
		if _, err := exec.LookPath(b); err != nil {
			out = append(out, b)
		}
	}
	return out
}

// Start brings up munged, slurmctld and slurmd, and waits until the node
// takes jobs (ctx bounds the wait). A daemon that exits or does not come
// up is a *DaemonError; the cluster is then stopped already.
func Start(ctx context.Context) (*Cluster, error) {
	if m := Missing(); len(m) > 0 {
		return nil, fmt.Errorf("slurmtest: %s not on PATH (apt-get install slurm-wlm munge)", strings.Join(m, ", "))
	}
	dir, err := os.MkdirTemp("", "ripple-slurm-")
	if err != nil {
		return nil, err
	}
	// munged wants its socket's directory reachable by all (execute).
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf")}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Env is the environment the Slurm commands need: SLURM_CONF.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

func (c *Cluster) start(ctx context.Context) error {
	for _, d := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(c.Dir, d), 0o755); err != nil {
			return err
		}
	}
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	if err := os.WriteFile(filepath.Join(c.Dir, "munge.key"), key, 0o600); err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	host, _, _ = strings.Cut(host, ".")
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	socket := filepath.Join(c.Dir, "munge.socket")
	me, err := user.Current()
	if err != nil {
		return err
	}
	conf := fmt.Sprintf(slurmConf, host, socket, ports[0], ports[1], c.Dir, host, me.Username)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		return err
	}

	m, err := c.run("munged", "-F", "--key-file="+filepath.Join(c.Dir, "munge.key"), "--socket="+socket,
		"--pid-file="+filepath.Join(c.Dir, "munged.pid"), "--seed-file="+filepath.Join(c.Dir, "munged.seed"),
		"--log-file="+filepath.Join(c.Dir, "munged.log"))
	if err != nil {
		return err
	}
	if err := c.until(ctx, m, func() bool { _, err := os.Stat(socket); return err == nil }); err != nil {
		return err
	}
	ctld, err := c.run("slurmctld", "-D", "-i")
	if err != nil {
		return err
	}
	if err := c.until(ctx, ctld, func() bool { return c.command(ctx, "scontrol", "ping") == nil }); err != nil {
		return err
	}
	d, err := c.run("slurmd", "-D", "-N", "ripple1")
	if err != nil {
		return err
	}
	return c.until(ctx, d, func() bool {
		out, err := c.output(ctx, "sinfo", "--noheader", "--Node", "--format=%T")
		return err == nil && strings.TrimSpace(out) == "idle"
	})
}

// slurmConf: one node of 8 CPUs (config_overrides: whatever the
// machine has), no accounting, no cgroups (proctrack/linuxproc finds a
// job's processes by parentage), a job's processes killed 5 s after
// SIGTERM, the daemons running as this user (as root, as here and in
// CI; slurmd as another user cannot start jobs: a DaemonError or a
// failing test says so). Arguments: host, munge socket, ports, dir,
// host, user.
const slurmConf = `ClusterName=ripple
SlurmctldHost=%s(127.0.0.1)
SlurmUser=%[7]s
SlurmdUser=%[7]s
AuthType=auth/munge
AuthInfo=socket=%[2]s
CredType=cred/munge
SlurmctldPort=%d
SlurmdPort=%d
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
MailProg=/bin/true
MinJobAge=300
KillWait=5
NodeName=ripple1 NodeHostname=%[6]s NodeAddr=127.0.0.1 CPUs=8 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ripple1 Default=YES MaxTime=INFINITE State=UP
`

// run starts a daemon in the foreground, in a process group of its own.
func (c *Cluster) run(name string, args ...string) (*daemon, error) {
	d := &daemon{name: name, cmd: exec.Command(name, args...), out: &buffer{}, done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), c.Env()...)
	d.cmd.Dir = c.Dir
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		return nil, &DaemonError{Daemon: name, Err: err}
	}
	go func() {
		d.cmd.Wait()
		close(d.done)
	}()
	c.daemons = append(c.daemons, d)
	return d, nil
}

// until waits for ready, polling; the daemon's exit or ctx's end first is
// a DaemonError with its output (and its log file's end).
func (c *Cluster) until(ctx context.Context, d *daemon, ready func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !ready() {
		select {
		case <-d.done:
			return &DaemonError{Daemon: d.name, Output: d.out.String() + c.logTail(d.name), Err: fmt.Errorf("exited: %v", d.cmd.ProcessState)}
		case <-ctx.Done():
			return &DaemonError{Daemon: d.name, Output: d.out.String() + c.logTail(d.name), Err: fmt.Errorf("not ready: %w", context.Cause(ctx))}
		case <-tick.C:
		}
	}
	return nil
}

func (c *Cluster) logTail(name string) string {
	b, err := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\n" + name + ".log: " + string(b)
}

// command runs a Slurm command of the cluster's.
func (c *Cluster) command(ctx context.Context, name string, args ...string) error {
	_, err := c.output(ctx, name, args...)
	return err
}

func (c *Cluster) output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s: %w: %s", name, err, ee.Stderr)
		}
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return string(out), nil
}

// Jobs lists the cluster's jobs that are not over: id, name and state.
func (c *Cluster) Jobs(ctx context.Context) ([][3]string, error) {
	out, err := c.output(ctx, "squeue", "--noheader", "--states=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED", "--format=%i|%j|%T")
	if err != nil {
		return nil, err
	}
	var jobs [][3]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Split(l, "|"); len(f) == 3 {
			jobs = append(jobs, [3]string{f[0], f[1], f[2]})
		}
	}
	return jobs, nil
}

// JobState is squeue's state of job id ("" when squeue does not know it).
func (c *Cluster) JobState(ctx context.Context, id string) string {
	out, _ := c.output(ctx, "squeue", "--noheader", "--states=all", "--jobs="+id, "--format=%T")
	return strings.TrimSpace(out)
}

// cancelAll cancels every job and waits for them to end (bounded by ctx).
func (c *Cluster) cancelAll(ctx context.Context) {
	jobs, err := c.Jobs(ctx)
	if err != nil || len(jobs) == 0 {
		return
	}
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j[0])
	}
	_ = c.command(ctx, "scancel", ids...)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(jobs) > 0 && ctx.Err() == nil {
		<-tick.C
		jobs, _ = c.Jobs(ctx)
	}
}

// Cancel runs scancel for job id.
func (c *Cluster) Cancel(ctx context.Context, id string) error {
	return c.command(ctx, "scancel", id)
}

// Stop cancels every job, waits (up to a minute) for them to end, stops
// the daemons and kills every process left with the cluster's SLURM_CONF
// in its environment. It returns an error naming what had to be killed
// or would not go. Idempotent.
func (c *Cluster) Stop() error {
	c.stopped.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctldUp := slices.ContainsFunc(c.daemons, func(d *daemon) bool {
		select {
		case <-d.done:
			return false
		default:
			return d.name == "slurmctld"
		}
	})
	if ctldUp { // without a controller there is no job, and squeue would retry for seconds
		c.cancelAll(ctx)
	}
	// The daemons in reverse order: slurmd, slurmctld, munged.
	for i := len(c.daemons) - 1; i >= 0; i-- {
		d := c.daemons[i]
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.done
		}
	}
	if left := c.leftovers(); len(left) > 0 {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		errs = append(errs, fmt.Errorf("slurmtest: killed %d processes left behind: %v", len(left), left))
	}
	errs = append(errs, os.RemoveAll(c.Dir))
	return errors.Join(errs...)
}

// leftovers lists the processes (not this one) whose environment has the
// cluster's SLURM_CONF: daemons, slurmstepd, a job's processes.
func (c *Cluster) leftovers() []int {
	mark := []byte("SLURM_CONF=" + c.Conf + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, mark) {
			out = append(out, pid)
		}
	}
	return out
}

// freePorts returns n TCP ports free on loopback now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
