package queuetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ripple-run/ripple/internal/leakcheck"
	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue/queuetest"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// The fake runner must see a breach of the rules, or the queue's tests
// prove nothing.
func TestRunnerReportsViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		calls []jobs.Execute // nil entry: an EnsureCompiled
		max   int
		want  string
	}{
		{"two on one slot", []jobs.Execute{{Context: "a", Slot: 0}, {Context: "b", Slot: 0}}, 0, "slot 0 already runs"},
		{"one context twice", []jobs.Execute{{Context: "a", Slot: 0}, {Context: "a", Slot: 1}}, 0, "context a already runs"},
		{"over the limit", []jobs.Execute{{Context: "a", Slot: 0}, {Context: "b", Slot: 1}}, 1, "2 Executes running, limit 1"},
		{"EnsureCompiled beside an Execute", []jobs.Execute{{Context: "a"}, {}}, 0, "EnsureCompiled started beside 1 running calls"},
		{"Execute beside EnsureCompiled", []jobs.Execute{{}, {Context: "a"}}, 0, "Execute started beside EnsureCompiled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &queuetest.Runner{MaxRunning: tt.max}
			returned := make(chan error, len(tt.calls))
			for _, e := range tt.calls {
				go func() {
					if e.Context == "" {
						returned <- r.EnsureCompiled(context.Background(), &jobs.EnsureCompiled{Modules: jobs.SetOf[jobs.Module]("m")})
					} else {
						returned <- r.Execute(context.Background(), &e)
					}
				}()
				if _, err := r.Next(t.Context()); err != nil { // one after the other
					t.Fatal(err)
				}
			}
			v := r.Violations()
			if len(v) != 1 || !strings.Contains(v[0], tt.want) {
				t.Errorf("violations %q, want one containing %q", v, tt.want)
			}
			for _, c := range r.Active() {
				c.Finish(nil)
			}
			for range tt.calls {
				if err := <-returned; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestRunnerCalls(t *testing.T) {
	t.Parallel()
	r := &queuetest.Runner{ReturnOnCancel: true}
	ctx, cancel := context.WithCancelCause(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- r.Execute(ctx, &jobs.Execute{Context: "a", Slot: 2}) }()
	c, err := r.Next(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c.Seq != 1 || c.Kind != jobs.KindExecute || c.Execute.Context != "a" || c.Started.IsZero() {
		t.Fatalf("call %+v", c)
	}
	cancel(jobs.ErrInterrupted)
	if err := <-returned; !errors.Is(err, jobs.ErrInterrupted) {
		t.Fatalf("ReturnOnCancel returned %v", err)
	}
	<-c.Done()
	if !errors.Is(c.Err(), jobs.ErrInterrupted) || c.Ended().Before(c.Started) {
		t.Fatalf("result %v at %v", c.Err(), c.Ended())
	}
	if c.Finish(nil) {
		t.Fatal("Finish of a returned call reported true")
	}
	if n := len(r.Active()); n != 0 {
		t.Fatalf("%d active calls", n)
	}
	if v := r.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
}

func TestRecorder(t *testing.T) {
	t.Parallel()
	var rec queuetest.Recorder
	rec.OnEnd(jobs.Record{ID: 1, State: jobs.StateDone})
	rec.OnEnd(jobs.Record{ID: 2, State: jobs.StateFailed})
	rec.OnEnd(jobs.Record{ID: 1, State: jobs.StateCancelled})
	if d := rec.Duplicates(); len(d) != 1 || d[0] != 1 {
		t.Fatalf("duplicates %v, want [1]", d)
	}
	if r, err := rec.Wait(t.Context(), 2); err != nil || r.State != jobs.StateFailed {
		t.Fatalf("Wait(2) = %v, %v", r.State, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := rec.Wait(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait for a job never reported: %v", err)
	}
	if n := len(rec.Records()); n != 3 {
		t.Fatalf("%d records", n)
	}
}
