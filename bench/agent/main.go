// Command agent times the round trip of `x = 1` through a runtime agent on
// loopback against a local kernel (the target: p50 through an agent
// <= 2x local) and prints one table. It builds cmd/ripple, starts a
// coordinator in process (the agents launcher, no engine), one `ripple
// agent` process with one kernel, and a local kernel on the same
// interpreter; the two are timed in alternating blocks so that load on a
// shared machine falls on both alike.
//
//	go run ./bench/agent [-n 2000] [-python python3]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/kernel"
)

func main() {
	n := flag.Int("n", 2000, "round trips to time on each side")
	python := flag.String("python", "", "interpreter (default: what ripple finds: $RIPPLE_PYTHON, python3)")
	flag.Parse()
	if err := run(*n, *python); err != nil {
		fmt.Fprintln(os.Stderr, "bench/agent:", err)
		os.Exit(1)
	}
}

func run(n int, python string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tmp, err := os.MkdirTemp("", "ripple-bench-agent-")
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
	py, err := kernel.FindPython(ctx, python, root)
	if err != nil {
		return err
	}

	local, err := kernel.Start(ctx, kernel.Config{Python: py, Root: root})
	if err != nil {
		return err
	}
	defer local.Stop(context.Background())

	const token = "bench-agent-token"
	coord, err := agent.Listen(agent.CoordinatorConfig{Listen: "127.0.0.1:0", Token: token, Slots: 1})
	if err != nil {
		return err
	}
	defer coord.Close()
	slots := coord.Kernels(kernel.PoolConfig{})
	if err := slots.Start(ctx); err != nil {
		return err
	}
	defer slots.Stop(context.Background())
	agentDir := filepath.Join(tmp, "agent")
	os.Mkdir(agentDir, 0o755)
	cmd := exec.Command(bin, "agent", "--coordinator", coord.Addr(), "--token", token, "--kernels", "1",
		"--python", py.Path, "--root", agentDir, "--spare=false", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	var remote *kernel.Kernel
	for remote == nil {
		if ctx.Err() != nil {
			return fmt.Errorf("the agent did not connect")
		}
		if k, err := slots.Kernel(ctx, 0); err == nil {
			remote = k
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}

	eval := func(k *kernel.Kernel) (time.Duration, error) {
		start := time.Now()
		err := k.Eval(ctx, "x = 1", nil)
		return time.Since(start), err
	}
	// Warm up both, then alternate blocks of 100.
	for range 200 {
		if _, err := eval(local); err != nil {
			return err
		}
		if _, err := eval(remote); err != nil {
			return err
		}
	}
	var tl, tr []time.Duration
	for len(tl) < n {
		for range min(100, n-len(tl)) {
			d, err := eval(local)
			if err != nil {
				return err
			}
			tl = append(tl, d)
			if d, err = eval(remote); err != nil {
				return err
			}
			tr = append(tr, d)
		}
	}
	pl, pr := pct(tl, 50), pct(tr, 50)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "x = 1 round trip (%d each, python %s)\tp50\tp99\tmax\t\n", n, py.Version)
	fmt.Fprintf(w, "local kernel\t%s\t%s\t%s\t\n", us(pl), us(pct(tl, 99)), us(slices.Max(tl)))
	fmt.Fprintf(w, "through a ripple agent (loopback)\t%s\t%s\t%s\t\n", us(pr), us(pct(tr, 99)), us(slices.Max(tr)))
	fmt.Fprintf(w, "agent / local (target p50 <= 2.0x)\t%.2fx\t%.2fx\t\t\n", float64(pr)/float64(pl), float64(pct(tr, 99))/float64(pct(tl, 99)))
	return w.Flush()
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
