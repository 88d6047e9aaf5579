package queue_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/ripple-run/ripple/jobs"
	"github.com/ripple-run/ripple/queue"
	"github.com/ripple-run/ripple/queue/queuetest"
)

var (
	modelSeed  = flag.Uint64("model.seed", 0, "run TestModel with this seed only (0: seeds 1..model.seeds)")
	modelSeeds = flag.Int("model.seeds", 200, "number of seeds TestModel runs")
	modelSteps = flag.Int("model.steps", 150, "steps per seed in TestModel")
)

// TestModel drives the queue through random interleavings of enqueues,
// plans, aborts, completions and failures, and after every step compares
// it with a reference model (a brute-force reimplementation of the rules
// below), checks the scheduling rules on the queue's own snapshot, and
// checks the ended jobs it reported. At the end every job must have ended
// exactly once and every accepted request must be carried by a job.
// Seeded and reproducible: a failure names its seed; rerun it with
// -model.seed=N.
func TestModel(t *testing.T) {
	seeds := []uint64{*modelSeed}
	if *modelSeed == 0 {
		seeds = seeds[:0]
		for s := range uint64(*modelSeeds) {
			seeds = append(seeds, s+1)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runModel(t, seed, *modelSteps) })
		})
	}
}

// mjob is the model's view of a job: the record the queue should report.
type mjob struct {
	rec  jobs.Record
	seq  uint64
	keep uint64
}

type model struct {
	maxRunning int
	nextID     jobs.ID
	nextSeq    uint64
	epoch      uint64
	queuedEC   *mjob // of every kernel
	runningEC  *mjob
	queuedSEC  map[jobs.Slot]*mjob // of one kernel
	runningSEC map[jobs.Slot]*mjob
	queued     map[jobs.ContextID]*mjob
	running    map[jobs.ContextID]*mjob
	endedNow   map[jobs.ID]jobs.Record // ended during the current step
	requests   int                     // requests the queue accepted
}

func (m *model) enqueueExecute(e jobs.Execute) {
	m.requests++
	if j := m.queued[e.Context]; j != nil {
		old := j.rec.Execute
		j.rec.Execute.Collapse(&e)
		j.rec.Requests++
		j.keep = m.epoch
		if old.Slot != j.rec.Execute.Slot || old.Priority != j.rec.Execute.Priority {
			m.nextSeq++
			j.seq = m.nextSeq
		}
		return
	}
	if e.Expressions.IsEmpty() {
		e.Expressions = jobs.All[jobs.ExpressionID]()
	}
	m.nextID++
	m.nextSeq++
	m.queued[e.Context] = &mjob{
		rec:  jobs.Record{ID: m.nextID, Kind: jobs.KindExecute, State: jobs.StateQueued, Execute: e, Requests: 1},
		seq:  m.nextSeq,
		keep: m.epoch,
	}
}

func (m *model) enqueueCompile(e jobs.EnsureCompiled) {
	if len(e.Slots) > 0 {
		for _, slot := range e.Slots {
			m.requests++
			one := jobs.EnsureCompiled{Modules: e.Modules, Slots: []jobs.Slot{slot}}
			if j := m.queuedSEC[slot]; j != nil {
				j.rec.EnsureCompiled.Collapse(&one)
				j.rec.Requests++
				continue
			}
			m.nextID++
			m.queuedSEC[slot] = &mjob{rec: jobs.Record{ID: m.nextID, Kind: jobs.KindEnsureCompiled, State: jobs.StateQueued,
				EnsureCompiled: one, Requests: 1}}
		}
		return
	}
	m.requests++
	if m.queuedEC != nil {
		m.queuedEC.rec.EnsureCompiled.Collapse(&e)
		m.queuedEC.rec.Requests++
		return
	}
	m.nextID++
	m.queuedEC = &mjob{rec: jobs.Record{ID: m.nextID, Kind: jobs.KindEnsureCompiled, State: jobs.StateQueued,
		EnsureCompiled: e, Requests: 1}}
}

