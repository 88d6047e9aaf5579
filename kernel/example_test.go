package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/ripple-run/ripple/kernel"
)

// Start one kernel in a project directory and run code in it.
func ExampleStart() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(root)

	py, err := kernel.FindPython(ctx, "", root)
	if err != nil {
		log.Fatal(err)
	}
	k, err := kernel.Start(ctx, kernel.Config{Python: py, Root: root})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Stop(ctx)

	// Output arrives in chunks of any size while the code runs; all of it
	// before Eval returns.
	var out strings.Builder
	sink := kernel.SinkFuncs{OutputFunc: func(s kernel.Stream, b []byte) { out.Write(b) }}
	if err := k.Eval(ctx, "total = 6 * 7\nprint(total)", sink); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stdout: %s", out.String())
	// State persists between requests.
	v, _ := k.Repr(ctx, "total + 1", nil)
	fmt.Println("repr:", v)
	// Output:
	// stdout: 42
	// repr: 43
}

// A pool runs one kernel per slot, replaces kernels that die, and reports
// each replacement.
func ExamplePool() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "project")
	defer os.RemoveAll(root)
	py, err := kernel.FindPython(ctx, "", root)
	if err != nil {
		log.Fatal(err)
	}
	restarted := make(chan kernel.RestartEvent, 1)
	pool := kernel.NewPool(kernel.PoolConfig{
		Kernel: kernel.Config{Python: py, Root: root, LogDir: root},
		Size:   1,
		OnReady: func(ctx context.Context, slot int, k *kernel.Kernel) error {
			return k.Eval(ctx, "greeting = 'ready'", nil) // e.g. install module sources
		},
		OnRestart: func(ev kernel.RestartEvent) { restarted <- ev },
	})
	if err := pool.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer pool.Stop(ctx)

	err = pool.Eval(ctx, 0, "import os; os._exit(3)", nil)
	var exit *kernel.ExitError
	if errors.As(err, &exit) {
		fmt.Println("died:", exit.Status())
	}
	ev := <-restarted
	fmt.Println("restart:", ev.Reason, "state preserved:", ev.StatePreserved)
	raw, _ := pool.Call(ctx, 0, "eval", map[string]string{"code": "greeting", "mode": "eval"}, nil)
	fmt.Println(string(raw))
	// Output:
	// died: exit status 3
	// restart: kernel died: exit status 3 state preserved: false
	// {"repr":"'ready'"}
}
