"""Module state: module globals a frame's statements rebind through calls.

A project function may rebind a module global (`global COUNT` in a
helper, or in a function nested in the body): module state that
statements change and read through calls. A fresh run starts from the
modules' own values, so when any statement that changes it runs again (or
one that may: a changed statement with a call), the state goes back to
what it was before the frame first changed it (Frame.gbase) and every
statement from the first of them on that calls something or reads a
module global runs again, in order. Which globals can be rebound is static
(the names of `global` statements in a module's functions: watched); which
statement rebound one is a run-time fact (Entry.gwrites, Frame.gwriters).

The body changes module state too, without a helper (BodyState):
`helpers.y = 8` rebinds a project module's global and
`helpers.LOG.append(1)` (or `LOG.append(1)` after `from helpers import
LOG`) changes a module-level container in place. A statement that may
mutate a project module or a module-level name is watched while it runs
(the module's globals, and a copy of each plain container's content); what
it changed joins Frame.gbase (rebound) or Frame.gcontent (changed in
place, put back in place) and the statement is a writer like the others.
"""

from __future__ import annotations

import ast
from types import ModuleType
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from .analysis import MAYBE_SUBSCRIPT
from .effects import object_key
from .frame import DELETED, Frame
from .plan import GLOBAL, LOCAL, Plan, PlanStmt

if TYPE_CHECKING:
    from .modules import ModuleTable

# (module name, module dict, names its functions declare `global`)
Watched = List[Tuple[str, Dict[str, object], Tuple[str, ...]]]


def reads_state(plan: Plan, ps: PlanStmt) -> bool:
    """Whether the statement may read module state: it calls something,
    reads a module global (a name the body never binds, also when an
    earlier statement is taken to mutate it: `helpers.h0(a)`), or a name
    an import of the body bound (a module or a module's object: a script's
    `import helpers` binds a frame name, and `a = helpers.Y` reads state)."""
    if any(reason[0] != MAYBE_SUBSCRIPT for _, reason in ps.info.maybe):
        return True
    bound = plan.bound
    for name, kind, ref in ps.deps:
        if kind == GLOBAL or name not in bound:
            return True
        if kind == LOCAL and _imported(plan, name, ref):  # type: ignore[arg-type]  # a LOCAL ref is an index
            return True
    return False


def _imported(plan: Plan, name: str, ref: int) -> bool:
    """Whether the value of name that statement ref defines was bound by
    an import (through the statements that only mutate it: a call
    `helpers.h0(a)` is taken to mutate helpers)."""
    stmts = plan.stmts
    for _ in range(len(stmts)):
        info = stmts[ref].info
        if name in info.binds:
            return bool(info.imports)
        kind, at = stmts[ref].dep_of.get(name, (GLOBAL, None))
        if kind != LOCAL or not isinstance(at, int):
            return False
        ref = at
    return False


def stale_state_reads(frame: Frame) -> bool:
    """Whether a statement after the pass's first new writer (Frame.gnew)
    that may read module state came from the cache."""
    plan = frame.plan
    if plan is None or frame.gnew is None:
        return False
    for k in range(frame.gnew + 1, len(plan.stmts)):
        ps = plan.stmts[k]
        if k not in frame.last_rerun and ps.id in frame.reached and reads_state(plan, ps):
            return True
    return False