func (m *model) abort(a jobs.Abort) {
	for id, j := range m.queued {
		if a.Covers(id) && j.keep != m.epoch {
			delete(m.queued, id)
			m.end(j, jobs.StateForCause(a.Cause), a.Cause, nil)
		}
	}
	for id, j := range m.running {
		if a.Covers(id) && j.rec.Cause == nil {
			j.rec.Cause = a.Cause
		}
	}
}

func (m *model) end(j *mjob, state jobs.State, cause, err error) {
	j.rec.State, j.rec.Cause, j.rec.Err = state, cause, err
	m.endedNow[j.rec.ID] = j.rec
}

func (m *model) slotBusy(slot jobs.Slot) bool {
	for _, j := range m.running {
		if j.rec.Execute.Slot == slot {
			return true
		}
	}
	return false
}

// schedule is the rules, brute force.
func (m *model) schedule() {
	if m.runningEC != nil {
		return
	}
	if m.queuedEC != nil {
		if len(m.running) == 0 && len(m.runningSEC) == 0 {
			m.runningEC, m.queuedEC = m.queuedEC, nil
			m.runningEC.rec.State = jobs.StateRunning
		}
		return
	}
	for slot, j := range m.queuedSEC {
		if !m.slotBusy(slot) && m.runningSEC[slot] == nil {
			delete(m.queuedSEC, slot)
			j.rec.State = jobs.StateRunning
			m.runningSEC[slot] = j
		}
	}
	for m.maxRunning <= 0 || len(m.running) < m.maxRunning {
		var best *mjob
		for id, j := range m.queued {
			slot := j.rec.Execute.Slot
			if m.slotBusy(slot) || m.running[id] != nil || m.queuedSEC[slot] != nil || m.runningSEC[slot] != nil {
				continue
			}
			if best == nil || j.rec.Execute.Priority > best.rec.Execute.Priority ||
				(j.rec.Execute.Priority == best.rec.Execute.Priority && j.seq < best.seq) {
				best = j
			}
		}
		if best == nil {
			return
		}
		delete(m.queued, best.rec.Execute.Context)
		best.rec.State = jobs.StateRunning
		m.running[best.rec.Execute.Context] = best
	}
}

func (m *model) finish(j *mjob, err error) {
	state := jobs.FinalState(err, j.rec.Cause)
	cause := j.rec.Cause
	if state == jobs.StateDone || state == jobs.StateFailed {
		cause = nil
	}
	if j == m.runningEC {
		m.runningEC = nil
	} else if j.rec.Kind == jobs.KindEnsureCompiled {
		delete(m.runningSEC, j.rec.EnsureCompiled.Slots[0])
	} else {
		delete(m.running, j.rec.Execute.Context)
	}
	m.end(j, state, cause, err)
	m.schedule()
}

