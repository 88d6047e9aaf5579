"""Mutation through calls, and the frame's mutation log.

A statement may mutate objects through code it calls: an argument, a
method's receiver, a closure or generator it calls, an iterator it
consumes, the frame names a nested function it calls reads, and any object
one of those lives in (``row = grid[0]; row.append(1)`` changes grid).
Which of these can have an effect is decided from the values the cache
holds (run-time facts, objects.py): an int passed to f, a list given to
len(), a list iterated, a function without a closure called are inert.
When a statement with a live effect runs again, the definition chain of
the object runs again (the effect is never applied twice) and so does
every later statement that reads the name (it must see the effect), up to
a statement that rebinds the name. A value the cache does not know is
taken as mutable: conservative first.

The mutation log (Frame.mutlog) records, per mutable object bound in the
frame, the statement that created it and the (mutator, stamp) of every
statement that may have mutated it: a statement reading an object that
carries a mutation it must not see re-runs the object's creator
(dirty_reads), and a run leaves no object carrying a mutation it did not
apply (stale_creators).
"""

from __future__ import annotations

import ast
import builtins
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from .effects import object_key
from .frame import DELETED, Entry, Frame, Mutation, binding
from .objects import elements, immutable, inert, params_readonly, shares
from .observe import Observation, observe
from .plan import GLOBAL, LOCAL, PARAM, DepRef, PlanStmt, last_before

if TYPE_CHECKING:
    from .analysis import StmtInfo
    from .modules import ModuleTable
    from .plan import Plan


_ValueOf = Callable[[str], object]  # a name's value as a statement sees it (or DELETED)


@dataclass
class View:
    """The frame as the re-run rules see it: the plan it runs, its cache,
    and the module globals its statements read (None: not known)."""

    plan: Plan
    frame: Frame
    module_dict: Optional[Dict[str, object]]


def definer(plan: Plan, name: str, at: int) -> Tuple[int, DepRef]:
    """(kind, ref) of the statement defining name as statement `at` sees it."""
    got = plan.stmts[at].dep_of.get(name)
    if got is not None:
        return got
    j = last_before(plan.definers, name, at)
    if j >= 0:
        return (LOCAL, j)
    if name in plan.params:
        return (PARAM, None)
    return (GLOBAL, None)


def value(view: View, name: str, at: int) -> object:
    """The value name has when statement `at` starts, as the cache knows
    it, or DELETED when unknown."""
    kind, ref = definer(view.plan, name, at)
    if kind == LOCAL:
        e = view.frame.cache.get(view.plan.stmts[ref].id)  # type: ignore[index]  # a LOCAL ref is an index
        return DELETED if e is None else binding(e, name)
    if kind == PARAM:
        return view.frame.params.get(name, DELETED)
    module_dict = view.module_dict
    if module_dict is None:
        return DELETED
    v = module_dict.get(name, DELETED)
    if v is DELETED:
        v = getattr(builtins, name, DELETED)
    return v


def never_ran(frame: Frame, ps: PlanStmt) -> bool:
    """Whether the statement did not run last run (a statement before it
    ended the frame's run: an exception, a held effect, a return) and has
    no entry."""
    return ps.id in frame.unreached and ps.id not in frame.cache


def read_objects(frame: Frame, stmts: List[PlanStmt], k: int) -> Iterator[Tuple[int, object]]:
    """(kind, object) of what statement k reads through its local and
    parameter dependencies, as the frame holds them now: a local's value
    in its definer's cache entry, a parameter's in the frame (deleted
    names and definers without an entry left out)."""
    cache = frame.cache
    for name, kind, ref in stmts[k].deps:
        if kind == LOCAL:
            e = cache.get(stmts[ref].id)  # type: ignore[index]  # a LOCAL ref is an index
            if e is None:
                continue
            obj = binding(e, name)
        elif kind == PARAM:
            obj = frame.params.get(name, DELETED)
        else:
            continue
        if obj is not DELETED:
            yield kind, obj


