package engine_test

import (
	"sync"
	"testing"

	"github.com/ripple-run/ripple/engine"
	"github.com/ripple-run/ripple/kernel"
	"github.com/ripple-run/ripple/protocol"
)

// wrapLauncher is the local launcher under another name, recording what
// the engine asked of it.
type wrapLauncher struct {
	mu    sync.Mutex
	sizes []int // guarded by mu: cfg.Size of each Kernels call
}

func (*wrapLauncher) Name() string { return "wrapped" }

func (l *wrapLauncher) Kernels(cfg kernel.PoolConfig) engine.Kernels {
	l.mu.Lock()
	l.sizes = append(l.sizes, cfg.Size)
	l.mu.Unlock()
	return engine.LocalLauncher{}.Kernels(cfg)
}

// The engine takes its kernels from Config.Launcher: one pool of the
// configured size, whose kernels run the contexts, and runtime/status
// names the launcher of each kernel.
func TestLauncherProvidesTheKernels(t *testing.T) {
	t.Parallel()
	l := &wrapLauncher{}
	h := setup(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper}, engine.Config{Kernels: 2, Launcher: l})
	id, r := h.newContext("main:main")
	if r.failed != nil {
		t.Fatalf("run failed: %+v", r.failed)
	}
	expect(t, "z", r.updates.Values()["main:main/z"], "35")
	l.mu.Lock()
	sizes := append([]int(nil), l.sizes...)
	l.mu.Unlock()
	expect(t, "pool sizes asked of the launcher", sizes, []int{2})
	st, err := h.e.Status(h.ctx)
	must(t, err)
	if len(st.Kernels) != 2 {
		t.Fatalf("status has %d kernels, want 2: %+v", len(st.Kernels), st)
	}
	served := false
	for _, k := range st.Kernels {
		if k.Launcher != "wrapped" {
			t.Errorf("kernel %d: launcher %q, want \"wrapped\"", k.ID, k.Launcher)
		}
		for _, c := range k.Contexts {
			served = served || c == id
		}
	}
	if !served {
		t.Errorf("no kernel lists the context: %+v", st.Kernels)
	}
	if st.Agents == nil || len(st.Agents) != 0 {
		t.Errorf("agents %v, want []", st.Agents)
	}
	// The default is the local launcher.
	h2 := setup(t, map[string]string{"main.py": mainWith(baseBody...), "helper.py": scenarioHelper}, engine.Config{Kernels: 1})
	st, err = h2.e.Status(h2.ctx)
	must(t, err)
	if len(st.Kernels) != 1 || st.Kernels[0].Launcher != protocol.LauncherLocal {
		t.Errorf("default launcher: %+v", st.Kernels)
	}
}