// live returns the live jobs in the order queue.Jobs promises.
func (m *model) live() []jobs.Record {
	var out []jobs.Record
	byID := func(a, b *mjob) int { return cmp.Compare(a.rec.ID, b.rec.ID) }
	if m.runningEC != nil {
		out = append(out, m.runningEC.rec)
	}
	for _, j := range slices.SortedFunc(maps.Values(m.runningSEC), byID) {
		out = append(out, j.rec)
	}
	for _, j := range slices.SortedFunc(maps.Values(m.running), byID) {
		out = append(out, j.rec)
	}
	if m.queuedEC != nil {
		out = append(out, m.queuedEC.rec)
	}
	for _, j := range slices.SortedFunc(maps.Values(m.queuedSEC), byID) {
		out = append(out, j.rec)
	}
	queued := slices.SortedFunc(maps.Values(m.queued), func(a, b *mjob) int {
		if a.rec.Execute.Priority != b.rec.Execute.Priority {
			return cmp.Compare(b.rec.Execute.Priority, a.rec.Execute.Priority)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, j := range queued {
		out = append(out, j.rec)
	}
	return out
}

// gen makes the random requests of one seed.
type gen struct {
	r        *rand.Rand
	slotOf   map[jobs.ContextID]jobs.Slot
	contexts jobs.Contexts // the translations' state; changes as the run goes
}

var (
	modelContexts = []jobs.ContextID{"c0", "c1", "c2", "c3", "c4", "c5"}
	modelModules  = []jobs.Module{"m0", "m1", "m2", "m3"}
	modelExprs    = []jobs.ExpressionID{"m:f/a", "m:f/b", "m:f/c", "m:f/d"}
	errBoom       = errors.New("boom")
	modelCauses   = []error{jobs.ErrEdited, jobs.ErrStackChanged, jobs.ErrRecomputed, jobs.ErrInterrupted,
		jobs.ErrContextDestroyed, jobs.ErrTimeout}
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (g *gen) context() jobs.ContextID {
	id := pick(g.r, modelContexts)
	if g.r.IntN(20) == 0 { // the engine moves the context to another slot
		g.slotOf[id] = jobs.Slot(g.r.IntN(4))
		if info, ok := g.contexts[id]; ok {
			info.Slot = g.slotOf[id]
			g.contexts[id] = info
		}
	}
	return id
}

func (g *gen) exprs() jobs.ExpressionSet {
	switch n := g.r.IntN(10); {
	case n < 4:
		return jobs.All[jobs.ExpressionID]()
	case n < 5:
		return jobs.ExpressionSet{}
	default:
		return jobs.SetOf(pick(g.r, modelExprs), pick(g.r, modelExprs))
	}
}

func (g *gen) execute() jobs.Execute {
	id := g.context()
	e := jobs.Execute{Context: id, Slot: g.slotOf[id], Expressions: g.exprs(),
		Priority: jobs.Priority(g.r.IntN(jobs.NumPriorities)), Reason: jobs.Reason(1) << g.r.IntN(8)}
	if g.r.IntN(4) == 0 {
		e.Invalidate = g.exprs()
	}
	return e
}

func (g *gen) compile() jobs.EnsureCompiled {
	var e jobs.EnsureCompiled
	if g.r.IntN(10) == 0 {
		e = jobs.EnsureCompiled{Modules: jobs.All[jobs.Module]()}
	} else {
		e = jobs.EnsureCompiled{Modules: jobs.SetOf(pick(g.r, modelModules), pick(g.r, modelModules))}
	}
	if g.r.IntN(3) != 0 { // mostly of some kernels, as the engine's plans
		for slot := range jobs.Slot(4) {
			if g.r.IntN(2) == 0 {
				e.Slots = append(e.Slots, slot)
			}
		}
	}
	return e
}

// imports gives a context random imports: unknown now and then, else its
// bottom module and maybe another.
func (g *gen) imports(info *jobs.ContextInfo) {
	info.ImportsKnown = g.r.IntN(4) != 0
	info.Imports = jobs.SetOf(info.BottomModule)
	if g.r.IntN(2) == 0 {
		info.Imports = jobs.SetOf(info.BottomModule, pick(g.r, modelModules))
	}
}

// call returns a random API call and updates the contexts' state the way
// the engine would before translating it.
func (g *gen) call() jobs.Call {
	id := g.context()
	info, exists := g.contexts[id]
	expr := pick(g.r, modelExprs)
	switch g.r.IntN(11) {
	case 0, 1:
		return jobs.Edit{Modules: g.compile().Modules, Origin: jobs.Origin(g.r.IntN(2)), NoExecute: g.r.IntN(10) == 0}
	case 2:
		if exists {
			info.StackEmpty, info.BottomModule = false, pick(g.r, modelModules)
			g.imports(&info)
			g.contexts[id] = info
		}
		return jobs.Push{Context: id}
	case 3:
		if exists && g.r.IntN(3) == 0 {
			info.StackEmpty, info.BottomModule = true, ""
			g.contexts[id] = info
		}
		return jobs.Pop{Context: id}
	case 4:
		return jobs.Recompute{Context: id, Invalidate: g.exprs()}
	case 5:
		return jobs.AttachVisualization{Context: id, Expression: expr}
	case 6:
		return jobs.ModifyVisualization{Context: id, Expression: expr}
	case 7:
		return jobs.ExecuteExpression{Context: id, Expression: expr}
	case 8:
		return jobs.DetachVisualization{Context: id}
	case 9:
		if !exists {
			g.contexts[id] = jobs.ContextInfo{Slot: g.slotOf[id], StackEmpty: true}
		}
		return jobs.CreateContext{Context: id}
	default:
		if g.r.IntN(2) == 0 {
			delete(g.contexts, id)
			return jobs.DestroyContext{Context: id}
		}
		return jobs.Interrupt{Context: id}
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	g := &gen{r: r, slotOf: map[jobs.ContextID]jobs.Slot{}, contexts: jobs.Contexts{}}
	for i, id := range modelContexts {
		g.slotOf[id] = jobs.Slot(i % 3)
		info := jobs.ContextInfo{Slot: g.slotOf[id], BottomModule: pick(r, modelModules)}
		g.imports(&info)
		g.contexts[id] = info
	}
	m := &model{maxRunning: []int{0, 1, 2, 3}[r.IntN(4)], queued: map[jobs.ContextID]*mjob{},
		queuedSEC: map[jobs.Slot]*mjob{}, runningSEC: map[jobs.Slot]*mjob{},
		running: map[jobs.ContextID]*mjob{}, endedNow: map[jobs.ID]jobs.Record{}}
	runner := &queuetest.Runner{MaxRunning: m.maxRunning} // runs on after cancellation until told
	ended := &queuetest.Recorder{}
	q := queue.New(runner, queue.Options{MaxRunning: m.maxRunning, OnEnd: ended.OnEnd})
	if err := q.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	stop := func() error {
		// Nothing starts any more; end what runs; wait.
		expired, cancel := context.WithCancel(context.Background())
		cancel()
		_ = q.Stop(expired)
		synctest.Wait()
		for _, c := range runner.Active() {
			c.Finish(context.Cause(c.Ctx))
		}
		return q.Stop(context.Background())
	}
	t.Cleanup(func() { _ = stop() }) // after a failure
	reported := 0
	for step := range steps {
		what := modelStep(t, q, m, g, runner)
		synctest.Wait()
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d (%s): %s", seed, step, what, fmt.Sprintf(format, args...))
		}
		checkModel(fail, q, m, runner)
		records := ended.Records()
		checkEnded(fail, m, records[reported:])
		reported = len(records)
		clear(m.endedNow)
	}

	if err := stop(); err != nil {
		t.Fatalf("seed %d: Stop: %v", seed, err)
	}
	if d := ended.Duplicates(); len(d) > 0 {
		t.Fatalf("seed %d: jobs ended twice: %v", seed, d)
	}
	requests := 0
	for _, rec := range ended.Records() {
		requests += rec.Requests
		if !rec.State.IsFinal() {
			t.Fatalf("seed %d: job ended in state %v", seed, rec.State)
		}
	}
	if n := len(ended.Records()); n != int(m.nextID) {
		t.Fatalf("seed %d: %d jobs ended, %d were created", seed, n, m.nextID)
	}
	if requests != m.requests {
		t.Fatalf("seed %d: ended jobs carry %d requests, %d were accepted", seed, requests, m.requests)
	}
	if v := runner.Violations(); len(v) > 0 {
		t.Fatalf("seed %d: %v", seed, v)
	}
}

// modelStep makes one random move on the queue and the model; it returns
// what it did, for failure messages.
func modelStep(t *testing.T, q *queue.Queue, m *model, g *gen, runner *queuetest.Runner) string {
	r := g.r
	switch n := r.IntN(100); {
	case n < 28:
		call := g.call()
		plan, err := call.Plan(g.contexts)
		if err != nil {
			return fmt.Sprintf("%T rejected: %v", call, err)
		}
		if err := q.Apply(plan); err != nil {
			t.Fatalf("Apply(%#v): %v", call, err)
		}
		m.epoch++
		for _, e := range plan.Executes {
			m.enqueueExecute(e)
		}
		for _, a := range plan.Aborts {
			m.abort(a)
		}
		if !plan.EnsureCompiled.Modules.IsEmpty() {
			m.enqueueCompile(plan.EnsureCompiled)
		}
		m.schedule()
		return fmt.Sprintf("apply %#v", call)
	case n < 48:
		e := g.execute()
		if _, err := q.EnqueueExecute(e); err != nil {
			t.Fatalf("EnqueueExecute(%v): %v", &e, err)
		}
		m.epoch++
		m.enqueueExecute(e)
		m.schedule()
		return "enqueue " + e.String()
	case n < 55:
		e := g.compile()
		if _, err := q.EnqueueEnsureCompiled(e); err != nil {
			t.Fatalf("EnqueueEnsureCompiled(%v): %v", &e, err)
		}
		m.enqueueCompile(e)
		m.schedule()
		return "enqueue " + e.String()
	case n < 60:
		a := jobs.AbortContext(pick(r, modelContexts), pick(r, modelCauses))
		if r.IntN(3) == 0 {
			a = jobs.AbortAll(pick(r, modelCauses))
		}
		var err error
		if a.All {
			err = q.AbortAll(a.Cause)
		} else {
			err = q.AbortContext(a.Context, a.Cause)
		}
		if err != nil {
			t.Fatalf("abort %+v: %v", a, err)
		}
		m.epoch++
		m.abort(a)
		return fmt.Sprintf("abort %+v", a)
	default:
		active := runner.Active()
		if len(active) == 0 {
			return "nothing to finish"
		}
		c := pick(r, active)
		var err error
		switch r.IntN(4) {
		case 0, 1:
		case 2:
			err = errBoom
		default:
			err = context.Cause(c.Ctx) // nil unless cancelled
		}
		j := m.runningEC
		if c.Kind == jobs.KindExecute {
			j = m.running[c.Execute.Context]
		} else if len(c.EnsureCompiled.Slots) == 1 {
			j = m.runningSEC[c.EnsureCompiled.Slots[0]]
		}
		if j == nil || j.rec.ID != c.ID {
			t.Fatalf("runner call %v is not running in the model", c)
		}
		c.Finish(err)
		m.finish(j, err)
		return fmt.Sprintf("finish %v with %v", c, err)
	}
}

// checkModel compares the queue's live jobs and the runner's calls with the
// model, and checks the rules on the queue's snapshot by themselves.
func checkModel(fail func(string, ...any), q *queue.Queue, m *model, runner *queuetest.Runner) {
	got, want := q.Jobs(), m.live()
	if len(got) != len(want) {
		fail("live jobs:%s\nwant:%s", recordsString(got), recordsString(want))
	}
	for i := range got {
		if !sameRecord(&got[i], &want[i]) || !got[i].Ended.IsZero() {
			fail("live jobs:%s\nwant:%s", recordsString(got), recordsString(want))
		}
	}
	var active, running []jobs.ID
	for _, c := range runner.Active() {
		active = append(active, c.ID)
	}
	for _, r := range got {
		if r.State == jobs.StateRunning {
			running = append(running, r.ID)
		}
	}
	slices.Sort(active)
	slices.Sort(running)
	if !slices.Equal(active, running) {
		fail("runner runs jobs %v, queue says %v", active, running)
	}

	checkRules(fail, got, m.maxRunning)
}

// checkRules checks the scheduling rules on a snapshot of the queue's live
// jobs (queue.Jobs) by themselves.
func checkRules(fail func(string, ...any), got []jobs.Record, maxRunning int) {
	var queuedEC, runningEC, runningExec int
	slotBusy := map[jobs.Slot]bool{}
	ctxRunning := map[jobs.ContextID]bool{}
	ctxQueued := map[jobs.ContextID]bool{}
	slotQueuedEC := map[jobs.Slot]int{}
	slotRunningEC := map[jobs.Slot]int{}
	for _, r := range got {
		slots := r.EnsureCompiled.Slots
		switch {
		case r.Kind == jobs.KindEnsureCompiled && len(slots) > 1:
			fail("job %d is an EnsureCompiled of %d slots: the queue splits them", r.ID, len(slots))
		case r.Kind == jobs.KindEnsureCompiled && len(slots) == 1 && r.State == jobs.StateQueued:
			slotQueuedEC[slots[0]]++
		case r.Kind == jobs.KindEnsureCompiled && len(slots) == 1:
			slotRunningEC[slots[0]]++
		case r.Kind == jobs.KindEnsureCompiled && r.State == jobs.StateQueued:
			queuedEC++
		case r.Kind == jobs.KindEnsureCompiled:
			runningEC++
		case r.State == jobs.StateRunning:
			runningExec++
			if slotBusy[r.Execute.Slot] || ctxRunning[r.Execute.Context] {
				fail("two Executes run on slot %d or context %s", r.Execute.Slot, r.Execute.Context)
			}
			slotBusy[r.Execute.Slot], ctxRunning[r.Execute.Context] = true, true
		default:
			if ctxQueued[r.Execute.Context] {
				fail("two queued Executes of context %s (rule 4)", r.Execute.Context)
			}
			ctxQueued[r.Execute.Context] = true
		}
	}
	nSlotRunningEC := 0
	for slot, n := range slotRunningEC {
		nSlotRunningEC += n
		switch {
		case n > 1 || slotQueuedEC[slot] > 1:
			fail("slot %d: %d queued and %d running EnsureCompiled (rules 1, 3 per kernel)", slot, slotQueuedEC[slot], n)
		case slotBusy[slot]:
			fail("slot %d: an EnsureCompiled runs beside an Execute (rule 1 per kernel)", slot)
		}
	}
	switch {
	case queuedEC > 1 || runningEC > 1:
		fail("%d queued and %d running EnsureCompiled of every kernel (rules 1, 3)", queuedEC, runningEC)
	case runningEC > 0 && (runningExec > 0 || nSlotRunningEC > 0):
		fail("an EnsureCompiled of every kernel runs beside %d Executes and %d compiles (rule 1)", runningExec, nSlotRunningEC)
	case maxRunning > 0 && runningExec > maxRunning:
		fail("%d Executes run, limit %d", runningExec, maxRunning)
	case queuedEC > 0 && runningExec == 0 && runningEC == 0 && nSlotRunningEC == 0:
		fail("a queued EnsureCompiled could start and did not")
	}
	if queuedEC == 0 && runningEC == 0 {
		for slot, n := range slotQueuedEC {
			if n > 0 && slotRunningEC[slot] == 0 && !slotBusy[slot] {
				fail("the queued EnsureCompiled of slot %d could start and did not", slot)
			}
		}
	}
	if queuedEC == 0 && runningEC == 0 && (maxRunning <= 0 || runningExec < maxRunning) {
		for _, r := range got {
			if r.Kind == jobs.KindExecute && r.State == jobs.StateQueued && !slotBusy[r.Execute.Slot] && !ctxRunning[r.Execute.Context] &&
				slotQueuedEC[r.Execute.Slot] == 0 && slotRunningEC[r.Execute.Slot] == 0 {
				fail("job %d could start and did not (the queue must be work-conserving)", r.ID)
			}
		}
	}
}

// checkEnded compares the jobs the queue reported ended during a step with
// the model's.
func checkEnded(fail func(string, ...any), m *model, got []jobs.Record) {
	if len(got) != len(m.endedNow) {
		fail("ended:%s\nwant %d: %v", recordsString(got), len(m.endedNow), slices.Collect(maps.Keys(m.endedNow)))
	}
	for i := range got {
		want, ok := m.endedNow[got[i].ID]
		if !ok || !sameRecord(&got[i], &want) || !errors.Is(got[i].Err, want.Err) || got[i].Ended.IsZero() {
			fail("ended %v, want %v", &got[i], &want)
		}
		ran := !got[i].Started.IsZero()
		if !ran && (got[i].Err != nil || got[i].State == jobs.StateDone || got[i].State == jobs.StateFailed) {
			fail("ended %v without ever starting", &got[i])
		}
	}
}

func sameRecord(got, want *jobs.Record) bool {
	return got.ID == want.ID && got.Kind == want.Kind && got.State == want.State &&
		got.Requests == want.Requests && got.Cause == want.Cause &&
		got.Execute.String() == want.Execute.String() &&
		got.EnsureCompiled.Modules.Equal(want.EnsureCompiled.Modules) &&
		slices.Equal(got.EnsureCompiled.Slots, want.EnsureCompiled.Slots)
}