def seen_mutations(plan: Plan, frame: Frame, k: int) -> FrozenSet[Mutation]:
    """The mutations (mutator id, stamp) that statements before k made to
    the objects k reads through its local names and parameters, and to
    the mutable objects directly inside them, as the mutation log has
    them.

    A statement that mutates an object through a call
    (``c = len(xs) + (add_to(xs, 7) or 8)``, ``m = 1 + xs.pop()``) is not a
    definer of the name, so a reader's signature does not record it; while
    statements keep their places, a reader after it runs again whenever it
    does (MutationAnalysis.effects). An edit can move a cached reader
    across a cached mutator: deleting the first ``zs = h1(xs)`` hands the
    label zs, key and all, to the second ``zs = h1(xs)``, after
    ``m = len(xs) * 0 + xs.pop()`` (the invariant test's seed 7018), and
    the entry of the first, which saw xs before the pop, would be taken for
    it. The entry keeps this set as it was when it ran; after a move the
    set now must be the same.
    """
    mutlog = frame.mutlog
    by_id = plan.by_id
    out = set()
    if not mutlog:
        return frozenset()
    for _kind, obj in read_objects(frame, plan.stmts, k):
        if immutable(obj):
            continue
        for o in (obj, *elements(obj)):
            log = mutlog.get(object_key(o))
            if log is None or log[0] is not o:
                continue
            for mutation in log[2]:
                m = by_id.get(mutation[0])
                if m is not None and m.index < k:
                    out.add(mutation)
    return frozenset(out)


def readers_after(plan: Plan, i: int, names: Iterable[str]) -> List[int]:
    """Statements after i that read (or may mutate) one of names, each up
    to the first statement that rebinds it."""
    stmts = plan.stmts
    out = []
    open_ = set(names)
    for k in range(i + 1, len(stmts)):
        if not open_:
            break
        info = stmts[k].info
        hit = bool(open_ & info.uses)
        if not hit:
            for name, _ in info.maybe:
                if name in open_:
                    hit = True
                    break
        if hit:
            out.append(k)
        closed = [n for n in open_ & info.binds if not info.compound]
        for n in closed:
            open_.discard(n)
    return out


def chain(plan: Plan, i: int, extra: Iterable[str] = (), inert: FrozenSet[str] = frozenset()) -> Tuple[List[int], bool]:
    """(members, whether a parameter was reached): the definition chain of
    the names statement i mutates (5.3) but those of inert (receivers its
    calls cannot mutate: module_receivers), and of the names extra its
    calls may mutate."""
    stmts = plan.stmts
    members = []
    hit_param = False
    seen = set()
    todo = [(name, i) for name in stmts[i].info.mutates if name not in inert]
    todo += [(name, i) for name in extra]
    while todo:
        name, at = todo.pop()
        kind, ref = definer(plan, name, at) if at == i else stmts[at].dep_of.get(name, (GLOBAL, None))
        if kind == PARAM:
            hit_param = True
            continue
        if kind != LOCAL or ref in seen:
            continue
        assert isinstance(ref, int)
        seen.add(ref)
        members.append(ref)
        info = stmts[ref].info
        if name in info.mutates or (info.compound and name in info.defines) or name not in info.binds:
            todo.append((name, ref))
    return members, hit_param


def module_receivers(view: View, i: int) -> FrozenSet[str]:
    """The names statement i mutates only as the receiver of a method call
    (StmtInfo.receivers) whose value is a module: calling a module's
    function does not mutate the module object (its state, a project
    module's globals, is module state: modstate.py), so its definition
    chain (the import) need not run again."""
    receivers = view.plan.stmts[i].info.receivers
    if not receivers:
        return frozenset()
    return frozenset(n for n in receivers if isinstance(value(view, n, i), types.ModuleType))


def _carries_only_earlier(view: View, obj: object, i: int, rerun: Set[int]) -> bool:
    """Whether obj has a mutation log (it was bound in the frame) and it,
    and those of the mutable objects directly in obj, name only statements
    before i, cached with that stamp and not in rerun (dirty_reads' clean
    object: nothing i must not see, i's own mutation least of all)."""
    mutlog, by_id, cache = view.frame.mutlog, view.plan.by_id, view.frame.cache
    log = mutlog.get(object_key(obj))
    if log is None or log[0] is not obj:
        return False
    for o in (obj, *elements(obj)):
        log = mutlog.get(object_key(o))
        if log is None or log[0] is not o:
            continue
        for mutator_id, stamp in log[2]:
            m = by_id.get(mutator_id)
            if m is None or m.index >= i or m.index in rerun:
                return False
            me = cache.get(mutator_id)
            if me is None or me.stamp != stamp:
                return False
    return True


