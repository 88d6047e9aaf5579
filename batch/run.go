package batch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"github.com/ripple-run/ripple/engine"
)

// Options configure a batch run.
type Options struct {
	// Root is the project directory.
	Root string
	// Python is the --python flag ("" = RIPPLE_PYTHON, .venv, python3).
	Python string
	// Entries and Tests say what to run: the --entry functions, or the
	// project's tests, which pytest collects and runs in the kernels.
	Entries []string
	Tests   bool
	// PytestArgs are pytest's command line arguments for Tests: the
	// selection (PATH[::NODE]..., -k, -m) and what follows "--".
	PytestArgs []string
	// Kernels is the number of kernels, entries running at once (0 = the
	// number of CPUs).
	Kernels int
	// Timeout bounds each entry's run (0 = none).
	Timeout time.Duration
	// FailFast stops the run at the first failing entry: running entries
	// are interrupted, the others skipped.
	FailFast bool
	// ShowValues records every statement's value preview in the results.
	ShowValues bool
	// Shard runs a deterministic part of the entries (zero: all).
	Shard Shard
	// SplitCollection makes each kernel of a test run collect (import)
	// only the test modules it runs (split.go), not the whole suite: faster
	// where imports are heavy, but a test module's import side effects
	// then reach only the tests of its kernel, where under pytest every
	// module is imported before any test runs. Off by default (pytest's
	// outcomes come first): ripple run --split-collection.
	SplitCollection bool
	// Dist is how a test run's tests are grouped over the kernels, with
	// pytest-xdist's names: DistLoadFile (the default, ""): a module's tests
	// run on one kernel, its module and class fixtures set up once, as
	// under pytest; DistLoadScope: a class's tests run on one kernel, a
	// module's functions on one kernel, so a module's classes may run on
	// different kernels, each setting up the module's fixtures (faster
	// when one module holds much of a suite; a test that relies on what
	// another class of its module did first can differ from pytest);
	// DistLoad: consecutive chunks of tests, a module's tests on as many
	// kernels as are free, each setting up the module's and classes'
	// fixtures it needs (xdist's default mode: the most even, and a test
	// that relies on an earlier test of its module can differ from
	// pytest).
	Dist string
	// Terminal: the run's console is a terminal, Columns wide (0: not
	// known); pytest's console output is rendered for it (colours as
	// pytest's rules say, its width).
	Terminal bool
	Columns  int
	// Observer is told of each result, in report order, and of progress
	// (nil: nobody).
	Observer Observer
	// Logger receives the engine's logs (nil: discarded).
	Logger *slog.Logger
	// StopTimeout bounds the graceful stop of the kernels at the end
	// (0 = 10 s); past it they are killed.
	StopTimeout time.Duration
	// Agents, when set, provides the kernels instead of local children
	// (ripple run --agents-listen): the run waits for Kernels (default 1)
	// of its agent kernels to be ready, then spreads the entries, or the
	// tests, over every kernel it has then (the launcher's local ones
	// included). Not with Watch.
	Agents AgentsLauncher
	// LocalKernels is the number of local kernels the Agents launcher
	// serves beside the agents' (agent.CoordinatorConfig.Local; ripple
	// run --local-kernels): entries count them as kernels of the run.
	LocalKernels int
}

// AgentsLauncher is a launcher whose kernels connect by themselves
// (agent.Coordinator).
type AgentsLauncher interface {
	engine.Launcher
	// Size is the number of engine slots it serves.
	Size() int
	// WaitKernels waits until n of its kernels are ready.
	WaitKernels(ctx context.Context, n int) error
}

// Observer follows a run; ripple run's Console implements it. Its methods
// are called from Run's goroutine, one at a time.
type Observer interface {
	// Started is told the entries the run will report, in report order,
	// and how many kernels run them.
	Started(entries []Entry, kernels int)
	// Result is told each result in report order: entry i only after
	// entries 0..i-1, whatever order they ended in.
	Result(r *Result)
	// Progress is told after each result and every few hundred
	// milliseconds.
	Progress(p Progress)
}

// Progress is how far a run is.
type Progress struct {
	Done, Total int
	// Failing counts the results so far that fail the run.
	Failing int
	Elapsed time.Duration
}

// perSlot is how many entries are pushed per kernel slot at a time: the
// one running and the next, queued behind it on the same slot, which the
// queue starts as soon as the kernel is free, without a round trip through
// the dispatcher between two entries. The price: an entry may wait behind
// a slow one on its slot while another slot is free (one entry per slot
// at most). --fail-fast pushes one per slot, so that nothing starts after
// a failure that the dispatcher has not seen.
const perSlot = 2

// clientID is the engine client a batch run connects as.
const clientID = "ripple-run"

// progressInterval is how often Observer.Progress is told while nothing
// ends (a progress bar's clock).
const progressInterval = 250 * time.Millisecond

// The groupings of Options.Dist.
const (
	DistLoadFile  = "loadfile"
	DistLoadScope = "loadscope"
	DistLoad      = "load"
)

// Run runs the entries of a project, as ripple run does: it starts an
// engine (Batch mode: a crash is reported, not retried), discovers the
// entries, keeps every kernel busy with one entry at a time (each in an
// execution context of its own, pushed as an ExplicitCall) and returns the
// report once every entry has a result. With Options.Tests it runs the
// project's tests instead, pytest in the kernels (runTests).
//
// When ctx is cancelled (Ctrl-C), Run stops the engine gracefully, marks
// the running entries interrupted and the others skipped, and returns the
// report with an error wrapping ErrInterrupted. Usage and project errors
// (ErrUsage, ErrNoEntries, ErrDiscovery, ErrProject) return no report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	kernels, err := prepare(&opts)
	if err != nil {
		return nil, err
	}
	if opts.Tests {
		return runTests(ctx, opts, kernels)
	}
	return runEntries(ctx, opts, kernels)
}

