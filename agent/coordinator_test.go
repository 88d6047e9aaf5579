package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
)

const testToken = "coordinator-test-token"

// setup starts a coordinator with agent slots only and no engine behind
// them; it is stopped when the test ends.
func setup(t *testing.T, cfg CoordinatorConfig) (*Coordinator, *slots) {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	cfg.Token = testToken
	c, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Kernels(kernel.PoolConfig{}).(*slots)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	return c, s
}

// fakeAgent speaks the agent protocol by hand.
type fakeAgent struct {
	t     *testing.T
	conn  net.Conn
	fr    *frameReader
	epoch uint32
}

func dialFake(t *testing.T, addr string, h hello) (*fakeAgent, frame) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fa := &fakeAgent{t: t, conn: conn, fr: newFrameReader(conn)}
	p, _ := json.Marshal(h)
	fa.write(frame{kind: kindHello, payload: p})
	f := fa.next()
	if f.kind == kindWelcome {
		var w welcome
		json.Unmarshal(f.payload, &w)
		fa.epoch = w.Epoch
	}
	return fa, f
}

func goodHello(id string) hello {
	return hello{Token: testToken, AgentID: id, RunID: "run-" + id, Host: "host-" + id, Launcher: "manual", Kernels: 1,
		Protocol: ProtocolVersion, Running: []kernelInfo{{Index: 0, Boot: 1, ID: "k-" + id, PID: 1}}}
}

func (fa *fakeAgent) write(f frame) {
	fa.t.Helper()
	fa.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := fa.conn.Write(appendFrame(nil, f)); err != nil {
		fa.t.Fatalf("write %s: %v", f.kind, err)
	}
}

func (fa *fakeAgent) next() frame {
	fa.t.Helper()
	fa.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	f, err := fa.fr.next()
	if err != nil {
		fa.t.Fatalf("read: %v", err)
	}
	f.payload = append([]byte(nil), f.payload...)
	return f
}

// nextOf reads frames until one of kind k (acks and the like are skipped).
func (fa *fakeAgent) nextOf(k kind) frame {
	fa.t.Helper()
	for {
		if f := fa.next(); f.kind == k {
			return f
		}
	}
}

func errorText(t *testing.T, f frame) string {
	t.Helper()
	var m errorMsg
	if err := json.Unmarshal(f.payload, &m); err != nil {
		t.Fatalf("%s frame: %v", f.kind, err)
	}
	return m.Error
}

func TestFrameRoundTrip(t *testing.T) {
	t.Parallel()
	in := frame{kind: kindOut, kernel: 3, boot: 7, epoch: 9, id: 1 << 40, payload: []byte("hello\n")}
	fr := newFrameReader(strings.NewReader(string(appendFrame(appendFrame(nil, in), frame{kind: kindAck}))))
	got, err := fr.next()
	if err != nil || got.kind != in.kind || got.kernel != 3 || got.boot != 7 || got.epoch != 9 || got.id != in.id || string(got.payload) != "hello\n" {
		t.Fatalf("got %+v, %v", got, err)
	}
	if got, err := fr.next(); err != nil || got.kind != kindAck || len(got.payload) != 0 {
		t.Fatalf("second frame %+v, %v", got, err)
	}
	if _, err := fr.next(); err != io.EOF {
		t.Fatalf("at the end: %v, want EOF", err)
	}
	bad := appendFrame(nil, frame{kind: kindAck})
	bad[4] = 200
	if _, err := newFrameReader(strings.NewReader(string(bad))).next(); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "unknown frame kind 200") {
		t.Fatalf("unknown kind: %v", err)
	}
}