def clean_names(view: View, i: int, rerun: Set[int]) -> FrozenSet[str]:
    """The names statement i may mutate only through calls (StmtInfo.maybe,
    receivers; never a name it stores into) whose object i's last
    successful run was seen to leave unchanged (observe.py, Frame.observed)
    and that carries no mutation i must not see: the object does not carry
    i's effect, so re-running i cannot apply it twice, and the object's
    definition chain need not run again for i (rerun.RerunPlanner._close).
    Statements after i that read it still run: i may mutate it this time."""
    ps = view.plan.stmts[i]
    frame = view.frame
    record = frame.observed.get(ps.id)
    if record is None:
        return frozenset()
    entry = frame.cache.get(ps.id)
    if entry is None or entry.stamp != record[0]:
        return frozenset()
    info = ps.info
    unchanged = record[1]
    names = {n for n, _ in info.maybe} | info.receivers
    names -= info.mutates - info.receivers
    out = set()
    for name in names:
        kind, _ = definer(view.plan, name, i)
        if kind != LOCAL and kind != PARAM:
            continue
        v = value(view, name, i)
        if v is DELETED or unchanged.get(object_key(v)) is not v:
            continue
        if _carries_only_earlier(view, v, i, rerun):
            out.add(name)
    return frozenset(out)


def dirty_reads(plan: Plan, frame: Frame, k: int, rerun: Set[int]) -> Tuple[List[int], bool]:
    """Creators of objects statement k would read in a state k must not see.

    An object read by k is clean when every mutation logged on it came from
    a statement before k that is cached with that very stamp and is not
    re-running. Otherwise (a later statement mutated it in an earlier run, a
    mutating statement was deleted, changed, panicked or was interrupted)
    the statement that created it must run again. Returns (statement
    indices, whether a parameter object is dirty).
    """
    cache = frame.cache
    mutlog = frame.mutlog
    by_id = plan.by_id
    out = []
    dirty_param = False
    for kind, obj in read_objects(frame, plan.stmts, k):
        # The object and what it directly holds: k may read an element
        # (grid[1]) that a later statement mutated through an alias (ys =
        # grid[1]; ys += [3]) while the container itself was never mutated.
        # Elements are logged with their container's creator
        # (register_objects), so they name it.
        for o in (obj, *elements(obj)):
            log = mutlog.get(object_key(o))
            if log is None or log[0] is not o or not log[2]:
                continue
            for mutator_id, stamp in log[2]:
                m = by_id.get(mutator_id)
                if m is None or m.index >= k or m.index in rerun:
                    break
                me = cache.get(mutator_id)
                if me is None or me.stamp != stamp:
                    break
            else:
                continue
            creator = by_id.get(log[1]) if log[1] is not None else None
            if creator is not None:
                out.append(creator.index)
            elif log[1] is None and kind == PARAM:
                dirty_param = True
    return out, dirty_param


