"""Which statements of a frame run again: the caching invariant.

This module is where the caching invariant of PROTOCOL.md 5.3 is kept:

    for deterministic code, after any sequence of edits, recomputes, pushes,
    pops and interrupts, the values reported equal what a fresh run of the
    current sources reports.

How (the lead's design, with the refinements marked *):

- A Frame (frame.py) owns a cache keyed by expression id. An Entry holds
  the statement's key (normalised source), ``sig`` (for every name it used,
  the stamp of the statement that defined it, the frame's parameter stamp,
  or the global's version: Versions.current_sig), its own ``stamp`` (a
  fresh number from a kernel-wide counter each time it runs), the
  ``bindings`` it left (the values of the names it defines right after it
  ran, or DELETED) and the update it sent. Panics and interrupted
  statements never get an entry.
- A Plan (plan.py) is the static view of the frame's function: statements,
  labels, ids, and for each statement the definer of every name it uses
  (the last earlier statement defining it, else a parameter, else a module
  global or builtin).
  * A compound statement (if/for/while/with/try) may leave a name unbound
    on some path, so it also depends on the earlier definer of every name
    it defines.
  * A name bound to code that runs later (a lambda, nested def, generator)
    carries the free names of that code: a statement using the name also
    depends on the definers of those names at its own position (the code
    reads them when called there).
- The rerun set R (RerunPlanner.rerun_set) starts with every statement that
  has no entry, a different key, a different sig (a definer ran again, a
  global changed), or whose entry was dropped by ``invalidate``; then to a
  fixed point (RerunPlanner._close): dependents of members join R, and when
  a member mutates (or augments) a name, the statements of that name's
  definition chain before it join R too (mutation.chain), so a mutation is
  never applied twice to a cached object.
  * The chain also follows, for every chain member, the names it read whose
    cached value may be mutable: ``ys = xs; ys.append(1)`` re-runs
    ``xs = []`` as well, since ys and xs are one object. Values that cannot
    be mutated (numbers, strings, tuples of those, functions, classes,
    modules: objects.py) stop it.
  * Mutation through calls (mutation.py) and module state (modstate.py) add
    members by the same rules, from run-time facts the cache holds. An
    object a call was seen to leave unchanged in the caller's last run
    (observe.py) carries no effect of it: no chain for it
    (mutation.clean_names).
  * A chain that reaches a parameter of an ExplicitCall frame re-evaluates
    the arguments (fresh objects, a new parameter stamp).
  * A member that re-runs and binds equal plain immutable values stops
    there, per name: what R held only through its readers of those names
    stays cached (equalstop.py, Rerun.lazy).
  * A chain that only replays (its members changed in nothing) rebuilds the
    objects as they were: a reader of them before every other member,
    binding plain values and mutating nothing, stays cached
    (RerunPlanner._replays, Rerun.replayed).
- Statements run in source order in ONE namespace dict per frame, the same
  dict across runs (cleared and refilled at the start of a run: the
  module's globals minus every name bound in the body, plus the
  parameters), so lambdas, comprehensions and nested functions see the
  frame's locals as in a real call, and closures made in an earlier run see
  the current values. Cached statements re-apply their bindings; R
  statements run (runner.FramePass, statement.StatementRunner).
- Interrupt: a KeyboardInterrupt in user code drops the running statement's
  entry (its value is not cached, its partial effects are redone next run
  through the rules above), keeps everything computed before, and
  re-raises. Statements of R after it keep their old entries: the reason
  they were in R (a stamp or key mismatch, a missing entry) is still there
  next run.
- * An edit's run costs what changed, not the body's length, with the
  outcome of the rules above unchanged: a Plan derived from the last one
  says which statements it replaced, and the Frame carries from run to run
  which statements may fail the check and which the loop must visit one by
  one (frame.SyncState, RerunPlanner.sync); the cached ones in between are
  applied in bulk (frame.apply_clean).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Set, Tuple

from .equalstop import plain
from .frame import DELETED, Frame
from .modstate import ModuleState
from .mutation import (MutationAnalysis, View, chain, dirty_reads, module_receivers, never_ran, readers_after,
                       seen_mutations)
from .plan import IMPORT, LOCAL, PARAM, Plan, PlanStmt

if TYPE_CHECKING:
    from .modules import ModuleTable


# Members of R and, for each, the dependents of it that a closure does not
# follow.
Withheld = Optional[Dict[int, FrozenSet[int]]]


class Versions:
    """The signature of a statement as things are now; module globals'
    versions are looked up once per request."""

    def __init__(self, modules: ModuleTable) -> None:
        self.modules = modules
        self._cache: Dict[Tuple[str, str], object] = {}

    def global_version(self, module: str, name: str) -> object:
        key = (module, name)
        v = self._cache.get(key)
        if v is None:
            v = self.modules.global_version(module, name)
            self._cache[key] = v
        return v

    def current_sig(self, plan: Plan, ps: PlanStmt, frame: Frame) -> Tuple[object, ...]:
        """For every name ps uses (PlanStmt.deps), what it depends on now:
        its definer's stamp, the parameter stamp, the imported modules'
        hashes or the global's version."""
        cache = frame.cache
        stmts = plan.stmts
        out: List[object] = []
        for name, kind, ref in ps.deps:
            if kind == LOCAL:
                e = cache.get(stmts[ref].id)  # type: ignore[index]  # a LOCAL ref is an index
                out.append(e.stamp if e is not None else None)
            elif kind == PARAM:
                out.append(frame.param_stamp)
            elif kind == IMPORT:
                out.append(tuple(self.modules.module_hash(m) for m in ref))  # type: ignore[union-attr]  # IMPORT: names
            else:
                out.append(self.global_version(plan.module, name))
        return tuple(out)