// A wrong token, a first frame that is not hello and a hello that is not
// JSON are each refused with a message naming the fault; the coordinator
// goes on and welcomes the next good agent.
func TestCoordinatorRefusesBadHellos(t *testing.T) {
	t.Parallel()
	c, _ := setup(t, CoordinatorConfig{})
	h := goodHello("a")
	h.Token = "wrong"
	if _, f := dialFake(t, c.Addr(), h); f.kind != kindRefused || !strings.Contains(errorText(t, f), "wrong agent token") {
		t.Fatalf("wrong token: %s %s", f.kind, f.payload)
	}

	conn, err := net.Dial("tcp", c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fa := &fakeAgent{t: t, conn: conn, fr: newFrameReader(conn)}
	fa.write(frame{kind: kindHeartbeat})
	if f := fa.next(); f.kind != kindRefused || !strings.Contains(errorText(t, f), "first frame is heartbeat, want hello") {
		t.Fatalf("heartbeat first: %s %s", f.kind, f.payload)
	}

	conn2, err := net.Dial("tcp", c.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	fa = &fakeAgent{t: t, conn: conn2, fr: newFrameReader(conn2)}
	fa.write(frame{kind: kindHello, payload: []byte("{not json")})
	if f := fa.next(); f.kind != kindRefused || !strings.Contains(errorText(t, f), "hello is not valid JSON") {
		t.Fatalf("bad JSON: %s %s", f.kind, f.payload)
	}

	h = goodHello("b")
	h.Kernels = 99
	if _, f := dialFake(t, c.Addr(), h); f.kind != kindRefused || !strings.Contains(errorText(t, f), "no free kernel slots") {
		t.Fatalf("too many kernels: %s %s", f.kind, f.payload)
	}

	if _, f := dialFake(t, c.Addr(), goodHello("c")); f.kind != kindWelcome {
		t.Fatalf("good hello: %s %s", f.kind, f.payload)
	}
}

// A frame for a kernel index the agent does not have is answered with an
// error naming it (the connection stays); a malformed frame closes that
// connection only.
func TestCoordinatorUnknownKernelAndMalformedFrame(t *testing.T) {
	t.Parallel()
	c, s := setup(t, CoordinatorConfig{})
	fa, f := dialFake(t, c.Addr(), goodHello("a"))
	if f.kind != kindWelcome {
		t.Fatalf("hello: %s %s", f.kind, f.payload)
	}
	fa.write(frame{kind: kindOut, kernel: 5, boot: 1, epoch: fa.epoch, id: 1, payload: []byte("x")})
	if msg := errorText(t, fa.nextOf(kindError)); !strings.Contains(msg, "unknown kernel index 5") {
		t.Fatalf("unknown kernel: %q", msg)
	}
	fa.write(frame{kind: kindHeartbeat, epoch: fa.epoch, payload: []byte(`{}`)})
	fa.nextOf(kindAck) // the connection serves on

	// A frame whose header says it is 2 bytes long.
	raw := appendFrame(nil, frame{kind: kindHeartbeat, epoch: fa.epoch})
	raw[3] = 2
	fa.conn.Write(raw)
	fa.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		if _, err := fa.fr.next(); err != nil {
			break // closed by the coordinator
		}
	}
	if _, f := dialFake(t, c.Addr(), goodHello("b")); f.kind != kindWelcome {
		t.Fatalf("after a malformed frame: %s %s", f.kind, f.payload)
	}
	if n := len(s.Agents()); n != 2 {
		t.Fatalf("%d agents listed, want 2 (a suspended, b)", n)
	}
}

// An agent that stops sending heartbeats is fenced when its lease
// expires: its kernel's slot is suspended and every later frame of that
// connection is refused with fenced.
func TestCoordinatorLeaseExpiryFences(t *testing.T) {
	t.Parallel()
	c, s := setup(t, CoordinatorConfig{Lease: 200 * time.Millisecond, Heartbeat: 50 * time.Millisecond})
	fa, f := dialFake(t, c.Addr(), goodHello("a"))
	if f.kind != kindWelcome {
		t.Fatalf("hello: %s %s", f.kind, f.payload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := s.Kernel(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	<-k.Done() // ended by the fence
	if !errors.Is(k.Err(), kernel.ErrStopped) || !strings.Contains(k.Err().Error(), "lease expired") {
		t.Fatalf("kernel ended with %v", k.Err())
	}
	fa.write(frame{kind: kindRes, kernel: 0, boot: 1, epoch: fa.epoch, id: 1, payload: []byte(`{"status":"ok"}`)})
	if msg := errorText(t, fa.nextOf(kindFencedMsg)); !strings.Contains(msg, "fenced") {
		t.Fatalf("fenced: %q", msg)
	}
	if s.fencedFrames.Load() != 1 {
		t.Fatalf("%d fenced frames, want 1", s.fencedFrames.Load())
	}
	if st := s.Status(); len(st) != 1 || st[0].State != "suspended" {
		t.Fatalf("status %+v, want the slot suspended", st)
	}
}

// A plain connection to an address that is not loopback is refused
// before any dial, naming the flags that would make it safe.
func TestAgentRefusesUnpinnedRemote(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Coordinator: "192.0.2.10:7443", Token: "t", Root: t.TempDir(), ID: "x"})
	if !errors.Is(err, ErrInsecure) || !strings.Contains(err.Error(), "--coordinator-fingerprint") {
		t.Fatalf("got %v", err)
	}
	if _, err := New(Config{Coordinator: "192.0.2.10:7443", Token: "t", Root: t.TempDir(), ID: "x", Fingerprint: "sha256:abc"}); err == nil ||
		!strings.Contains(err.Error(), "64 hex digits") {
		t.Fatalf("short fingerprint: %v", err)
	}
}

// An agent that does not read is too slow: once its outbox is full the
// coordinator drops it (handled as lost) instead of blocking, and every
// send returns at once.
func TestCoordinatorDropsSlowAgent(t *testing.T) {
	t.Parallel()
	c, s := setup(t, CoordinatorConfig{Outbox: 4})
	_, f := dialFake(t, c.Addr(), goodHello("slow")) // and never reads again
	if f.kind != kindWelcome {
		t.Fatalf("hello: %s %s", f.kind, f.payload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := s.Kernel(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	conn := s.agents["slow"].conn
	s.mu.Unlock()
	big := make([]byte, 1<<20)
	var sendErr error
	for i := 0; i < 1000 && sendErr == nil; i++ {
		sendErr = conn.send(frame{kind: kindReq, id: uint64(i + 1), payload: big})
	}
	if sendErr == nil || !strings.Contains(sendErr.Error(), "outbox full") {
		t.Fatalf("1000 MiB to an agent that does not read: %v", sendErr)
	}
	<-k.Done()
	if !errors.Is(k.Err(), kernel.ErrStopped) || !strings.Contains(k.Err().Error(), "agent host-slow lost") {
		t.Fatalf("kernel ended with %v", k.Err())
	}
}

// StartGrace (ripple serve after a restart): before any agent has
// connected the agent slots are open and a run waits, saying why; the
// first agent takes slot 0, the run waiting there gets its kernel, and
// the slots no agent serves close (a run on one fails at once, so its
// context moves).
func TestCoordinatorStartGraceKeepsSlotsOpen(t *testing.T) {
	t.Parallel()
	_, s := setup(t, CoordinatorConfig{Slots: 2, StartGrace: time.Hour})
	var said atomic.Value
	s.ReportWaits(func(slot int, detail string) { said.Store(detail) })
	if s.Retired(0) || s.Retired(1) {
		t.Fatal("agent slots closed before any agent connected")
	}
	done := callAsync(s, 0)
	testenv.Eventually(t, "the wait said", func() bool {
		d, _ := said.Load().(string)
		return strings.Contains(d, "no agent has connected")
	})
	fa, f := dialFake(t, s.c.Addr(), goodHello("first"))
	if f.kind != kindWelcome {
		t.Fatalf("hello: %s %s", f.kind, f.payload)
	}
	req := fa.nextOf(kindReq)
	fa.write(frame{kind: kindRes, kernel: 0, boot: 1, epoch: fa.epoch, id: req.id, payload: []byte(`{"status":"ok","result":{}}`)})
	if err := <-done; err != nil {
		t.Fatalf("the run that waited for the first agent: %v", err)
	}
	if !s.Retired(1) {
		t.Fatal("slot 1, served by no agent, is still open once an agent connected")
	}
	if _, err := s.Call(context.Background(), 1, "execute", map[string]any{}, nil); !errors.Is(err, kernel.ErrSlotRetired) {
		t.Fatalf("a run on slot 1: %v, want ErrSlotRetired (its context moves)", err)
	}
}
