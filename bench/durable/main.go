// Command durable measures what the state log (package durable)
// gives `ripple serve` back after a kill -9 and prints a table:
//
//   - the first run of a generated main of -statements statements that
//     each take -sleep (from scratch);
//   - after kill -9 and a restart: the time from starting the new process
//     until a client that reconnects with the same clientId has every
//     statement's value again (the context is restored from the log, its
//     values from the value journal, .ripple/values.db, which the kernel
//     wrote in its idle time after the first run: the kill comes 1 s
//     after the last value, well after the 150 ms of idle that start it).
//
// Run it from the repository root:
//
//	go run ./bench/durable            # -statements 1000 -sleep 5ms
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

func main() {
	bin := flag.String("bin", "", "ripple binary (default: go build ./cmd/ripple into a temp dir)")
	statements := flag.Int("statements", 1000, "statements of main")
	sleep := flag.Duration("sleep", 5*time.Millisecond, "time each statement takes")
	flag.Parse()
	if err := run(*bin, *statements, *sleep); err != nil {
		fmt.Fprintln(os.Stderr, "bench/durable:", err)
		os.Exit(1)
	}
}

var urlLine = regexp.MustCompile(`ripple: serving .+ at (ws://\S+)`)

func run(bin string, n int, sleep time.Duration) error {
	tmp, err := os.MkdirTemp("", "ripple-bench-durable-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "ripple")
		if out, err := exec.Command("go", "build", "-o", bin, "github.com/ripple-run/ripple/cmd/ripple").CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	dir := filepath.Join(tmp, "project")
	var b strings.Builder
	b.WriteString("import time\n\n\ndef main():\n")
	for i := range n {
		fmt.Fprintf(&b, "    v%d = (time.sleep(%g), %d)[1]\n", i, sleep.Seconds(), i)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// From scratch.
	cmd, url, err := start(bin, dir)
	if err != nil {
		return err
	}
	c, err := connect(ctx, url)
	if err != nil {
		return err
	}
	var created protocol.CreateContextResult
	if err := c.Call(ctx, protocol.MethodCreateContext, protocol.CreateContextParams{}, &created); err != nil {
		return err
	}
	t0 := time.Now()
	if err := c.Call(ctx, protocol.MethodPush, protocol.PushParams{ContextID: created.ContextID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil); err != nil {
		return err
	}
	if err := allValues(ctx, c, created.ContextID, n); err != nil {
		return err
	}
	scratch := time.Since(t0)
	c.Close()
	time.Sleep(time.Second) // the kernel's idle time: the journal is written
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// kill -9, restart, reconnect.
	t0 = time.Now()
	cmd, url, err = start(bin, dir)
	if err != nil {
		return err
	}
	listening := time.Since(t0)
	c, err = connect(ctx, url)
	if err != nil {
		return err
	}
	if err := allValues(ctx, c, created.ContextID, n); err != nil {
		return err
	}
	restored := time.Since(t0)
	c.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	fi, _ := os.Stat(filepath.Join(dir, ".ripple", "state.db"))
	values := fileSize(filepath.Join(dir, ".ripple", "values.db")) + fileSize(filepath.Join(dir, ".ripple", "values.db-wal"))

	fmt.Printf("%-66s %-12s %s\n", "ripple serve after kill -9 (state log)", "measured", "target")
	fmt.Printf("%-66s %-12s %s\n", fmt.Sprintf("first run from scratch (%d statements of %v)", n, sleep), scratch.Round(time.Millisecond), "")
	fmt.Printf("%-66s %-12s %s\n", "restart: process start to listening", listening.Round(time.Millisecond), "")
	fmt.Printf("%-66s %-12s %s\n", "restart: process start to every value back (context restored)", restored.Round(time.Millisecond), "<= 300 ms")
	if fi != nil {
		fmt.Printf("%-66s %-12s %s\n", ".ripple/state.db size", fmt.Sprintf("%d KiB", fi.Size()/1024), "")
	}
	fmt.Printf("%-66s %-12s %s\n", ".ripple/values.db size (with its WAL)", fmt.Sprintf("%d KiB", values/1024), "")
	return nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func start(bin, dir string) (*exec.Cmd, string, error) {
	cmd := exec.Command(bin, "serve", "--log-level", "warn", "--kernels", "1", dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := urlLine.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd, m[1], nil
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil, "", fmt.Errorf("ripple serve printed no URL line")
}

func connect(ctx context.Context, url string) (*servertest.Client, error) {
	c, _, err := servertest.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	if err := c.Call(ctx, protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "bench"}, nil); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// allValues reads notifications until context id has sent a value for n
// distinct expressions.
func allValues(ctx context.Context, c *servertest.Client, id protocol.ContextID, n int) error {
	seen := map[protocol.ExpressionID]bool{}
	for len(seen) < n {
		m, err := c.Next(ctx)
		if err != nil {
			return fmt.Errorf("%d of %d values: %w", len(seen), n, err)
		}
		if m.Method != protocol.NotifyExpressionUpdates {
			continue
		}
		var p protocol.ExpressionUpdatesParams
		if err := json.Unmarshal(m.Params, &p); err != nil || p.ContextID != id {
			continue
		}
		for _, u := range p.Updates {
			if u.Type != "" {
				seen[u.ExpressionID] = true
			}
		}
	}
	return nil
}