def layout(frame: Frame, plan: Plan) -> object:
    """The frame's layout token: the same object while every statement id
    of the function stays at its index."""
    lay = frame.layout
    if lay.plan is not plan:
        if plan.layout_token is not lay.plan_token:
            ids = tuple(plan.ids)
            if ids != lay.ids:
                lay.token = object()
                lay.ids = ids
            lay.plan_token = plan.layout_token
        lay.plan = plan
    return lay.token


@dataclass
class Rerun:
    """R and what computing it found."""

    members: Set[int]  # indices of the statements to run again
    reaches_param: bool = False  # a chain reached a parameter: the arguments are evaluated again
    # Members whose reason to run no signature records (a live effect of
    # another statement, module state, a move): they lose their entries.
    soft: Set[int] = field(default_factory=set)
    # index -> the names its effects reach, for a statement that did not
    # run last time: the readers after it join R only if it runs now.
    deferred: Dict[int, Tuple[str, ...]] = field(default_factory=dict)
    # index -> the statements whose cached values ruled out an alias for
    # it (MutationAnalysis.effects): if they join R, it is decided again.
    relied: Dict[int, Set[int]] = field(default_factory=dict)
    # index -> {names: members}: the members that are in R only through its
    # dependents that read no other of its names, all after it: skipped
    # when it re-runs with those names' values equal (equalstop.py).
    lazy: Dict[int, Dict[FrozenSet[str], Set[int]]] = field(default_factory=dict)
    # Members whose only edges were their dependents (equalstop.py), in the
    # order _close met them.
    candidates: List[int] = field(default_factory=list)
    # Readers left out of R as replays (RerunPlanner._replays): index ->
    # the replays among their definers, whose new stamps their signatures
    # take after the run (settle_replays).
    replayed: Dict[int, FrozenSet[int]] = field(default_factory=dict)


