package jobs_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ripple-run/ripple/jobs"
)

func TestFinalState(t *testing.T) {
	t.Parallel()
	runErr := errors.New("kernel died: signal 9")
	tests := []struct {
		name          string
		runErr, cause error
		want          jobs.State
	}{
		{"success", nil, nil, jobs.StateDone},
		{"success despite a late cancel", nil, jobs.ErrInterrupted, jobs.StateDone},
		{"failure", runErr, nil, jobs.StateFailed},
		{"gave up after an edit", runErr, jobs.ErrEdited, jobs.StateSuperseded},
		{"gave up after a push or pop", runErr, jobs.ErrStackChanged, jobs.StateSuperseded},
		{"gave up after a recompute", runErr, jobs.ErrRecomputed, jobs.StateSuperseded},
		{"interrupted", runErr, jobs.ErrInterrupted, jobs.StateCancelled},
		{"context destroyed", runErr, jobs.ErrContextDestroyed, jobs.StateCancelled},
		{"shutdown", runErr, jobs.ErrShutdown, jobs.StateCancelled},
		{"timeout", runErr, jobs.ErrTimeout, jobs.StateCancelled},
		{"wrapped superseded cause", runErr, fmt.Errorf("pass 3: %w", jobs.ErrEdited), jobs.StateSuperseded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := jobs.FinalState(tt.runErr, tt.cause)
			if got != tt.want {
				t.Fatalf("FinalState(%v, %v) = %v, want %v", tt.runErr, tt.cause, got, tt.want)
			}
			if !got.IsFinal() {
				t.Fatalf("%v is not final", got)
			}
		})
	}
}

func TestSupersededClass(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{jobs.ErrEdited, jobs.ErrStackChanged, jobs.ErrRecomputed} {
		if !errors.Is(cause, jobs.ErrSuperseded) {
			t.Errorf("%v is not in the superseded class", cause)
		}
	}
	for _, cause := range []error{jobs.ErrInterrupted, jobs.ErrContextDestroyed, jobs.ErrShutdown, jobs.ErrTimeout} {
		if errors.Is(cause, jobs.ErrSuperseded) {
			t.Errorf("%v is in the superseded class", cause)
		}
	}
}

func TestStateStrings(t *testing.T) {
	t.Parallel()
	want := map[jobs.State]string{jobs.StateQueued: "queued", jobs.StateRunning: "running",
		jobs.StateDone: "done", jobs.StateFailed: "failed", jobs.StateCancelled: "cancelled",
		jobs.StateSuperseded: "superseded", 0: "State(0)"}
	for s, name := range want {
		if s.String() != name {
			t.Errorf("%d.String() = %q, want %q", s, s.String(), name)
		}
		if s.IsFinal() != (s >= jobs.StateDone) {
			t.Errorf("%v.IsFinal() = %v", s, s.IsFinal())
		}
	}
	if got := (jobs.ReasonEdit | jobs.ReasonVisualization).String(); got != "edit|visualization" {
		t.Errorf("reason string %q", got)
	}
	if got := (jobs.ReasonClientWrite | jobs.ReasonRestore).String(); got != "client-write|restore" {
		t.Errorf("reason string %q", got)
	}
	if got := jobs.Reason(0).String(); got != "none" {
		t.Errorf("zero reason string %q", got)
	}
}
