package kernel

import (
	"errors"
	"fmt"
	"testing"
)

func TestCrashStreak(t *testing.T) {
	t.Parallel()
	var c CrashStreak
	death := fmt.Errorf("eval: %w", &ExitError{KernelID: "k1", Code: 3})
	steps := []struct {
		key   string
		err   error
		retry bool
		count int
	}{
		{"a", death, true, 1},  // first death: retried
		{"b", death, true, 1},  // streaks are per key
		{"a", death, false, 2}, // second death in a row: not retried
		{"a", death, false, 3},
		{"a", nil, false, 0}, // a run that completes ends the streak
		{"a", death, true, 1},
		{"a", &RemoteError{Type: "ValueError"}, false, 0}, // a Python error ends it too
		{"a", death, true, 1},
		{"a", errors.New("some other failure"), false, 0},
	}
	for i, s := range steps {
		if got := c.Observe(s.key, s.err); got != s.retry {
			t.Errorf("step %d: Observe(%s, %v) = %v, want %v", i, s.key, s.err, got, s.retry)
		}
		if got := c.Count(s.key); got != s.count {
			t.Errorf("step %d: Count(%s) = %d, want %d", i, s.key, got, s.count)
		}
	}
	c.Observe("b", death)
	c.Reset("b") // the user edited: the next death may be retried again
	if !c.Observe("b", death) {
		t.Error("a death after Reset is not retried")
	}
}