class ModuleState:
    """The module state rules of the module doc, for one execute request."""

    def __init__(self, modules: ModuleTable) -> None:
        self.modules = modules
        self._last: Optional[Tuple[int, Watched]] = None  # the table's watched_globals, as last looked up

    def watched(self) -> Watched:
        """[(module name, module dict, names)] of loaded project modules
        whose functions declare globals; recomputed when a module changed
        (kept per module table, across requests). Asked before every
        statement that runs."""
        table = self.modules
        key = table._generation
        cached = self._last
        if cached is None or cached[0] != key:
            cached = self._last = table.watched_globals
        if cached is not None and cached[0] == key:
            return cached[1]
        out: Watched = []
        for rec in list(table.records.values()):
            src, module = rec.source, rec.module
            if src is None or module is None or "global" not in src.text:
                continue
            names = set()
            for node in ast.walk(src.tree):
                if isinstance(node, ast.Global):
                    names.update(node.names)
            if names:
                out.append((rec.name, module.__dict__, tuple(sorted(names))))
        table.watched_globals = self._last = (key, out)
        return out

    def body_modules(self, frame: Frame) -> Watched:
        """The project modules whose globals the frame's body changed
        (Frame.gbase entries outside watched), as watched entries, when
        still loaded: their state is live, not fresh."""
        out: Watched = []
        seen: List[str] = []
        for mod, _ in frame.gbase:
            rec = self.modules.records.get(mod)
            if mod not in seen and rec is not None and rec.module is not None:
                seen.append(mod)
                out.append((mod, rec.module.__dict__, ()))
        return out

    def body_state(self, ps: PlanStmt, ns: Dict[str, object]) -> Optional[BodyState]:
        """What to watch while ps runs (BodyState), or None: the module
        globals of the project modules it may mutate, and the module-level
        names (GLOBAL deps) it may mutate."""
        info = ps.info
        if not info.mutates and not info.maybe:
            return None
        names = set(info.mutates)
        names.update(name for name, reason in info.maybe if reason[0] != MAYBE_SUBSCRIPT)
        state = BodyState()
        records = self.modules.records
        for name in names:
            v = ns.get(name, DELETED)
            if isinstance(v, ModuleType):
                rec = records.get(v.__name__)
                if rec is not None and rec.module is v:
                    state.add_module(v.__name__, v.__dict__)
            elif ps.dep_of.get(name, (GLOBAL, None))[0] == GLOBAL and v is not DELETED:
                state.add_value(v)
        return state if state.items else None

    def resets(self, plan: Plan, frame: Frame, rerun: Set[int]) -> Set[int]:
        """The statements to add to rerun for module state; puts the state
        back as it was before the frame first changed it when they are
        needed."""
        watched = self.watched()
        if not watched and not frame.gbase and not frame.gcontent:
            return set()
        watched = watched + self.body_modules(frame)
        start = _start(plan, frame, rerun, watched)
        if start is None:
            return set()
        frame.gwriters = {w for w in frame.gwriters if w in plan.by_id}  # a deleted writer's effect is undone below
        if frame.gwriters or start == 0:
            first = min((plan.by_id[w].index for w in frame.gwriters if w in plan.by_id), default=start)
            start = min(start, first)
        _restore(frame, watched)
        added = set()
        stmts = plan.stmts
        for k in range(start, len(stmts)):
            ps = stmts[k]
            if k in rerun:
                continue
            if ps.id in frame.gwriters or reads_state(plan, ps):
                added.add(k)
        return added


def _start(plan: Plan, frame: Frame, rerun: Set[int], watched: Watched) -> Optional[int]:
    """The index from which module state must be redone, or None."""
    cache = frame.cache
    start = None
    force, frame.gforce = frame.gforce, False
    writers = [plan.by_id[w].index for w in frame.gwriters if w in plan.by_id]
    if force and writers:
        start = min(writers)
    for wid in frame.gwriters:
        ps: Optional[PlanStmt] = plan.by_id.get(wid)
        e = cache.get(wid)
        if ps is not None and e is not None and e.key != ps.info.key:
            # The id names another statement now (a deleted `b = bump(a)`
            # hands its label to the next `b = ...`): where the writer was
            # is not known, so the state is redone from the top.
            ps = None
        if ps is None or e is None or not e.gwrites or ps.index in rerun:
            start = 0 if ps is None else (ps.index if start is None else min(start, ps.index))
    for (mod, name), (mdict, _) in frame.gbase.items():
        if not any(w[1] is mdict for w in watched):
            start = 0  # the module was loaded again: its state is fresh
            break
    if writers:
        # A statement to run before a writer must see the state as it was
        # before the writer, not as the last run left it.
        last = max(writers)
        for i in sorted(rerun):
            if i >= last or (start is not None and i >= start):
                break
            if reads_state(plan, plan.stmts[i]):
                start = i
                break
    return start


def _restore(frame: Frame, watched: Watched) -> None:
    """Put the module globals the frame changed back as they were before,
    and the module-level containers it changed in place; forget those of
    modules loaded again since."""
    for obj, content in frame.gcontent.values():
        _put_back(obj, content)
    for (mod, name), (mdict, value) in list(frame.gbase.items()):
        if any(w[1] is mdict for w in watched):
            if value is DELETED:
                mdict.pop(name, None)
            else:
                mdict[name] = value
        else:
            del frame.gbase[(mod, name)]


