package engine

import (
	"context"
	"encoding/json"

	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// Launcher is where the engine's kernels come from (docs/scale-out.md):
// LocalLauncher, children of this process (the default), or the agent
// package's Coordinator, whose kernels are runtime agents' (the agents
// launcher) and, with a scheduler, agents it submits as Slurm jobs (the
// slurm launcher). The engine sees slots, not launchers.
type Launcher interface {
	// Name is the launcher runtime/status names for each of its kernels
	// (PROTOCOL.md 7.5).
	Name() string
	// Kernels returns the kernels of the engine's cfg.Size slots, not
	// started: the engine starts and stops them.
	Kernels(cfg kernel.PoolConfig) Kernels
}

// Kernels are a launcher's kernel slots, as the engine calls them. The
// contract of each method is that of *kernel.Pool, the local launcher's.
type Kernels interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Size() int
	Kernel(ctx context.Context, slot int) (*kernel.Kernel, error)
	Call(ctx context.Context, slot int, method string, params any, sink kernel.Sink) (json.RawMessage, error)
	Restart(ctx context.Context, slot int, reason string) error
	StopAtBoundary(slot int)
	Retire(slot int) error
	Retired(slot int) bool
	Status() []kernel.KernelStatus
}

var _ Kernels = (*kernel.Pool)(nil)

// LocalLauncher starts kernels as children of this process (kernel.Pool).
// It is the default.
type LocalLauncher struct{}

// Name is protocol.LauncherLocal.
func (LocalLauncher) Name() string { return protocol.LauncherLocal }

// Kernels returns a kernel.Pool.
func (LocalLauncher) Kernels(cfg kernel.PoolConfig) Kernels { return kernel.NewPool(cfg) }

// AgentKernels is implemented by Kernels some of whose slots are served
// by runtime agents (the agent package's launcher): runtime/status names
// each kernel's agent and lists the agents (PROTOCOL.md 7.5).
type AgentKernels interface {
	// SlotAgent names the agent serving slot; nil for a local kernel.
	SlotAgent(slot int) *protocol.AgentRef
	// Agents lists the agents.
	Agents() []protocol.AgentStatus
}

// ContextCounting is implemented by Kernels that start kernels on demand
// and stop idle ones (the slurm launcher): an idle kernel is one no
// context is on. The engine calls CountContexts once, before Start, with
// a function that counts the contexts on a slot; it reads the contexts
// store, so it may be called from any goroutine, with any lock of the
// launcher's held (it takes none of the engine's).
type ContextCounting interface {
	CountContexts(count func(slot int) int)
}

// WaitReporting is implemented by Kernels whose runs may wait a while
// for a slot's kernel (the agent package's launchers: an agent lost
// within its grace, a batch job not started yet, no agent connected since
// the coordinator started). The engine calls ReportWaits once, before
// Start; the launcher calls report, from the waiting run's goroutine and
// with none of its locks held, whenever why a run on slot waits changes
// (detail, for people: "slurm job 17 PENDING (Resources), ..."). report
// does not block. See waiting.go.
type WaitReporting interface {
	ReportWaits(report func(slot int, detail string))
}
