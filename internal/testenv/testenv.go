// Package testenv holds what ripple's tests share about their environment:
// waiting for a condition until a deadline (machines are shared and noisy,
// so tests poll a condition or wait on a channel, never sleep a fixed time)
// and skipping a test whose outside requirement is missing, except under CI,
// where a missing requirement is a failure because .ci/run installs it.
//
// golang/tools' internal/testenv is the model: one place that decides how a
// test reacts to its machine.
package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// DefaultTimeout bounds Eventually when the test has no deadline of its own
// (go test -timeout 0) or when that deadline is further away.
const DefaultTimeout = 60 * time.Second

// pollInterval is how often Eventually checks its condition: short enough
// that a test does not wait noticeably longer than the event, long enough
// not to spin on a 2-core machine.
const pollInterval = 2 * time.Millisecond

// InCI reports whether the tests run under CI (.ci/run sets CI=true), where
// every outside requirement is installed and its absence is a failure.
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// NeedOrSkip skips t with the message when not under CI, and fails it
// there: CI installs every requirement, so missing one is a broken set-up,
// not a reason to skip. The message should say what is missing and what
// installs it. A skip says so loudly ("SKIPPED, NOT RUN"): a test that
// did not run must not pass unnoticed in a -v log.
func NeedOrSkip(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (required under CI)", msg)
	}
	t.Skip("SKIPPED, NOT RUN: " + msg)
}

// Deadline is the time a wait in t should give up: the earlier of the
// test binary's deadline (less a margin to report) and DefaultTimeout
// from now.
func Deadline(t testing.TB) time.Time {
	return DeadlineIn(t, DefaultTimeout)
}

// DeadlineIn is Deadline with budget in place of DefaultTimeout: for one
// wait that covers a whole suite run in another process (tens of tests,
// each with its own timeouts), which a loaded machine stretches past a
// single step's minute.
func DeadlineIn(t testing.TB, budget time.Duration) time.Time {
	limit := time.Now().Add(budget)
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := tt.Deadline(); ok {
			if d = d.Add(-5 * time.Second); d.Before(limit) {
				limit = d
			}
		}
	}
	return limit
}

// Context is a context that ends at Deadline(t) or when t ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithDeadline(context.Background(), Deadline(t))
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond until it holds, failing t with "timed out waiting
// for WHAT" at Deadline(t). what names the awaited state, as in "kernel
// 3 to be gone".
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Poll(Deadline(t), cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// EventuallyWithin is Eventually with a timeout of its own, for waits that
// must end sooner than the test's deadline (the cap of Deadline still
// applies).
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	if d := Deadline(t); d.Before(deadline) {
		deadline = d
	}
	if !Poll(deadline, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Poll checks cond every few milliseconds until it holds (true) or the
// deadline passes (false). For waits outside a test's goroutine, where
// t.Fatal must not be called.
func Poll(deadline time.Time, cond func() bool) bool {
	return PollEvery(deadline, pollInterval, cond)
}

// PollEvery is Poll checking cond every interval instead of every few
// milliseconds: for a condition that costs a request to a server or a
// process to run, which a tight loop would turn into load on a shared
// machine.
func PollEvery(deadline time.Time, interval time.Duration, cond func() bool) bool {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for !cond() {
		if !time.Now().Before(deadline) {
			return cond()
		}
		<-tick.C
	}
	return true
}