// prepare checks opts and fills in its defaults; kernels is how many
// kernels the run starts (with agents: how many agent kernels it waits
// for).
func prepare(opts *Options) (kernels int, err error) {
	if opts.Kernels < 0 {
		return 0, fmt.Errorf("%w: --kernels %d: want a positive number", ErrUsage, opts.Kernels)
	}
	if opts.Timeout < 0 {
		return 0, fmt.Errorf("%w: --timeout %s: want a positive duration", ErrUsage, opts.Timeout)
	}
	kernels = opts.Kernels
	if kernels == 0 {
		kernels = runtime.NumCPU()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if !opts.Tests {
		return kernels, nil
	}
	if len(opts.Entries) > 0 {
		return 0, fmt.Errorf("%w: --tests and --entry: run the tests or the entries, not both", ErrUsage)
	}
	if opts.ShowValues {
		// pytest runs the tests: no statement values are recorded
		// (its report of a failure shows the assertion's values).
		return 0, fmt.Errorf("%w: --show-values shows the statements' values of --entry runs; with --tests, pytest's report of a failure shows its values", ErrUsage)
	}
	if opts.Agents != nil && opts.Kernels == 0 {
		kernels = 1 // agent kernels to wait for
	}
	switch opts.Dist {
	case "", DistLoadFile, DistLoadScope, DistLoad:
	default:
		return 0, fmt.Errorf("%w: --dist %q: want %s, %s or %s", ErrUsage, opts.Dist, DistLoadFile, DistLoadScope, DistLoad)
	}
	return kernels, nil
}

// runEntries is Run without Options.Tests. Its phases: newEntryEngine,
// startAndDiscover (the kernels boot while the entries are discovered),
// newDispatcher and begin (the engine's client and the project's
// modules), the dispatcher's loop, end (what did not run, the engine
// stopped).
func runEntries(ctx context.Context, opts Options, kernels int) (*Report, error) {
	started := time.Now()
	e, kernels, waitAgents, err := newEntryEngine(ctx, opts, kernels)
	if err != nil {
		return nil, err
	}
	stop := stopOnce(ctx, e, opts.StopTimeout)
	defer stop()
	entries, err := startAndDiscover(ctx, e, opts, waitAgents, started)
	if err != nil {
		return nil, err
	}
	d := newDispatcher(e, &opts, kernels, entries, started)
	if opts.Observer != nil {
		opts.Observer.Started(entries, kernels)
	}
	if err := d.begin(ctx); err != nil {
		return nil, err
	}
	d.loop(ctx)
	return d.end(stop)
}

// newEntryEngine is the engine of a run of entries, not started. With
// agents, waitAgents is how many agent kernels to wait for, and kernels
// counts the launcher's local ones too, which run entries as well.
func newEntryEngine(ctx context.Context, opts Options, kernels int) (e *engine.Engine, _, waitAgents int, _ error) {
	ecfg := engine.Config{Root: opts.Root, Python: opts.Python, Kernels: kernels,
		ExecuteTimeout: opts.Timeout, Batch: true, Logger: opts.Logger}
	if opts.Agents != nil {
		if opts.Kernels == 0 {
			kernels = 1
		}
		waitAgents = kernels
		kernels += opts.LocalKernels // the launcher's own kernels run entries too
		ecfg.Launcher, ecfg.Kernels = opts.Agents, opts.Agents.Size()
	}
	e, err := engine.New(ctx, ecfg)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%w: %w", ErrProject, err)
	}
	return e, kernels, waitAgents, nil
}

// stopOnce is the engine's graceful stop, bounded by timeout (0: 10 s),
// which acts the first time it is called.
func stopOnce(ctx context.Context, e *engine.Engine, timeout time.Duration) func() error {
	stopped := false
	return func() error {
		if stopped {
			return nil
		}
		stopped = true
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		return e.Stop(sctx)
	}
}

// startAndDiscover starts the engine's kernels (and waits for the agents'
// kernels) while the entries are discovered: Start returns once every
// slot has a kernel ready. It returns the entries of the shard.
func startAndDiscover(ctx context.Context, e *engine.Engine, opts Options, waitAgents int, started time.Time) ([]Entry, error) {
	type discovered struct {
		entries []Entry
		err     error
	}
	found := make(chan discovered, 1)
	go func() {
		entries, err := Discover(ctx, e.Python(), e.Root(), DiscoverOptions{Entries: opts.Entries})
		found <- discovered{entries, err}
	}()
	startErr := e.Start(ctx)
	if startErr == nil && opts.Agents != nil {
		opts.Logger.Info("waiting for agent kernels", "kernels", waitAgents)
		if startErr = opts.Agents.WaitKernels(ctx, waitAgents); startErr != nil && ctx.Err() == nil {
			startErr = fmt.Errorf("agents: %w", startErr)
		}
	}
	opts.Logger.Debug("kernels started", "after", time.Since(started), "err", startErr)
	disc := <-found
	opts.Logger.Debug("entries discovered", "after", time.Since(started), "entries", len(disc.entries), "err", disc.err)
	if startErr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: while the kernels started", ErrInterrupted)
		}
		return nil, fmt.Errorf("%w: %w", ErrProject, startErr)
	}
	entries, err := disc.entries, disc.err
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: during discovery", ErrInterrupted)
		}
		return nil, err
	}
	if !opts.Shard.All() {
		entries = slices.DeleteFunc(entries, func(en Entry) bool { return !opts.Shard.Has(en.ID()) })
	}
	return entries, nil
}
