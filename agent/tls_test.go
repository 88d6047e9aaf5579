package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
	"github.com/ripple-run/ripple/kernel"
)

// TLS with the coordinator's certificate pinned by fingerprint (forced on
// loopback, as a non-loopback address would have it): a wrong pin is
// refused by the agent, naming both fingerprints; the right one
// connects, and a request reaches the agent's kernel and comes back.
func TestAgentTLSFingerprint(t *testing.T) {
	t.Parallel()
	c, s := setup(t, CoordinatorConfig{TLS: true})
	if !strings.HasPrefix(c.Fingerprint(), "sha256:") {
		t.Fatalf("fingerprint %q", c.Fingerprint())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	py, err := kernel.FindPython(ctx, "", dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Coordinator: c.Addr(), Token: testToken, Kernels: 1, Python: py, Root: dir, NoSpare: true}

	bad := cfg
	bad.ID, bad.ReconnectGrace = "tls-bad", 200*time.Millisecond
	bad.Fingerprint = "sha256:" + strings.Repeat("0", 64)
	a, err := New(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(ctx); err == nil || !strings.Contains(err.Error(), "certificate fingerprint "+c.Fingerprint()) {
		t.Fatalf("wrong pin: %v", err)
	}

	good := cfg
	good.ID, good.Fingerprint = "tls-good", c.Fingerprint()
	a, err = New(good)
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("agent run: %v", err)
		}
	}()
	testenv.Eventually(t, "the agent", func() bool { return len(s.Agents()) == 1 })
	k, err := s.Kernel(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !k.IsRemote() {
		t.Fatal("slot 0's kernel is not the agent's")
	}
	repr, err := k.Repr(ctx, "6 * 7", nil)
	if err != nil || repr != "42" {
		t.Fatalf("eval through the agent over TLS: %q, %v", repr, err)
	}
	if ag := s.Agents(); len(ag) != 1 || ag[0].ID != "tls-good" {
		t.Fatalf("agents %+v", ag)
	}
}
