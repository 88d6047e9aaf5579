package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"time"

	"github.com/ripple-run/ripple/protocol"
	"github.com/ripple-run/ripple/server/servertest"
)

var serveURL = regexp.MustCompile(`ripple: serving .+ at (ws://\S+)`)

// serve starts `ripple serve --kernels 1 dir` and returns it with its
// WebSocket URL; stop stops it gracefully.
func serve(bin, dir string) (url string, stop func(), err error) {
	cmd := exec.Command(bin, "serve", "--kernels", "1", "--log-level", "warn", dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-first:
		if m := serveURL.FindStringSubmatch(line); m != nil {
			return m[1], stop, nil
		}
		stop()
		return "", nil, fmt.Errorf("ripple serve printed %q, want its URL line", line)
	case <-time.After(time.Minute):
		stop()
		return "", nil, errors.New("ripple serve printed no URL line within a minute")
	}
}

// saveToValueWebSocket is save-to-value against `ripple serve`: the
// client is a real WebSocket client; times are when its reader goroutine
// read each message.
func saveToValueWebSocket(bin, dir string, c config) (*samples, error) {
	s, err := newSaver(dir, c.statements)
	if err != nil {
		return nil, err
	}
	url, stop, err := serve(bin, dir)
	if err != nil {
		return nil, err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cl, _, err := servertest.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := cl.Call(ctx, protocol.MethodInitProtocolConnection, protocol.InitProtocolConnectionParams{ClientID: "bench"}, nil); err != nil {
		return nil, err
	}
	var created protocol.CreateContextResult
	if err := cl.Call(ctx, protocol.MethodCreateContext, protocol.CreateContextParams{}, &created); err != nil {
		return nil, err
	}
	if err := cl.Call(ctx, protocol.MethodPush, protocol.PushParams{ContextID: created.ContextID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})}, nil); err != nil {
		return nil, err
	}
	end := func(m servertest.Message) bool {
		return m.IsNotification() && (m.Method == protocol.NotifyExecutionComplete || m.Method == protocol.NotifyExecutionFailed)
	}
	if _, err := cl.WaitFor(ctx, end); err != nil {
		return nil, fmt.Errorf("first run: %w", err)
	}
	out := &samples{}
	for i := range c.saves + warmup {
		start, id, preview, err := s.save()
		if err != nil {
			return nil, err
		}
		event, err := cl.WaitFor(ctx, servertest.Method(protocol.NotifyFileEvent))
		if err != nil {
			return nil, fmt.Errorf("file/event: %w", err)
		}
		value, err := cl.WaitFor(ctx, func(m servertest.Message) bool {
			if !m.IsNotification() || m.Method != protocol.NotifyExpressionUpdates {
				return false
			}
			var u protocol.ExpressionUpdatesParams
			return json.Unmarshal(m.Params, &u) == nil && hasValue(u.Updates, id, preview)
		})
		if err != nil {
			return nil, fmt.Errorf("waiting for %s = %s: %w", id, preview, err)
		}
		if _, err := cl.WaitFor(ctx, end); err != nil {
			return nil, err
		}
		if i >= warmup {
			out.add(start, event.Received, value.Received)
		}
	}
	return out, nil
}
