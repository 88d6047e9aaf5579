package testenv_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripple-run/ripple/internal/testenv"
)

func TestEventuallyWaitsForCondition(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	testenv.Eventually(t, "three polls", func() bool { return n.Add(1) >= 3 })
	if got := n.Load(); got < 3 {
		t.Fatalf("cond checked %d times, want at least 3", got)
	}
}

func TestPollGivesUpAtDeadline(t *testing.T) {
	t.Parallel()
	if testenv.Poll(time.Now().Add(20*time.Millisecond), func() bool { return false }) {
		t.Fatal("Poll reported a condition that never held")
	}
}

func TestInCI(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
	}{{"true", true}, {"1", true}, {"", false}, {"false", false}, {"0", false}} {
		t.Setenv("CI", tc.val)
		if got := testenv.InCI(); got != tc.want {
			t.Errorf("CI=%q: InCI() = %v, want %v", tc.val, got, tc.want)
		}
	}
}

func TestPollEveryChecksUntilTrue(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	if !testenv.PollEvery(testenv.Deadline(t), 5*time.Millisecond, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("PollEvery gave up on a condition that holds on the third check")
	}
	if testenv.PollEvery(time.Now().Add(20*time.Millisecond), 5*time.Millisecond, func() bool { return false }) {
		t.Fatal("PollEvery reported a condition that never held")
	}
}