class MutationAnalysis:
    """Which objects a statement may mutate through the code it calls
    (the module doc), from the values the cache holds."""

    def __init__(self, modules: ModuleTable) -> None:
        self.modules = modules
        # code object -> readonly_callee's answer, kept across requests
        # (the static facts of a code object do not change); looked up
        # when first needed (most requests never ask).
        self._readonly: Optional[Dict[types.CodeType, bool]] = None

    def readonly_callee(self, func: types.FunctionType) -> bool:
        """Whether every parameter of project function func is only ever a
        direct argument of a builtin that does not mutate it (list(p),
        len(p), sorted(p), ...), never rebound, stored, iterated, called, or
        reached by a nested function: then func cannot mutate what its
        arguments hold at the top level. Static facts of its source, cached
        per code object; False when unsure (not a project function, no
        source, a name of those builtins rebound in its module)."""
        code = func.__code__
        cache = self._readonly
        if cache is None:
            cache = self._readonly = self.modules.readonly_callees
        got = cache.get(code)
        if got is not None:
            return got
        result = False
        try:
            node = self._def_of(code)
            if node is not None:
                result = params_readonly(node, func.__globals__)
        except Exception:
            result = False
        if len(cache) > 10000:
            cache.clear()
        cache[code] = result
        return result

    def _def_of(self, code: types.CodeType) -> Optional[ast.FunctionDef]:
        """The def node of code in its project module's source, or None."""
        src = self.modules.source_for_filename(code.co_filename)
        if src is None:
            return None
        for child in ast.walk(src.tree):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == code.co_name:
                first = child.decorator_list[0].lineno if child.decorator_list else child.lineno
                if first == code.co_firstlineno:
                    return child  # type: ignore[return-value]  # an AsyncFunctionDef has the same fields
        return None

    def effects(self, view: View, i: int, rerun: Set[int],
                relied: Dict[int, Set[int]]) -> Tuple[Tuple[str, ...], Tuple[str, ...], FrozenSet[str]]:
        """(live, chained, clean): live, the names whose objects statement
        i may mutate through code it calls and that can be mutated (the
        aliases of the objects it mutates included), sorted; chained, those
        of them whose definition chain runs again with i: all but what
        reaches them only from clean, the names clean_names finds i left
        unchanged last time.

        relied gets, for a statement whose cached value ruled out an alias
        (shares), its index: if it joins R its value may change, and the
        rerun set decides again (rerun.RerunPlanner)."""
        ps = view.plan.stmts[i]
        info = ps.info
        memo: Dict[str, object] = {}

        def value_at_i(name: str) -> object:
            v = memo.get(name, memo)
            if v is memo:
                v = memo[name] = value(view, name, i)
            return v

        first = self._live(view, ps, value_at_i)
        if not first and not info.mutates:
            return (), (), frozenset()
        clean = clean_names(view, i, rerun) if view.frame.observed else frozenset()
        mine_relied = relied.setdefault(i, set())
        own = view.frame.cache.get(ps.id) if i not in rerun else None
        out = []
        for skip in ((frozenset(), clean) if clean else (frozenset(),)):
            # The objects it mutates may live in others: follow where they
            # came from (the names their definers read whose values are
            # mutable).
            live = first - skip
            todo = [(name, i) for name in live | (info.mutates - skip)]
            self._own_sources(info, own, live, todo, mine_relied, value_at_i, i)
            self._follow_definers(view, todo, live, rerun, mine_relied)
            out.append(tuple(sorted(live)))
        return out[0], out[-1], clean

    def _live(self, view: View, ps: PlanStmt, value_at_i: _ValueOf) -> Set[str]:
        """The names the statement's calls may mutate, by the values at hand."""
        live = set()
        for name, reason in ps.info.maybe:
            if name in live:
                continue
            v = value_at_i(name)
            if v is DELETED or not inert(reason, v, value_at_i, self.readonly_callee):
                live.add(name)
        # Code the statement may call (a nested def, a lambda) reads these
        # frame names when called; it may mutate their objects.
        carried_of = view.plan.carried
        for name, kind, ref in ps.deps:
            if kind == LOCAL and name not in live:
                carried = carried_of[ref]  # type: ignore[index]  # a LOCAL ref is an index
                if carried:
                    for extra in carried:
                        v = value_at_i(extra)
                        if v is DELETED or not immutable(v):
                            live.add(extra)
        return live

    @staticmethod
    def _own_sources(info: StmtInfo, own: Optional[Entry], live: Set[str], todo: List[Tuple[str, int]],
                     relied: Set[int], value_at_i: _ValueOf, i: int) -> None:
        """An object the statement binds and mutates itself (`for row in
        grid: row.append(1)`) comes from what it reads: those names are
        live too, unless its cached binding (own: its entry when it is not
        re-running) shares nothing with them."""
        for name in (live | info.mutates) & info.binds:
            mine = binding(own, name) if own is not None else DELETED
            for source in info.uses:
                if source != name and source not in live:
                    v = value_at_i(source)
                    if v is DELETED or not immutable(v):
                        if mine is not DELETED and v is not DELETED and not shares(mine, v):
                            relied.add(i)
                            continue
                        live.add(source)
                        todo.append((source, i))

    @staticmethod
    def _follow_definers(view: View, todo: List[Tuple[str, int]], live: Set[str], rerun: Set[int],
                         relied: Set[int]) -> None:
        """Follow the names in todo to their definers and the mutable
        values those read (aliases), adding them to live."""
        plan, cache = view.plan, view.frame.cache
        seen: Set[Tuple[str, int]] = set()
        while todo:
            name, at = todo.pop()
            kind, ref = definer(plan, name, at)
            if kind != LOCAL or (name, ref) in seen or len(seen) > 256:
                continue
            assert isinstance(ref, int)
            seen.add((name, ref))
            d = plan.stmts[ref]
            if d.info.imports or isinstance(d.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            e = cache.get(d.id)
            mine = DELETED
            if e is not None:
                v = binding(e, name)
                if v is not DELETED and immutable(v):
                    continue
                if ref not in rerun:
                    mine = v  # what it bound last time, and will bind again
            for source in d.info.uses:
                if source == name and name not in d.info.binds:
                    continue
                v = value(view, source, ref)
                if v is DELETED or not immutable(v):
                    if mine is not DELETED and v is not DELETED and not shares(mine, v):
                        # A run-time fact: the object the name holds is
                        # neither the source's nor inside it, nor does it
                        # hold anything the source holds (a copy, a new
                        # object computed from it): not an alias.
                        relied.add(ref)
                        continue
                    if source not in live:
                        live.add(source)
                    todo.append((source, ref))

    @staticmethod
    def observe(info: StmtInfo, ns: Dict[str, object], mutated: List[object]) -> Optional[Observation]:
        """The states of the objects of mutated (targets) that the statement
        may change only through calls (observe.py)."""
        names = [(name, reason[0]) for name, reason in info.maybe]
        names += [(name, "method") for name in info.receivers]
        return observe(info.mutates - info.receivers, names, ns, mutated)

    def targets(self, info: StmtInfo, ns: Dict[str, object], run_once: bool) -> List[object]:
        """The objects a statement about to run may mutate, as the namespace
        holds them: their mutation logs will name it."""
        mutated = [ns[n] for n in info.mutates if n in ns and not immutable(ns[n])]
        if info.mutates & info.binds and not run_once:
            # It binds what it mutates (`for row in grid: row.append(1)`):
            # the objects it mutates come from what it reads; log them all,
            # and what they directly hold.
            for source in info.uses - info.binds:
                v = ns.get(source, DELETED)
                if v is not DELETED and not immutable(v):
                    mutated.append(v)
                    mutated.extend(elements(v))
        if info.maybe:
            # Objects its calls may mutate, as the values at hand say
            # (effects): their mutation log names it too.
            def value_of(name: str) -> object:
                v = ns.get(name, DELETED)
                return getattr(builtins, name, DELETED) if v is DELETED else v

            for name, reason in info.maybe:
                v = ns.get(name, DELETED)
                if v is not DELETED and not immutable(v) and not inert(reason, v, value_of, self.readonly_callee):
                    if not any(v is m for m in mutated):
                        mutated.append(v)
        return mutated


def log_mutations(frame: Frame, objects: List[object], expression_id: str, stamp: int) -> None:
    mutlog = frame.mutlog
    for obj in objects:
        log = mutlog.get(object_key(obj))
        if log is None or log[0] is not obj:
            log = mutlog[object_key(obj)] = [obj, None, []]
        log[2].append((expression_id, stamp))


def register_objects(frame: Frame, ns: Dict[str, object], info: StmtInfo, expression_id: str) -> None:
    """Note the statement as creator of the new mutable objects it bound,
    and of the mutable objects directly inside them (grid's rows: a name
    bound to one later, row = grid[0], is not its creator)."""
    mutlog = frame.mutlog
    for name in info.defines:
        obj = ns.get(name, DELETED)
        if obj is DELETED or immutable(obj):
            continue
        log = mutlog.get(object_key(obj))
        if log is None or log[0] is not obj:
            mutlog[object_key(obj)] = [obj, expression_id, []]
            for inner in elements(obj):
                log = mutlog.get(object_key(inner))
                if log is None or log[0] is not inner:
                    mutlog[object_key(inner)] = [inner, expression_id, []]


def prune_mutlog(frame: Frame) -> None:
    """Forget logs of objects no cached binding or parameter holds."""
    if len(frame.mutlog) <= 2 * len(frame.cache) + 64:
        return
    live = set()
    for e in frame.cache.values():
        for _, obj in e.bindings:
            live.add(object_key(obj))
            for inner in elements(obj):  # registered with their container's creator
                live.add(object_key(inner))
    for obj in frame.params.values():
        live.add(object_key(obj))
    mutlog = frame.mutlog
    for key in [k for k in mutlog if k not in live]:
        del mutlog[key]
    observed, cache = frame.observed, frame.cache
    for expression_id in [x for x, (stamp, _) in observed.items()
                          if cache.get(x) is None or cache[x].stamp != stamp]:
        del observed[expression_id]


def stale_creators(frame: Frame, first_stamp: int) -> Set[str]:
    """Creators of live objects carrying a mutation this run (its stamps
    after first_stamp) did not apply."""
    cache, reached = frame.cache, frame.reached
    out: Set[str] = set()
    for obj, creator, mutations in frame.mutlog.values():
        if creator is None or not mutations:
            continue
        # The mutations first: most objects carry only mutations of
        # statements still cached as they made them (the cheap test).
        for mutator, stamp in mutations:
            if stamp > first_stamp:
                continue  # made by this run
            m = cache.get(mutator)
            if m is None or m.stamp != stamp or mutator not in reached:
                break
        else:
            continue
        if creator in out or creator not in reached:
            continue
        entry = cache.get(creator)
        if entry is None or not any(v is obj or any(x is obj for x in elements(v)) for _, v in entry.bindings):
            # Not the creator's current object, nor directly inside it
            # (grid's row, register_objects): nothing holds it.
            continue
        out.add(creator)
    return out