class RerunPlanner:
    """Computes a frame's rerun set (the module doc)."""

    def __init__(self, versions: Versions, effects: MutationAnalysis, state: Optional[ModuleState]) -> None:
        self.versions = versions
        self.effects = effects
        self.state = state  # None: module state is not tracked (execute's runOnce)

    def rerun_set(self, plan: Plan, frame: Frame, module_dict: Optional[Dict[str, object]] = None) -> Rerun:
        """R: the statements to run again, and what computing it found."""
        lay = layout(frame, plan)
        moved: List[int] = []
        failing = self._failing(plan, frame, lay, moved)
        # The check is done: what failed it is checked again next time.
        frame.sync.unverified = failing | set(moved)
        frame.sync.plan = plan
        view = View(plan, frame, module_dict)
        r = self._grow(view, failing, moved, None)
        added = self.state.resets(plan, frame, r.members) if self.state is not None else set()
        if added:
            r.soft.update(added)
            r.members |= added
            self._close(view, r, list(added), None)
        elif not frame.gwriters:
            r = self._replays(view, r, failing, moved)
            self._lazy(view, r, failing, moved)
        return r

    def _replays(self, view: View, r: Rerun, failing: Set[int], moved: List[int]) -> Rerun:
        """R without the readers of objects whose definition chain only
        replays (Rerun.replayed): a smaller R when every rule but those
        readers' edges from the replay still holds, else r as it is.

        A member is a replay when nothing it depends on changed: it has
        its entry, passes the check (same key, same signature), is in R
        for no reason its signature misses (soft, deferred, moved), and
        every definer it reads that is in R is a replay too. It is in R
        because a chain re-creates an object (``xs = []`` re-runs because
        ``xs.append(k)`` changed), and, the code being deterministic, it
        leaves every object as the last run did at that point, new
        objects in the place of the old. A replay that binds only plain
        values (equalstop.plain: nothing that can hold those objects),
        mutates nothing and has no effect through calls computes what it
        computed last time, when it comes before every member that is not a
        replay: ``n0 = len(xs)`` between ``xs = []`` and ``xs.append(1)``
        keeps its value. What R holds only through the
        edges from replays to such readers stays cached; settle_replays
        moves their signatures to the new stamps once the run is done."""
        plan, frame = view.plan, view.frame
        stmts, cache, members = plan.stmts, frame.cache, r.members
        if len(members) < 2:
            return r
        replays: Set[int] = set()
        for m in sorted(members):
            if m in failing or m in r.soft or m in r.deferred or cache.get(stmts[m].id) is None:
                continue
            if all(kind != LOCAL or ref not in members or ref in replays for _, kind, ref in stmts[m].deps):
                replays.add(m)
        # A reader before every other member: what it reads was made by
        # replays and cached statements alone. (After a member that is not
        # a replay, an object may be in a new state even where no
        # signature says so: it mutates it through an alias.)
        first = min(members - replays, default=len(stmts))
        readers: Dict[int, FrozenSet[int]] = {}
        for j in sorted(replays):
            if j >= first:
                break
            ps = stmts[j]
            e = cache[ps.id]
            if ps.info.mutates or e.returned or e.deletes or e.sig is None:
                continue
            if not all(v is DELETED or plain(v) for _, v in e.bindings):
                continue
            sources = frozenset(ref for _, kind, ref in ps.deps
                                if kind == LOCAL and isinstance(ref, int) and ref in replays)
            if sources and not self.effects.effects(view, j, members, {})[0]:
                readers[j] = sources
        if not readers:
            return r
        withheld = {}
        for m in replays:
            held = frozenset(j for j in view.plan.rdeps[m] if j in readers)
            if held:
                withheld[m] = held
        without = self._grow(view, failing, moved, withheld)
        extra = members - without.members
        if (not extra or extra & r.soft or without.reaches_param != r.reaches_param
                or any(j in r.deferred for j in extra) or any(cache.get(stmts[j].id) is None for j in extra)):
            return r
        without.replayed = {j: readers[j] for j in extra if j in readers}
        return without

    def settle_replays(self, plan: Plan, frame: Frame, r: Rerun) -> None:
        """After a pass: the readers R left cached as replays (Rerun.replayed)
        that the run reached take the signature their own run would have
        recorded, when what changed in it is only the stamps of the
        replays they read; any other difference leaves them to run next
        time."""
        cache, stmts = frame.cache, plan.stmts
        for j, sources in r.replayed.items():
            ps = stmts[j]
            e = cache.get(ps.id)
            if e is None or e.sig is None or ps.id not in frame.reached or e.key != ps.info.key:
                continue
            sig = self.versions.current_sig(plan, ps, frame)
            if all(was == now or (kind == LOCAL and ref in sources) for (_, kind, ref), was, now in zip(ps.deps, e.sig, sig)):
                e.sig = sig
                if e.seen is not None:
                    e.seen = seen_mutations(plan, frame, j)

    def _grow(self, view: View, failing: Set[int], moved: List[int], withheld: Withheld) -> Rerun:
        """R from the statements that fail the check and those moved, to its
        fixed point; withheld: members and those of their dependents that
        are not followed."""
        r = Rerun(set(failing))
        r.members.update(moved)
        r.soft = set(moved)
        self._close(view, r, list(r.members), withheld)
        # An alias was ruled out from a statement's cached value (shares);
        # if that statement joined R since, its value may change: decide
        # again for the statements that relied on it.
        rerun = r.members
        for _ in range(len(view.plan.stmts)):
            redo = [i for i, ds in r.relied.items() if ds & rerun and i in rerun]
            if not redo:
                break
            for i in redo:
                del r.relied[i]
            before = len(rerun)
            self._close(view, r, redo, withheld)
            if len(rerun) == before and not any(i in r.relied for i in redo):
                break
        return r

    def _lazy(self, view: View, r: Rerun, failing: Set[int], moved: List[int]) -> None:
        """Rerun.lazy: for each candidate with plain cached values, and each
        set of its names that may come out equal, what R holds only through
        its dependents reading no other name, when all of it comes after it
        and skipping it cannot change what else R found (equalstop.py)."""
        cache, stmts = view.frame.cache, view.plan.stmts
        budget = 8  # closures computed at most, beyond R's own
        for i in sorted(set(r.candidates)):
            if budget <= 0:
                break
            e = cache.get(stmts[i].id)
            if i in r.soft or e is None or not e.bindings:
                continue
            names = [n for n, v in e.bindings if v is DELETED or plain(v)]
            if len(names) == len(e.bindings) == 1 or len(names) > 3:
                subsets = [frozenset(names)] if len(names) == len(e.bindings) else []
            else:
                subsets = [frozenset(c) for k in range(len(names), 0, -1) for c in itertools.combinations(names, k)]
            for equal in subsets:
                if budget <= 0:
                    break
                skipped = frozenset(j for j in view.plan.rdeps[i]
                                    if all(n in equal for n, kind, ref in stmts[j].deps if kind == LOCAL and ref == i))
                if not skipped:
                    continue
                budget -= 1
                without = self._grow(view, failing, moved, {i: skipped})
                extra = r.members - without.members
                if (not extra or min(extra) <= i or extra & r.soft or without.reaches_param != r.reaches_param
                        or any(j in r.deferred for j in extra)
                        or any(cache.get(stmts[j].id) is None for j in extra)):
                    continue
                r.lazy.setdefault(i, {})[equal] = extra

    def _failing(self, plan: Plan, frame: Frame, lay: object, moved: List[int]) -> Set[int]:
        """The statements that fail the check: no entry, another key, another
        signature. A cached statement whose reads may come through other
        mutations since a move goes to moved."""
        cache = frame.cache
        stmts = plan.stmts
        rerun = set()
        current_sig = self.versions.current_sig
        # Only the statements whose check may have changed since the last
        # run are checked (sync); every other one passed then and would
        # pass now.
        candidates = self.sync(frame, plan, lay)
        for ps in stmts if candidates is None else [stmts[k] for k in candidates]:
            e = cache.get(ps.id)
            if e is None or e.key != ps.info.key or e.dep_names != ps.dep_names or e.sig != current_sig(plan, ps, frame):
                rerun.add(ps.index)
            elif e.layout is not lay and e.seen is not None:
                # Statements moved since it ran (an edit): the objects it
                # reads may now come to it through a different set of the
                # statements that mutate them through calls (they are not
                # definers, so the signature does not see it).
                if e.seen != seen_mutations(plan, frame, ps.index):
                    moved.append(ps.index)
                else:
                    e.layout = lay
        return rerun

    def sync(self, frame: Frame, plan: Plan, lay: object) -> Optional[List[int]]:
        """Fold the changes since the frame's last run into its incremental
        bookkeeping (frame.SyncState); returns the sorted indices of the
        statements whose check (rerun_set) may have changed, or None for all
        of them.

        The changes: statements the plan replaced (Plan.changed, when it
        derives from the last run's plan), cache entries set or removed (and
        so the signatures of the statements that read them), updates
        reported, the parameter stamp, module globals' versions, the
        versions of the modules a script imports (always checked). A new
        plan of other ids, a cleared cache, or nothing known: everything.
        """
        cache, reported, sync = frame.cache, frame.reported, frame.sync
        base = sync.plan
        # Not known again until the check is done (rerun_set): a check cut
        # short leaves everything to check next time.
        sync.plan = None
        changed: Optional[Tuple[int, ...]]
        if base is plan:
            changed = ()
        elif base is not None and plan.parent == base.serial:
            changed = plan.changed
        else:
            changed = None
        candidates: Optional[Set[int]]
        if changed is None or cache.cleared or reported.cleared or sync.layout is not lay:
            sync.visit_all(len(plan.stmts))
            candidates = None
        else:
            candidates = self._touched(frame, plan, changed)
        cache.touched.clear()
        cache.cleared = False
        reported.touched.clear()
        reported.cleared = False
        if sync.param != frame.param_stamp:
            candidates = None
        sync.param = frame.param_stamp
        sync.layout = lay
        old = sync.global_versions
        versions = {}
        for name, users in plan.users.items():
            v = versions[name] = self.versions.global_version(plan.module, name)
            if candidates is not None and old.get(name, old) != v:
                candidates.update(users)
        sync.global_versions = versions
        sync.unverified = set()
        return None if candidates is None else sorted(candidates)

    @staticmethod
    def _touched(frame: Frame, plan: Plan, changed: Tuple[int, ...]) -> Set[int]:
        """Mark what changed since the last run dirty and its blocks unmerged;
        returns the statements to check (the last check's failures, what
        changed, what reads a changed entry, the script's imports)."""
        cache, reported, sync = frame.cache, frame.reported, frame.sync
        by_id = plan.by_id
        if not by_id.keys() >= cache.touched or not by_id.keys() >= reported.touched:
            sync.stale_keys = True
        touched = {by_id[k].index for k in cache.touched if k in by_id}
        shown = {by_id[k].index for k in reported.touched if k in by_id}
        sync.dirty.update(touched, shown, changed)
        sync.drop_blocks(touched.union(changed))
        candidates = sync.unverified
        candidates.update(touched, changed, plan.imports)
        rdeps = plan.rdeps
        for k in touched:
            candidates.update(rdeps[k])
        return candidates

    def _close(self, view: View, r: Rerun, work: List[int], withheld: Withheld) -> None:
        """Grow R to its fixed point from the members in work (the module
        doc's rules); notes whether a parameter was reached. The dependents
        withheld names (of their members) are not followed; a member whose only edges are its
        dependents is a candidate (equalstop.py)."""
        plan, frame = view.plan, view.frame
        stmts = plan.stmts
        rdeps = plan.rdeps
        rerun = r.members
        everything = len(stmts)
        while work:
            i = work.pop()
            held = withheld.get(i) if withheld is not None else None
            added = list(rdeps[i]) if held is None else [j for j in rdeps[i] if j not in held]
            live: Tuple[str, ...] = ()
            chained: Tuple[str, ...] = ()
            clean: FrozenSet[str] = frozenset()
            if len(rerun) < everything:
                live, chained, clean = self.effects.effects(view, i, rerun, r.relied)
            if live and never_ran(frame, stmts[i]):
                # It did not run last time (a statement before it ended the
                # frame's run): its effects were never applied, so no chain;
                # the statements after it that must see them join only if
                # it runs now (runner.FramePass._run_deferred).
                r.deferred[i] = live
                live = chained = ()
            if stmts[i].info.mutates or chained:
                # Objects it was seen to leave unchanged last time
                # (mutation.clean_names) carry no effect of it to redo.
                members, hit_param = chain(plan, i, chained, module_receivers(view, i) | clean)
                r.reaches_param = r.reaches_param or hit_param
                added += members
            if live:
                readers = readers_after(plan, i, live)
                r.soft.update(j for j in readers if j not in rerun)
                added += readers
            creators, dirty_param = dirty_reads(plan, frame, i, rerun)
            r.reaches_param = r.reaches_param or dirty_param
            added += creators
            if not stmts[i].info.mutates and i not in r.deferred:
                r.candidates.append(i)
            for j in added:
                if j not in rerun:
                    rerun.add(j)
                    work.append(j)
