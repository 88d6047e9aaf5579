package queue_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
)

// printRunner stands in for the engine's kernel pool.
type printRunner struct{}

func (printRunner) EnsureCompiled(_ context.Context, e *jobs.EnsureCompiled) error {
	fmt.Println("compile", e.Modules)
	return nil
}

func (printRunner) Execute(_ context.Context, e *jobs.Execute) error {
	fmt.Println("run", e.Context, e.Expressions)
	return nil
}

// A push becomes EnsureCompiled(bottom module) and an Execute of the
// context; the EnsureCompiled runs first (rule 5).
func Example() {
	ctx := context.Background()
	var (
		mu    sync.Mutex
		ended []string
	)
	q := queue.New(printRunner{}, queue.Options{OnEnd: func(r jobs.Record) {
		mu.Lock()
		defer mu.Unlock()
		ended = append(ended, fmt.Sprintf("job %d %s %s", r.ID, r.Kind, r.State))
	}})
	if err := q.Start(ctx); err != nil {
		panic(err)
	}
	defer q.Stop(ctx)

	contexts := jobs.Contexts{"ctx-1": {Slot: 0, BottomModule: "main"}}
	plan, err := jobs.Push{Context: "ctx-1"}.Plan(contexts)
	if err != nil {
		panic(err)
	}
	if err := q.Apply(plan); err != nil {
		panic(err)
	}
	if err := q.WaitIdle(ctx); err != nil {
		panic(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range ended {
		fmt.Println(e)
	}
	// Output:
	// compile {main}
	// run ctx-1 all
	// job 2 EnsureCompiled done
	// job 1 Execute done
}
