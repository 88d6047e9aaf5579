package jupyter

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// stdinServer is the socket a kernel's input() connects to
// (jupyter_boot.py): one JSON line {prompt, password} in, one line
// {value} or {error} out. Its goroutine (accept, then one per
// connection) ends with stop.
type stdinServer struct {
	path   string
	ln     net.Listener
	ask    func(ctx context.Context, prompt string, password bool) (string, error)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startStdin(dir string, ask func(ctx context.Context, prompt string, password bool) (string, error)) (*stdinServer, error) {
	path := filepath.Join(dir, "stdin.sock")
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		// A socket path is limited to ~100 bytes: fall back to the temp dir.
		tmp, terr := os.MkdirTemp("", "ripple-stdin-")
		if terr != nil {
			return nil, fmt.Errorf("jupyter: stdin socket: %w", err)
		}
		path = filepath.Join(tmp, "s")
		if ln, err = net.Listen("unix", path); err != nil {
			return nil, fmt.Errorf("jupyter: stdin socket: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &stdinServer{path: path, ln: ln, ask: ask, ctx: ctx, cancel: cancel}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *stdinServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *stdinServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	// The kernel closes its end when the cell is interrupted: the
	// question's context ends with the connection.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	var q struct {
		Prompt   string `json:"prompt"`
		Password bool   `json:"password"`
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &q) != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		buf := make([]byte, 1)
		_, _ = c.Read(buf) // EOF or error: the asker is gone
		cancel()
	}()
	value, err := s.ask(ctx, q.Prompt, q.Password)
	answer := map[string]string{"value": value}
	if err != nil {
		answer = map[string]string{"error": err.Error()}
	}
	b, _ := json.Marshal(answer)
	_, _ = c.Write(append(b, '\n'))
}

func (s *stdinServer) stop() {
	s.cancel()
	s.ln.Close()
	s.wg.Wait()
	_ = os.Remove(s.path)
}
