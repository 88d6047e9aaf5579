package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/protocol"
)

// printer is an engine.Client. The engine calls Notify with its locks
// held: it must not block nor call the engine back.
type printer struct {
	mu     sync.Mutex
	values []string
	ended  chan struct{} // closed by the first run's end
	once   sync.Once
}

func (p *printer) Notify(method string, params any) {
	switch n := params.(type) {
	case protocol.ExpressionUpdatesParams:
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, u := range n.Updates {
			if u.Payload.Type == protocol.PayloadValue {
				p.values = append(p.values, fmt.Sprintf("%s = %s", u.ExpressionID, u.Payload.Preview))
			}
		}
	case protocol.ExecutionCompleteParams, protocol.ExecutionFailedParams:
		p.once.Do(func() { close(p.ended) })
	}
}

// The package doc's start: an engine on a project, a client, a context
// that runs main:main, and the values it reports (one python3 kernel).
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "ripple-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	source := "def main():\n    x = 6\n    y = x * 5\n"
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(source), 0o644); err != nil {
		log.Fatal(err)
	}
	client := &printer{ended: make(chan struct{})}

	e, err := engine.New(ctx, engine.Config{Root: dir, Watch: true, Kernels: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := e.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer e.Stop(ctx)
	if _, err := e.Connect(ctx, "client-1", client); err != nil { // client.Notify gets notifications
		log.Fatal(err)
	}
	res, err := e.CreateContext(ctx, "client-1", protocol.CreateContextParams{})
	if err != nil {
		log.Fatal(err)
	}
	err = e.Push(ctx, "client-1", protocol.PushParams{ContextID: res.ContextID,
		StackItem: protocol.NewExplicitCall(protocol.MethodPointer{Module: "main", Name: "main"})})
	if err != nil {
		log.Fatal(err)
	}

	<-client.ended
	client.mu.Lock()
	defer client.mu.Unlock()
	for _, v := range client.values {
		fmt.Println(v)
	}
	// Output:
	// main:main/x = 6
	// main:main/y = 30
}
