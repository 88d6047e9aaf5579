"""Running one frame of a context's stack with per-expression caching.

Where a run starts: engine.py's execute makes a Runner per request and
calls Runner.run for every frame of the stack. A run is up to three
passes (Runner.run); a pass (FramePass) computes the rerun set (rerun.py,
where the caching invariant is written down), fills the frame's namespace,
then visits the statements in order: a cached one re-applies its bindings
(the clean ones in bulk: frame.apply_clean), one of R runs
(statement.StatementRunner).

The collaborators, one per concept, made once per request by Runner:
Versions (signatures), MutationAnalysis (mutation through calls),
ModuleState (module globals rebound through calls), RerunPlanner (R),
StatementRunner (running one statement), Visualizer.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Collection, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from . import nested, notebook
from .equalstop import equal_names
from .frame import DELETED, NOT_REACHED, PENDING, RELEASED, Entry, Frame, Mutation, apply_clean
from .modstate import stale_state_reads
from .mutation import MutationAnalysis, prune_mutlog, readers_after, seen_mutations, stale_creators
from .overwritten import Releaser
from .plan import LOCAL, Plan, PlanStmt, build_plan, declared, find_function, scope_error
from .rerun import Rerun, RerunPlanner, Versions, layout
from .scriptplan import SCRIPT, add_import_deps, build_script_plan
from .statement import RETURNED, FrameRun, Hooks, RunSettings, StatementRunner, update_of
from .visualize import Visualizer

if TYPE_CHECKING:
    from .api import KernelAPI, WireObject
    from .engine import Engine
    from .modules import ModuleRecord

Emit = Callable[["WireObject"], None]
# Why a frame's run ended before its end: (kind, the statement's id), kind
# statement.RAISED or statement.HELD (the reason kinds of 8.1 and 8.2).
Reason = Tuple[str, str]
INTERRUPTED = "interrupted"  # the reason kind of 8.4's not reached after an interrupt


class Failure(Exception):
    """A run cannot start or continue: the execute result names it."""

    def __init__(self, kind: str, message: str, diagnostic: Optional[WireObject] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.diagnostic = diagnostic

    def result(self) -> WireObject:
        result: WireObject = {"kind": self.kind, "message": self.message}
        if self.diagnostic is not None:
            result["diagnostic"] = self.diagnostic
        return {"status": "failed", "result": result}


@dataclass
class FrameJob:
    """What Runner.run was asked: a frame of the stack and how to run it."""

    frame: Frame
    depth: int
    rec: ModuleRecord
    qualname: str
    top: bool
    wanted: Optional[Set[str]]  # a partial run: the ids wanted (and what they need), else None
    visualizations: Optional[List[WireObject]]


class Runner:
    """Runs frames for one execute request."""

    def __init__(self, engine: Engine, emit: Emit, stop_at_skip: bool = False, run_once: bool = False,
                 hold: bool = False) -> None:
        self.engine = engine
        self.kernel: KernelAPI = engine.kernel
        self.modules = engine.modules
        self.analyzer = engine.analyzer
        self.emit = emit
        self.versions = Versions(self.modules)
        effects = MutationAnalysis(self.modules)
        self.visualizer = Visualizer(engine, emit)
        self.statements = StatementRunner(engine, emit, RunSettings(stop_at_skip, run_once, hold), self.versions,
                                          effects, self.visualizer)
        self.planner = RerunPlanner(self.versions, effects, self.statements.state)

    # What the value journal (journal.py) reads of a frame, as a run does.

    def global_version(self, module: str, name: str) -> object:
        return self.versions.global_version(module, name)

    def current_sig(self, plan: Plan, ps: PlanStmt, frame: Frame) -> Tuple[object, ...]:
        return self.versions.current_sig(plan, ps, frame)

    @staticmethod
    def layout(frame: Frame, plan: Plan) -> object:
        return layout(frame, plan)

    @staticmethod
    def seen_mutations(plan: Plan, frame: Frame, k: int) -> FrozenSet[Mutation]:
        return seen_mutations(plan, frame, k)

    def plan_for(self, frame: Frame, rec: ModuleRecord, qualname: str) -> Plan:
        """The frame's plan of qualname in rec's current source (the frame's
        own when it is current, else derived from it or built)."""
        src = rec.source
        assert src is not None  # the engine runs frames of modules it has parsed
        plan = frame.plan
        if plan is not None and plan.generation == src.generation and plan.qualname == qualname and plan.module == rec.name:
            return plan
        if qualname == SCRIPT and frame.script_globals is True:
            reuse = plan if plan is not None and plan.module == rec.name and plan.qualname == SCRIPT else None
            plan = frame.plan = build_script_plan(self.analyzer, src, rec.name, self.modules, reuse)
            return plan
        func = find_function(src, qualname)
        if func is None:
            raise Failure("failure", "function %s:%s not found in module %s (%s)" % (rec.name, qualname, rec.name, rec.path))
        if isinstance(func, ast.AsyncFunctionDef):
            raise Failure("failure", "%s:%s is a coroutine function; ripple runs plain functions" % (rec.name, qualname))
        reuse = plan if plan is not None and plan.module == rec.name else None
        plan = build_plan(self.analyzer, src, rec.name, qualname, func, reuse)
        add_import_deps(plan, rec, self.modules, reuse)
        # A plan derived from frame.plan (which passed this check) can only
        # differ in its changed statements (and _update_plan refuses yields).
        for ps in plan.stmts if plan.changed is None else [plan.stmts[k] for k in plan.changed]:
            if ps.info.yields:
                raise Failure(
                    "failure",
                    "%s:%s is a generator or uses await (line %d); ripple runs plain functions"
                    % (rec.name, qualname, ps.node.lineno),
                )
        error = scope_error(plan, func, src.filename)
        if error is not None:
            diag = self.engine.diagnostics.for_syntax_error(error, rec.path)
            raise Failure("compileError", "module %s failed to compile: %s" % (rec.name, diag.get("message", "")), diag)
        frame.plan = plan
        return plan

    def run(self, frame: Frame, depth: int, rec: ModuleRecord, qualname: str, top: bool,
            wanted: Optional[Set[str]], visualizations: Optional[List[WireObject]]) -> None:
        """Run one frame. Returns nothing; raises Failure or KeyboardInterrupt.

        * A full run must leave every live object of the frame as a fresh
          run would: carrying only mutations that this run applied (ran, or
          kept from the cache by a statement it reached). A mutation made
          earlier by a statement that was since deleted, changed or is no
          longer reached (a return now comes first) stays on the object, and
          a LocalCall entered with it, or a visualization, would see it. The
          creators of such objects lose their entries and the frame runs
          once more: they, their dependents and the mutators still there
          make fresh objects (a second pass only ever finds this pass's own
          mutations, so it ends).
        """
        job = FrameJob(frame, depth, rec, qualname, top, wanted, visualizations)
        for _ in range(3):
            first_stamp = self.engine.next_stamp()
            frame.gnew = None
            self._run_pass(job)
            if wanted is not None:
                return  # a partial run reaches only what it wants
            stale = stale_creators(frame, first_stamp)
            if frame.gnew is not None and stale_state_reads(frame):
                # A statement rebound module state for the first time, and a
                # later one that may read it came from the cache: run again
                # from the state before the first writer.
                frame.gforce = True
                continue
            if not stale:
                return
            for creator in stale:
                frame.cache.pop(creator, None)

    def _run_pass(self, job: FrameJob) -> None:
        plan = self.plan_for(job.frame, job.rec, job.qualname)
        script = job.frame.script_globals
        if script is True:
            # A script's globals: a namespace of its own, made afresh for
            # each pass (names a statement adds with globals()[...] do not
            # outlive the run), as `python main.py` would give it.
            module_dict: Dict[str, object] = {"__name__": "__main__", "__file__": job.rec.filename, "__doc__": None,
                           "__builtins__": builtins, "__package__": None, "__spec__": None}
            if job.rec.filename.endswith(".ipynb"):
                module_dict["get_ipython"] = notebook.get_ipython  # as IPython's builtin (notebook.py)
            argv = sys.argv
            sys.argv = [job.rec.filename] + argv[1:]
            try:
                FramePass(self, job, plan, module_dict).run()
            finally:
                sys.argv = argv
            return
        # A function a script defined runs in the script's namespace.
        FramePass(self, job, plan, script if isinstance(script, dict) else job.rec.module.__dict__).run()


class FramePass:
    """One pass over a frame's statements: R, the namespace, then every
    statement in order (the module doc)."""

    def __init__(self, runner: Runner, job: FrameJob, plan: Plan, module_dict: Dict[str, object]) -> None:
        self.runner = runner
        self.job = job
        self.frame = job.frame
        self.plan = plan
        self.module_dict = module_dict
        self.emit = runner.emit
        # Updates of cached statements go out together, in one event, before
        # anything else is sent: a frame restored from the value journal
        # sends a thousand of them at once (journal.py).
        self.batch: List[WireObject] = []
        self.rerun = Rerun(set())
        self.order: Sequence[int] = range(len(plan.stmts))
        self.todo: List[int] = []
        self.visits: Set[int] = set()
        # Overwritten values let go of, and read back (overwritten.py):
        # only the journal can give them back, so only in frames it keeps.
        release = job.depth == 0 and not runner.statements.run_once
        self.releaser = Releaser(runner.engine.journal, release, job.frame, plan, job.frame.namespace)

    def run(self) -> None:
        frame, plan, job = self.frame, self.plan, self.job
        self.rerun = self._rerun_set()
        rerun = self.rerun.members
        if job.wanted is not None:
            needed = _needed(plan, job.wanted)
            rerun &= needed
            self.order = sorted(needed)
        vis_by_id: Dict[str, List[WireObject]] = {}
        for vis in job.visualizations or ():
            vis_by_id.setdefault(vis["expressionId"], []).append(vis)
        hooks = Hooks()
        fr = FrameRun(frame, plan, job.depth, self.module_dict, job.top, self._namespace(hooks), hooks, vis_by_id,
                      {plan.filename: plan.qualname}, self.batch)
        self._send_pending(sorted(rerun))
        frame.reached = set()
        frame.panicked = {}
        frame.unreached = set()
        self.todo, self.visits = self._visits(vis_by_id)
        try:
            rest, reason, stopped = self._visit(fr)
        except KeyboardInterrupt:
            self._flush()
            self._interrupted()
            raise
        except BaseException:
            self._flush()  # a Failure: what ran is reported
            raise
        self.releaser.sweep()
        self._not_reached(rest, reason)
        if self.rerun.replayed:
            self.runner.planner.settle_replays(plan, frame, self.rerun)
        self._flush()
        self._finish(vis_by_id, stopped)

    def _rerun_set(self) -> Rerun:
        """R; the arguments evaluated again first when a chain reaches a
        parameter (and they were not evaluated by this request)."""
        frame, plan, planner = self.frame, self.plan, self.runner.planner
        shown = [vis["expressionId"] for vis in self.job.visualizations or ()]

        def compute() -> Rerun:
            return planner.rerun_set(plan, frame, self.module_dict)

        # With the overwritten values it needs read back (overwritten.py).
        r = self.releaser.settle(compute, shown)
        fresh, frame.args_fresh = frame.args_fresh, False
        if (r.reaches_param and not fresh and frame.args_key is not None
                and self.runner.engine.refresh_arguments(frame, self.job.rec)):
            r = self.releaser.settle(compute)
        # A statement in R for a reason its signature does not record (a
        # live effect of another statement, module state) loses its entry
        # now: if the run ends before it (an interrupt, a partial run, a
        # return), the next run still runs it. The others keep theirs: the
        # reason they are in R is still there next run (rerun.py).
        for i in r.soft & r.members:
            frame.cache.pop(plan.stmts[i].id, None)
        frame.last_rerun = r.members
        return r

    def _namespace(self, hooks: Hooks) -> Dict[str, object]:
        """The frame's namespace, same dict as last run, refilled (rerun.py's
        module doc): the module's globals minus the names the body binds
        (but those it declares global), the parameters, the hooks."""
        frame, plan = self.frame, self.plan
        ns = frame.namespace
        ns.clear()
        ns.update(self.module_dict)
        names = declared(plan)
        for name in plan.bound.intersection(ns):
            if name not in names:  # a `global` name is the module's
                del ns[name]
        ns.update(frame.params)
        if frame.func_class is not None:
            ns["__class__"] = frame.func_class
        hooks.install(ns)
        return ns

    def _send_pending(self, indices: List[int]) -> None:
        """Pending for each statement the pass will run: batched, they go
        out with the first running mark (in the same write), or before
        anything else is sent."""
        reported = self.frame.reported
        stmts = self.plan.stmts
        batch = self.batch
        for i in indices:
            ps = stmts[i]
            batch.append(update_of(ps, {"type": "Pending"}))
            reported[ps.id] = PENDING

    def _visits(self, vis_by_id: Dict[str, List[WireObject]]) -> Tuple[List[int], Set[int]]:
        """(todo, visits): the statements visited one by one, in order: those
        of R, those with a visualization, and the dirty ones
        (frame.SyncState). A full run applies the clean statements between
        them in bulk (apply_clean): for them a visit would change nothing
        else. A partial run visits exactly what it wants."""
        if self.job.wanted is not None:
            todo = list(self.order)
            return todo, set(todo)
        visits = set(self.rerun.members)
        visits.update(self.frame.sync.dirty)
        for vis_id in vis_by_id:
            vps = self.plan.by_id.get(vis_id)
            if vps is not None:
                visits.add(vps.index)
        return sorted(visits), visits

    def _flush(self) -> None:
        batch = self.batch
        if batch:
            self.emit({"type": "updates", "depth": self.job.depth, "updates": batch[:]})
            batch.clear()

    def _visit(self, fr: FrameRun) -> Tuple[Sequence[int], Optional[Reason], bool]:
        """Visit the statements in order (the hot loop of a run); returns
        (the statements after the one that ended the frame's run, each to
        report not reached; why, None after a return; whether an edit
        stopped the run at a statement boundary)."""
        frame, plan, ns = self.frame, self.plan, fr.ns
        cache, reported, reached, batch = frame.cache, frame.reported, frame.reached, self.batch
        dirty, stmts, ids, todo = frame.sync.dirty, plan.stmts, plan.ids, self.todo
        rerun = self.rerun.members
        full = self.job.wanted is None
        top, vis_by_id = self.job.top, fr.vis_by_id
        n = len(stmts)
        pos = 0
        prev = -1
        while True:
            i = todo[pos] if pos < len(todo) else n
            if full and i > prev + 1:
                apply_clean(cache, frame.sync, ids, ns, reached, prev + 1, i)
            if i >= n:
                return (), None, False
            pos += 1
            prev = i
            ps = stmts[i]
            if i not in rerun:
                e = cache[ps.id]
                for name, value in e.bindings:
                    if value is DELETED or value is RELEASED:  # RELEASED: no member of R reads it here
                        ns.pop(name, None)
                    else:
                        ns[name] = value
                value = None  # would hold it: a later statement may let go of it (overwritten.py)
                reached.add(ps.id)
                last = reported.get(ps.id)
                if last is not e.update or e.update.get("range") != ps.range:
                    nested.moved(e.update, ps.range)  # its inner values move with it
                    e.update["range"] = ps.range
                    cached = dict(e.update)
                    cached["fromCache"] = True
                    reported[ps.id] = e.update
                    batch.append(cached)
                if e.returned or e.deletes:
                    dirty.add(i)
                else:
                    dirty.discard(i)
                if top and ps.id in vis_by_id:
                    self._flush()
                    self.runner.visualizer.visualize(vis_by_id[ps.id], e.value, ns, self.module_dict, fresh=False)
                if e.returned:
                    return (range(i + 1, n) if full else todo[pos:]), None, False
                continue
            dirty.add(i)
            before = cache.get(ps.id) if i in self.rerun.lazy else None
            self.releaser.replacing(i)
            end = self.runner.statements.run(fr, ps)
            if end is None or end is RETURNED:
                reached.add(ps.id)
                if i in self.rerun.deferred:
                    self._run_deferred(i, pos)
                if before is not None:
                    self._equal_stop(i, before)
                fr.hooks.reset()  # its direct call's receiver (births.query) is not held
                self.releaser.ran(i)
            # An edit may ask the run to end at a statement boundary
            # (kernel/PROTOCOL.md): this statement's value is cached; the
            # frame's bookkeeping is done as after a whole run, then the
            # run ends; the run that follows the edit goes on from here.
            stopped = self.runner.kernel.stop_requested()
            if end is not None:
                # A return, an uncaught exception (8.1) or a held effect
                # (8.2) ends the frame's run: nothing after it runs.
                rest = range(i + 1, n) if full else todo[pos:]
                return rest, (None if end is RETURNED else (end, ps.id)), stopped
            if stopped:
                return (), None, True
            if pos >= len(todo) or todo[pos] != i + 1:
                # Cached statements (applied in bulk) or the end come next:
                # the value goes out now, not with a later running mark.
                self._flush()

    def _run_deferred(self, i: int, pos: int) -> None:
        """Statement i ran after all: what comes after and sees its effects
        runs too (Rerun.deferred); they join the visits after pos."""
        rerun, todo, visits = self.rerun.members, self.todo, self.visits
        for j in readers_after(self.plan, i, self.rerun.deferred[i]):
            if j not in rerun and (self.job.wanted is None or j in self.order):
                rerun.add(j)
                self.frame.cache.pop(self.plan.stmts[j].id, None)
                if j not in visits:
                    visits.add(j)
                    bisect.insort(todo, j, pos)

    def _equal_stop(self, i: int, before: Entry) -> None:
        """Statement i re-ran; if the names it bound equal values
        (equalstop.py) are a set Rerun.lazy knows, what R held only through
        the dependents reading just those stays cached: their signatures
        name i's new stamp, as their own runs would record. Any other
        difference in a signature keeps them all in R."""
        frame, plan = self.frame, self.plan
        cache, stmts = frame.cache, plan.stmts
        after = cache.get(stmts[i].id)
        if after is None or after is before:
            return
        skipped = self.rerun.lazy[i].get(equal_names(before.bindings, after.bindings))
        if skipped is None:
            return
        equal = set(equal_names(before.bindings, after.bindings))
        current_sig = self.runner.versions.current_sig
        sigs = []
        for j in sorted(skipped):
            ps = stmts[j]
            e = cache.get(ps.id)
            if e is None or e.sig is None or e.key != ps.info.key or e.dep_names != ps.dep_names:
                return
            sig = current_sig(plan, ps, frame)
            for (name, kind, ref), was, now in zip(ps.deps, e.sig, sig):
                if was != now and not (kind == LOCAL and ref == i and name in equal and was == before.stamp):
                    return
            sigs.append((e, sig))
        for e, sig in sigs:
            e.sig = sig
        self.rerun.members.difference_update(skipped)

    def _not_reached(self, rest: Sequence[int], reason: Optional[Reason]) -> None:
        """Report the statements after the one that ended the frame's run
        not reached, with the reason (None: a return; else (kind, the
        statement's id)); sent again when one moved: the client's range of
        it must follow edits too."""
        frame, stmts = self.frame, self.plan.stmts
        reported, dirty = frame.reported, frame.sync.dirty
        kind, origin = reason or (None, None)
        unreached = frame.unreached
        updates = []
        for k in rest:
            ps = stmts[k]
            dirty.add(k)
            unreached.add(ps.id)
            key = (NOT_REACHED, ps.range, kind, origin)
            if reported.get(ps.id) != key:
                reported[ps.id] = key
                updates.append(update_of(ps, not_reached(kind, origin)))
        if updates:
            self._flush()
            self.emit({"type": "updates", "depth": self.job.depth, "updates": updates})

    def _interrupted(self) -> None:
        """After an interrupt (8.4): the statements this pass meant to run
        and did not (still Pending, the one running included) are not
        reached, reason interrupted, never left Pending."""
        frame, stmts = self.frame, self.plan.stmts
        reported = frame.reported
        updates = []
        for i in sorted(self.rerun.members):
            ps = stmts[i]
            if reported.get(ps.id) is PENDING:
                frame.sync.dirty.add(i)
                reported[ps.id] = (NOT_REACHED, ps.range, INTERRUPTED, None)
                updates.append(update_of(ps, not_reached(INTERRUPTED, None)))
        if updates:
            self.emit({"type": "updates", "depth": self.job.depth, "updates": updates})

    def _finish(self, vis_by_id: Dict[str, List[WireObject]], stopped: bool) -> None:
        """The frame's bookkeeping after the visits: stale keys, merged
        blocks, the mutation log, visualizations of unknown ids."""
        frame, plan = self.frame, self.plan
        sync = frame.sync
        if sync.stale_keys:
            for stale in frame.cache.keys() - plan.by_id.keys():
                del frame.cache[stale]
            for stale in frame.reported.keys() - plan.by_id.keys():
                del frame.reported[stale]
            sync.stale_keys = False
        # A block merged from an entry this run replaced or removed lets go
        # of its values now, not at the next run (a large object would live
        # on); touched stays for the next sync.
        if sync.blocks:
            by_id = plan.by_id
            sync.drop_blocks(by_id[key].index for key in frame.cache.touched if key in by_id)
        prune_mutlog(frame)
        for vis_id, items in vis_by_id.items():
            if vis_id not in plan.by_id and self.job.top:
                for vis in items:
                    if vis.get("apply") or vis.get("oneshot"):
                        self.runner.visualizer.failed(
                            vis, "expression %s is not a statement of %s:%s" % (vis_id, plan.module, plan.qualname))
        if stopped:
            raise Failure("stopped", "stopped at a statement boundary by an edit")


def not_reached(kind: Optional[str], origin: Optional[str]) -> WireObject:
    """The Pending payload of a statement this run does not reach (8.1,
    8.4): why (kind; None after a return) and the statement that ended
    the frame's run (origin, for an exception or a held effect)."""
    payload: WireObject = {"type": "Pending", "message": "not reached"}
    if kind is not None:
        reason: WireObject = {"kind": kind}
        if origin is not None:
            reason["expressionId"] = origin
        payload["reason"] = reason
    return payload


def _needed(plan: Plan, wanted: Collection[str]) -> Set[int]:
    """The statements a partial run needs: the wanted ones and, through
    their local definers, everything they read."""
    stmts = plan.stmts
    needed: Set[int] = set()
    work = [plan.by_id[w].index for w in wanted if w in plan.by_id]
    while work:
        i = work.pop()
        if i in needed:
            continue
        needed.add(i)
        work.extend(stmts[i].local_deps)
    return needed