def snapshot(watched: Watched) -> List[object]:
    """The watched globals' values now (DELETED: unbound), in order."""
    return [mdict.get(name, DELETED) for _, mdict, names in watched for name in names]


def state_writes(frame: Frame, watched: Watched, before: List[object]) -> Tuple[Tuple[str, str], ...]:
    """(module, name) of the watched globals changed since before (a
    snapshot); notes the value before the frame first changed each."""
    out = []
    i = 0
    for mod, mdict, names in watched:
        for name in names:
            old = before[i]
            i += 1
            if mdict.get(name, DELETED) is not old:
                out.append((mod, name))
                if (mod, name) not in frame.gbase:
                    frame.gbase[(mod, name)] = (mdict, old)
    return tuple(out)


# How many items a container may hold for BodyState to copy its content.
CONTENT_LIMIT = 100000


def _content(v: object) -> Optional[object]:
    """A copy of a plain container's top level (list, dict, set,
    bytearray), or None (not copied: not one, or too large)."""
    t = type(v)
    if t is list or t is dict or t is set or t is bytearray:
        if len(v) <= CONTENT_LIMIT:  # type: ignore[arg-type]  # one of the sized types above
            return t(v)  # type: ignore[call-arg]  # a copy of the same type
    return None


def _same(v: object, content: object) -> bool:
    """Whether container v holds what content (its _content) held: the
    same items, by identity."""
    if type(v) is list:
        assert isinstance(content, list)
        return len(v) == len(content) and all(a is b for a, b in zip(v, content))
    if type(v) is dict:
        assert isinstance(content, dict)
        return len(v) == len(content) and all(k in v and v[k] is c for k, c in content.items())
    return v == content


def _put_back(obj: object, content: object) -> None:
    """Make container obj hold content again, in place (names bound to it
    elsewhere see it as it was)."""
    if isinstance(obj, list) and isinstance(content, list):
        obj[:] = content
    elif isinstance(obj, bytearray) and isinstance(content, bytearray):
        obj[:] = content
    elif isinstance(obj, dict) and isinstance(content, dict):
        obj.clear()
        obj.update(content)
    elif isinstance(obj, set) and isinstance(content, set):
        obj.clear()
        obj.update(content)


class BodyState:
    """The module state one body statement may change (ModuleState.body_state):
    before it runs, the watched modules' globals and the containers'
    contents; writes() after it ran."""

    def __init__(self) -> None:
        # (module name or "", module dict or None, name, value, content copy or None)
        self.items: List[Tuple[str, Optional[Dict[str, object]], str, object, Optional[object]]] = []
        self._dicts: List[Tuple[str, Dict[str, object], Set[str]]] = []  # (module, dict, names before)

    def add_module(self, mod: str, mdict: Dict[str, object]) -> None:
        if any(d is mdict for _, d, _ in self._dicts):
            return
        self._dicts.append((mod, mdict, set(mdict)))
        for name, v in list(mdict.items()):
            if not name.startswith("__"):
                self.items.append((mod, mdict, name, v, _content(v)))

    def add_value(self, v: object) -> None:
        content = _content(v)
        if content is not None:
            self.items.append(("", None, "", v, content))

    def writes(self, frame: Frame) -> Tuple[Tuple[str, str], ...]:
        """(module, name) of what the statement changed; notes in the frame
        what each was before the frame first changed it (gbase, gcontent)."""
        out = []
        for mod, mdict, name, old, content in self.items:
            if mdict is not None and mdict.get(name, DELETED) is not old:
                out.append((mod, name))
                if (mod, name) not in frame.gbase:
                    frame.gbase[(mod, name)] = (mdict, old)
            elif content is not None and not _same(old, content):
                out.append((mod, name))
                key = object_key(old)
                if key not in frame.gcontent:
                    frame.gcontent[key] = (old, content)
        for mod, mdict, before in self._dicts:
            for name in set(mdict) - before:
                if not name.startswith("__"):
                    out.append((mod, name))  # bound by the statement: deleted on a reset
                    frame.gbase.setdefault((mod, name), (mdict, DELETED))
        return tuple(out)
