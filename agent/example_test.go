package agent_test

import (
	"context"
	"log"

	"github.com/ripple-run/ripple/agent"
	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
)

// A coordinator whose kernels come from runtime agents (ripple serve
// --agents-listen): the engine sees slots, not where they run.
func ExampleListen() {
	ctx := context.Background()
	coord, err := agent.Listen(agent.CoordinatorConfig{Listen: "127.0.0.1:0", Token: "agent-token", Slots: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer coord.Close()
	eng, err := engine.New(ctx, engine.Config{Root: ".", Launcher: coord, Kernels: coord.Size()})
	if err != nil {
		log.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer eng.Stop(ctx)
	log.Printf("agents connect to %s", coord.Addr())
}

// An agent serving two kernels of this host to a coordinator
// (ripple agent): Run returns when ctx ends or the coordinator says
// shutdown.
func ExampleAgent_Run() {
	ctx := context.Background()
	py, err := kernel.FindPython(ctx, "", ".")
	if err != nil {
		log.Fatal(err)
	}
	a, err := agent.New(agent.Config{Coordinator: "127.0.0.1:7070", Token: "agent-token", Kernels: 2, Python: py, Root: "."})
	if err != nil {
		log.Fatal(err)
	}
	if err := a.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
