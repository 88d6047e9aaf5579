package jupyter

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/ripple-run/ripple/internal/testenv"
)

// freePorts finds n free TCP ports on 127.0.0.1 (a connection file's).
func freePorts(t *testing.T, n int) []int {
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// client is a minimal Jupyter frontend on go-zeromq: shell (DEALER) and
// iopub (SUB).
type client struct {
	t     *testing.T
	sign  *signer
	shell zmq4.Socket
	iopub zmq4.Socket
	msgs  chan *Message // iopub messages, read by a goroutine that ends with the socket
	done  chan struct{}
}

func newClient(t *testing.T, ctx context.Context, info ConnectionInfo) *client {
	c := &client{t: t, sign: newSigner(info.Key), msgs: make(chan *Message, 1000), done: make(chan struct{})}
	c.shell = zmq4.NewDealer(ctx, zmq4.WithID(zmq4.SocketIdentity("test-client")))
	c.iopub = zmq4.NewSub(ctx)
	if err := c.shell.Dial(info.endpoint(info.ShellPort)); err != nil {
		t.Fatal(err)
	}
	if err := c.iopub.Dial(info.endpoint(info.IOPubPort)); err != nil {
		t.Fatal(err)
	}
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		for {
			raw, err := c.iopub.Recv()
			if err != nil {
				return
			}
			if m, err := c.sign.decode(raw.Frames); err == nil {
				c.msgs <- m
			}
		}
	}()
	return c
}

func (c *client) close() {
	c.shell.Close()
	c.iopub.Close()
	<-c.done
}

func (c *client) request(msgType string, content any) string {
	h := newHeader(msgType, "test-session")
	frames, err := c.sign.encode(nil, h, nil, nil, content)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.shell.SendMulti(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
	return h.MsgID
}

func (c *client) reply() *Message {
	raw, err := c.shell.Recv()
	if err != nil {
		c.t.Fatal(err)
	}
	m, err := c.sign.decode(raw.Frames)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// outputs are the iopub messages of request id up to its idle status.
func (c *client) outputs(id string) []*Message {
	var out []*Message
	deadline := time.After(time.Until(testenv.Deadline(c.t)))
	for {
		select {
		case m := <-c.msgs:
			var ph Header
			_ = json.Unmarshal(m.Parent, &ph)
			if ph.MsgID != id {
				continue
			}
			if m.Header.MsgType == "status" {
				var s struct {
					State string `json:"execution_state"`
				}
				_ = json.Unmarshal(m.Content, &s)
				if s.State == "idle" {
					return out
				}
				continue
			}
			out = append(out, m)
		case <-deadline:
			c.t.Fatalf("no idle status for %s", id)
		}
	}
}

// The server and the session in process, with a Go frontend: kernel
// info, an execute_result, an error that does not stay in the script, and
// every goroutine gone after Stop (leakcheck in TestMain).
func TestServerAndSessionInProcess(t *testing.T) {
	ctx := testenv.Context(t)
	p := freePorts(t, 5)
	info := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", ShellPort: p[0], IOPubPort: p[1], StdinPort: p[2],
		ControlPort: p[3], HBPort: p[4], Key: "k", SignatureScheme: "hmac-sha256"}
	sess := NewSession(SessionConfig{StateDir: t.TempDir(), Version: "test"})
	if err := sess.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer sess.Stop(context.Background())
	srv := NewServer(info, sess, nil)
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c := newClient(t, ctx, info)
	defer c.close()

	// The subscription takes a moment to reach the server: ask until
	// the iopub status of a request arrives (jupyter_client does so too).
	var infoReply *Message
	testenv.Eventually(t, "iopub to carry a kernel_info_request's status", func() bool {
		id := c.request("kernel_info_request", map[string]any{})
		infoReply = c.reply()
		select {
		case m := <-c.msgs:
			var ph Header
			_ = json.Unmarshal(m.Parent, &ph)
			return ph.MsgID == id || m.Header.MsgType == "status"
		case <-time.After(200 * time.Millisecond):
			return false
		}
	})
	var ki struct {
		Protocol string         `json:"protocol_version"`
		Language map[string]any `json:"language_info"`
	}
	if err := json.Unmarshal(infoReply.Content, &ki); err != nil || ki.Protocol != "5.3" || ki.Language["name"] != "python" {
		t.Fatalf("kernel_info_reply %s", infoReply.Content)
	}
	for len(c.msgs) > 0 {
		<-c.msgs
	}

	execute := func(code string) (string, []*Message) {
		id := c.request("execute_request", map[string]any{"code": code, "silent": false, "store_history": true})
		outs := c.outputs(id)
		var r struct {
			Status string `json:"status"`
			EName  string `json:"ename"`
		}
		rep := c.reply()
		_ = json.Unmarshal(rep.Content, &r)
		return r.Status + r.EName, outs
	}
	result := func(outs []*Message) string {
		for _, m := range outs {
			if m.Header.MsgType == "execute_result" {
				var r struct {
					Data map[string]string `json:"data"`
				}
				_ = json.Unmarshal(m.Content, &r)
				return r.Data["text/plain"]
			}
		}
		return ""
	}
	if st, outs := execute("x = 20\nx * 2 + 2"); st != "ok" || result(outs) != "42" {
		t.Fatalf("execute: %s %d outputs, result %q", st, len(outs), result(outs))
	}
	if st, _ := execute("y = x\nz = y / 0\nw = 1"); st != "errorZeroDivisionError" {
		t.Fatalf("1/0: %s", st)
	}
	// The statement that raised, and what followed it in its cell, are
	// not in the notebook: y ran, z and w did not.
	if st, outs := execute("(y, 'z' in dir(), 'w' in dir())"); st != "ok" || result(outs) != "(20, False, False)" {
		t.Fatalf("after the error: %s %q", st, result(outs))
	}
}
