package batch

// collection: what a run's kernels answered to "collect", and the phase
// of testPool.run that gets every kernel to an answer the run can use:
// the kernels collect at once, kernels lost with their agent are left
// out, unittest's loader stands in for a missing pytest, a split that
// cannot be merged is collected again whole, and a usage error or an
// interruption ends the run.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// collection is the collect answers of a run's workers: answers[i] and
// errs[i] are ws[i]'s. The pool's goroutine owns it; while each runs, the
// goroutine of worker i writes answers[i] and errs[i] only.
type collection struct {
	ws      []*testWorker
	answers []*collectAnswer
	errs    []error
}

func newCollection(ws []*testWorker) *collection {
	return &collection{ws: ws, answers: make([]*collectAnswer, len(ws)), errs: make([]error, len(ws))}
}

// first is the first kernel's answer: without split collection, the
// suite (the others' must equal it), and the answer to the run's
// questions (pytest missing, a usage error, collect-only).
func (c *collection) first() *collectAnswer { return c.answers[0] }

// each runs step on the workers that need it, at once, and waits for them.
func (c *collection) each(need func(i int) bool, step func(w *testWorker) (*collectAnswer, error)) {
	var wg sync.WaitGroup
	for i, w := range c.ws {
		if !need(i) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.answers[i], c.errs[i] = step(w)
		}()
	}
	wg.Wait()
}

// err is the kernels' errors, or ErrInterrupted when ctx ended.
func (c *collection) err(ctx context.Context) error {
	if err := errors.Join(c.errs...); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: while the kernels collected", ErrInterrupted)
		}
		return err
	}
	return nil
}

// shares is each worker's share.
func (c *collection) shares() []int {
	shares := make([]int, len(c.ws))
	for i, w := range c.ws {
		shares[i] = w.share
	}
	return shares
}

// dropLost leaves out of the run the kernels whose agent was lost while
// they collected, unless none would be left: the others run their share.
// It reports whether it left any out.
func (c *collection) dropLost(log *slog.Logger) bool {
	var kw []*testWorker
	var ka []*collectAnswer
	var ke []error
	for i, w := range c.ws {
		if c.errs[i] != nil && w.agentLost(c.errs[i]) {
			log.Warn("agent lost while its kernel collected: the run goes on without it", "agent", w.agent, "kernel", w.name(), "err", c.errs[i])
			continue
		}
		kw, ka, ke = append(kw, w), append(ka, c.answers[i]), append(ke, c.errs[i])
	}
	if len(kw) == 0 || len(kw) == len(c.ws) {
		return false
	}
	c.ws, c.answers, c.errs = kw, ka, ke
	return true
}

// collect is the run's collection phase (see the file's comment). On an
// error the caller stops the kernels.
func (p *testPool) collect(ctx, runCtx context.Context, t *testRun, ws []*testWorker, started time.Time) (*collection, error) {
	col := newCollection(ws)
	col.each(func(int) bool { return true }, func(w *testWorker) (*collectAnswer, error) { return w.begin(runCtx) })
	t.opts.Logger.Debug("kernels collected", "after", time.Since(started))
	lostShare := false
	if p.slots != nil {
		lostShare = col.dropLost(t.opts.Logger)
		t.workers = len(col.ws)
	}
	if err := col.err(ctx); err != nil {
		return nil, err
	}
	if col.first().NoPytest != "" {
		if err := t.collectUnittest(runCtx, col); err != nil {
			return nil, err
		}
	}
	if err := t.settleSplit(ctx, runCtx, col, lostShare); err != nil {
		return nil, err
	}
	return col, t.usable(col.first())
}

// collectUnittest collects with unittest's own loader, on the same
// kernels and the paths given (none: the project), when pytest is
// missing; a project written for pytest, or arguments only pytest
// understands, are refused instead of run as something else.
func (t *testRun) collectUnittest(runCtx context.Context, col *collection) error {
	first, py := col.first(), t.python
	if len(first.NeedsPytest) > 0 {
		f := first.NeedsPytest[0]
		return fmt.Errorf("%w: %s (%s) cannot import pytest, and %s is written for pytest (%s; %d such %s): install pytest into that interpreter (%s -m pip install pytest, or on Debian apt install python3-pytest)",
			ErrNoPytest, first.Python, py.Version, f[0], f[1], len(first.NeedsPytest), plural(len(first.NeedsPytest), "file", "files"), py.Path)
	}
	if arg := pytestOnly(t.args); arg != "" {
		return fmt.Errorf("%w: %s (%s) cannot import pytest, and %s needs it (unittest's loader takes only paths): install pytest into that interpreter (%s -m pip install pytest, or on Debian apt install python3-pytest)",
			ErrNoPytest, first.Python, py.Version, arg, py.Path)
	}
	t.unit, t.split = true, false
	for i, w := range col.ws {
		w.setShare(0)
		col.answers[i], col.errs[i] = w.collect(runCtx)
	}
	return errors.Join(col.errs...)
}

// pytestOnly is the first of pytest's arguments that unittest's loader
// cannot honour (an option such as -k, or a PATH::NODE id), or "": without
// pytest such a run is refused, not run as something else.
func pytestOnly(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.Contains(a, "::") {
			return a
		}
	}
	return ""
}

// settleSplit turns split collection off when the kernels' shares cannot
// be merged (splitFallback) or a kernel was lost while it collected: the
// slow path, where the kernels that collected a share (or failed to)
// collect everything; one that said "off" did already.
func (t *testRun) settleSplit(ctx, runCtx context.Context, col *collection, lostShare bool) error {
	if t.split && !slices.ContainsFunc(col.answers, func(a *collectAnswer) bool { return a.Split != nil }) {
		// No kernel split (a usage error, pytest.exit while collecting):
		// every kernel's answer is that. When only some did not, the
		// split may be why: they all collect everything (below).
		t.split = false
	}
	if !t.split {
		return nil
	}
	why := splitFallback(col.answers, col.shares(), t.shares)
	if lostShare {
		why = "a kernel was lost while it collected"
	}
	if why == "" {
		return nil
	}
	t.opts.Logger.Info("split collection off: every kernel collects the whole suite", "why", why)
	t.split = false
	col.each(func(i int) bool { return col.answers[i].Split == nil || col.answers[i].Split.Off == "" },
		func(w *testWorker) (*collectAnswer, error) { return w.collect(runCtx) })
	for _, w := range col.ws {
		w.setShare(0)
	}
	return col.err(ctx)
}

// usable is the error of an answer that ends the run before any test: a
// usage error, pytest interrupted while it collected, or its internal
// error.
func (t *testRun) usable(a *collectAnswer) error {
	if a.Usage != "" {
		runner := "pytest"
		if t.unit {
			runner = "unittest (pytest is not installed)"
		}
		return &PytestUsageError{Runner: runner, Message: a.Usage, Console: a.Console}
	}
	if a.Interrupted != "" {
		return fmt.Errorf("%w: pytest: %s", ErrInterrupted, a.Interrupted)
	}
	if a.Internal != "" {
		return &PytestInternalError{Message: a.Internal, Console: a.Console}
	}
	return nil
}

// differ says where two collections differ ("" when they do not).
func differ(a, b []testItem) string {
	for i := range min(len(a), len(b)) {
		if a[i].NodeID != b[i].NodeID {
			return fmt.Sprintf("item %d is %s in one and %s in the other", i, a[i].NodeID, b[i].NodeID)
		}
	}
	switch {
	case len(a) > len(b):
		return "only one has " + a[len(b)].NodeID
	case len(b) > len(a):
		return "only one has " + b[len(a)].NodeID
	}
	return ""
}
