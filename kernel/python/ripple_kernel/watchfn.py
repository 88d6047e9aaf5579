"""ripple run --tests --watch at function granularity: the kernel side.

Two parts, both used only by a watch (pytest_plugin.py's "collect" with
"watch": true, and its "hot" op); a plain run never loads this module and
pays nothing.

The recorder (Recorder) notes which project functions each test reached:
its call and its function-scoped fixtures' setup and teardown (everything
between the start and the end of its runtest protocol), and, apart, the
functions that ran where a per-test record cannot see them:

  - import: under a project module's top-level code (an import, at
    collection or inside a test), or anywhere during a "collect" op
    (conftest hooks, pytest_configure, collection);
  - wide: inside a fixture of a wider scope than function (module,
    class, package, session: set up once, its value shared by tests),
    or outside any test;
  - cached: under a function a cache wraps (functools.lru_cache and
    the like, found by their cache_clear): a later test that hits the
    cache does not reach what the miss computed.

A unit is "path::qualname" with the qualname cut at its first ".<locals>"
(a nested function belongs to its top-level function or method). On 3.11
the record is a sys.settrace global function that returns None for every
frame but the few it must see return (module code, cached functions), so
no line events are traced; on 3.12+ sys.monitoring (_Monitor), where
settrace costs ~4x more. Either way a watch's runs take about 2.2-2.5x as
long on call-heavy suites (sympy, bench/README.md); a plain run loads
none of this. A test during
which something else replaced the trace function is "untraced": every
hot change re-runs it.

The patcher (plan / apply, with hotpatch.py) takes a saved module's new source, diffs it
against the source the kernel imported (ast without positions) and, when
only function or method bodies changed, replaces those functions'
__code__ in place, so every reference (imports elsewhere, decorators'
__wrapped__, bound methods) sees the new body. Anything else is a
fallback with its reason: the caller then forgets and re-imports the
project (batch/watch.go's module path).

Ownership: this kernel's Recorder holds the record of the tests that ran
in this kernel; the Go side asks every kernel and merges the answers.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
from types import CodeType, FrameType, FunctionType, ModuleType
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

from .hotpatch import (
    Edit,
    Fallback,
    Units,
    compile_unit,
    edit_in_body,
    loaded,
    locate,
    nested_defs,
    shifted,
    stale_closures,
)

__all__ = ["Fallback", "Recorder"]

if TYPE_CHECKING:
    from _typeshed import TraceFunction as Trace  # sys.settrace's argument
# A patch: (the live function, its new code, its new docstring, whether its
# body changed, the closures made from its old nested code, with their new code).
Patch = Tuple[FunctionType, CodeType, Optional[str], bool, List[Tuple[FunctionType, CodeType]]]


class Recorder:
    """This kernel's record of which project functions its tests reached,
    and the sources of the project modules it imported."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.prefix = self.root + os.sep
        self.tests: Dict[str, FrozenSet[str]] = {}  # nodeid -> frozenset of units
        self.by_unit: Dict[str, Set[str]] = {}  # unit -> set of nodeids
        self.untraced: Set[str] = set()
        self.import_units: Set[str] = set()
        self.wide_units: Set[str] = set()
        self.cached_units: Set[str] = set()
        self._unit: Dict[CodeType, Optional[str]] = {}  # code -> unit, or None (not a project function)
        self._kind: Dict[CodeType, int] = {}  # code -> 0 plain, 1 module code, 2 cached, 3 other
        self._cached_codes: Set[CodeType] = set()
        self._import: Set[CodeType] = set()
        self._wide: Set[CodeType] = set()
        self._cached: Set[CodeType] = set()
        self._test: Optional[Set[CodeType]] = None  # the set of the running test
        self._test_id: Optional[str] = None
        self._module_depth = 0
        self._cache_depth = 0
        self._wide_depth = 0
        self._collecting = False
        # _add[0]: the add of the set the running context records into
        # (a list read from the trace functions' closures: cheaper per
        # call than an attribute of the recorder).
        self._add: List[Callable[[CodeType], None]] = [self._wide.add]
        self.sources: Dict[str, Optional[str]] = {}  # absolute path -> source the kernel runs (None: unknown)
        self.module_of: Dict[str, str] = {}  # absolute path -> module name
        self._trees: Dict[str, Tuple[str, Units]] = {}  # absolute path -> (source, parsed units)
        self._snap_ns = 0
        self._trace = self._make_trace()
        self._tool: Optional[_Monitor] = None  # with sys.monitoring
        self.on = False

    # ---- recording

    def _make_trace(self) -> Trace:
        kind_of = self._kind
        rec = self

        def local(frame: FrameType, event: str, arg: object) -> Trace:
            if event == "return":
                if kind_of.get(frame.f_code) == 1:
                    rec._module_depth -= 1
                else:
                    rec._cache_depth -= 1
                rec._switch()
            return local

        get, add = kind_of.get, self._add

        def trace(frame: FrameType, event: str, arg: object) -> Optional[Trace]:
            code = frame.f_code
            k = get(code)
            if k == 0:
                add[0](code)
                return None
            if k is None:
                k = rec._classify(code)
                if k == 0:
                    add[0](code)
                    return None
            if k == 3:
                return None
            if k == 1:
                rec._module_depth += 1
            else:
                rec._cache_depth += 1
            rec._switch()
            add[0](code)  # a cached function itself is cached
            frame.f_trace_lines = False
            return local

        return trace

    def _classify(self, code: CodeType) -> int:
        f = code.co_filename
        if not f.startswith(self.prefix) or "site-packages" in f or "dist-packages" in f:
            k = 3
        elif code.co_name == "<module>":
            k = 1
        elif code in self._cached_codes:
            k = 2
        else:
            k = 0
        self._kind[code] = k
        return k

    def _switch(self) -> None:
        if self._module_depth > 0 or self._collecting:
            self._add[0] = self._import.add
        elif self._cache_depth > 0:
            self._add[0] = self._cached.add
        elif self._wide_depth > 0 or self._test is None:
            self._add[0] = self._wide.add
        else:
            self._add[0] = self._test.add

    def start(self) -> None:
        """Records from now on: with sys.monitoring (3.12+) in every
        thread, else with sys.settrace in this thread and in threads
        started later."""
        self.on = True
        if _MONITORING:
            self._tool = _Monitor(self)
            return
        sys.settrace(self._trace)
        threading.settrace(self._trace)

    def stop(self) -> None:
        self.on = False
        if self._tool is not None:
            self._tool.close()
            self._tool = None
            return
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]  # None turns it off; typeshed omits it

    def _intact(self) -> bool:
        """Whether the recording still runs (a test may replace the trace
        function, or free the monitoring tool id); it restarts it if not."""
        if self._tool is not None:
            if self._tool.intact():
                return True
            self._tool = _Monitor(self)
            return False
        if sys.gettrace() is self._trace:
            return True
        sys.settrace(self._trace)
        return False

    def collecting(self, on: bool) -> None:
        """Everything that runs during a "collect" op counts as import."""
        self._collecting = on
        self._module_depth = self._cache_depth = self._wide_depth = 0
        self._switch()
        if not on:
            self._fold()

    def wide(self, delta: int) -> None:
        """Enter (+1) or leave (-1) a fixture of a wider scope."""
        self._wide_depth += delta
        self._switch()

    def begin_test(self, nodeid: str) -> None:
        if self.on:
            self._intact()
        self._test, self._test_id = set(), nodeid
        self._module_depth = self._cache_depth = self._wide_depth = 0
        self._switch()

    def end_test(self) -> None:
        codes, nodeid = self._test, self._test_id
        self._test = self._test_id = None
        self._module_depth = self._cache_depth = self._wide_depth = 0
        self._switch()
        if nodeid is None or codes is None:
            return
        if self.on and not self._intact():
            # The test (or a tool) replaced the trace function: its record
            # is cut short.
            self.untraced.add(nodeid)
        else:
            self.untraced.discard(nodeid)
        units = frozenset(u for u in map(self.unit, codes) if u is not None)
        old = self.tests.get(nodeid, frozenset())
        for u in old - units:
            s = self.by_unit.get(u)
            if s is not None:
                s.discard(nodeid)
        for u in units - old:
            self.by_unit.setdefault(u, set()).add(nodeid)
        self.tests[nodeid] = units
        self._fold()

    def _fold(self) -> None:
        """Move the recorded code objects of the wider contexts to units
        (code objects of a purged module are not kept alive)."""
        for codes, units in ((self._import, self.import_units), (self._wide, self.wide_units),
                             (self._cached, self.cached_units)):
            units.update(u for u in map(self.unit, codes) if u is not None)
            codes.clear()

    def unit(self, code: CodeType) -> Optional[str]:
        u = self._unit.get(code, "")  # "": not seen yet (None: not a project function)
        if u != "":
            return u
        f = code.co_filename
        if not f.startswith(self.prefix):
            u = None
        else:
            q = getattr(code, "co_qualname", code.co_name)
            i = q.find(".<locals>")
            if i >= 0:
                q = q[:i]
            u = "%s::%s" % (os.path.relpath(f, self.root).replace(os.sep, "/"), q)
        self._unit[code] = u
        return u

    def forget_sources(self) -> None:
        """The project's modules were purged: they are imported again from
        disk, and snapshot() reads their sources again. The records of
        tests stay (units are names, not code objects)."""
        self.sources.clear()
        self.module_of.clear()
        self._trees.clear()
        self._kind.clear()
        self._unit.clear()

    # ---- after a collection

    def snapshot(self, started_ns: Optional[int] = None) -> None:
        """Notes the source of each project module the kernel imported,
        and the functions caches wrap. At the end of a collection
        (started_ns: when it started) it looks at every module; at the end
        of a run (None), at the modules imported since the last snapshot.
        A file changed since the collection started (or since the last
        snapshot began) may not be what was imported: its source is
        unknown (a change to it falls back)."""
        import time

        full = started_ns is not None
        bound = started_ns if started_ns is not None else self._snap_ns
        self._snap_ns = time.time_ns()
        cached: Set[CodeType] = set() if full else self._cached_codes
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if not f or not isinstance(f, str) or not f.endswith(".py"):
                continue
            f = os.path.abspath(f)
            if not f.startswith(self.prefix) or "site-packages" in f or "dist-packages" in f:
                continue
            new = f not in self.sources
            if new:
                try:
                    st = os.stat(f)
                    with open(f, "rb") as fh:
                        data = fh.read()
                    self.sources[f] = data.decode("utf-8") if st.st_mtime_ns < bound else None
                except (OSError, UnicodeDecodeError):
                    self.sources[f] = None
                self.module_of[f] = name
            if full or new:
                _cached_functions(mod, cached)
        self._cached_codes = cached
        for code in cached:
            if self._kind.get(code) == 0:
                self._kind[code] = 2
                if self._tool is not None:
                    self._tool.special(code)

    # ---- a saved change

    def plan(self, files: List[Tuple[str, str]]) -> Tuple[List[Patch], List[str], List[str]]:
        """files: [(relative path, new source)]. Returns (patches, changed
        units, moved units); raises Fallback, or SyntaxError for a source
        that does not parse."""
        patches: List[Patch] = []
        changed: List[str] = []
        moved: List[str] = []
        for rel, new in files:
            path = os.path.join(self.root, rel)
            p, c, m = self._plan_file(path, rel, new)
            patches += p
            changed += c
            moved += m
        for u in changed:
            for units, where in ((self.import_units, "ran while a module was imported or tests collected"),
                                 (self.wide_units, "ran in a fixture of module, class, package or session scope"),
                                 (self.cached_units, "ran under a cached function (a cache hit would not reach it)")):
                if u in units:
                    raise Fallback("%s %s" % (u, where))
        return patches, changed, moved

    def affected(self, changed: Iterable[str]) -> Set[str]:
        out = set(self.untraced)
        for u in changed:
            out |= self.by_unit.get(u, set())
        return out

    def _plan_file(self, path: str, rel: str, new: str) -> Tuple[List[Patch], List[str], List[str]]:
        old = self.sources.get(path)
        if old is None and path not in self.sources and loaded(path) is None:
            # Not imported in this kernel: nothing to patch; it imports
            # the saved source if a test needs it. Unless a test it ran
            # reached it before a purge: then its changed units are not
            # known here.
            mark = rel + "::"
            if any(u.startswith(mark) and t for u, t in self.by_unit.items()):
                raise Fallback("%s: tests reached it in this kernel, which no longer has it imported" % rel)
            return [], [], []
        if old is None:
            raise Fallback("%s: its source at import is not known (imported where no snapshot saw it, or changed since)" % rel)
        if old == new:
            return [], [], []
        cached = self._trees.get(path)
        if cached is None or cached[0] != old:
            # The first change of this module: its units as imported.
            cached = (old, Units(ast.parse(old, path)))
        old_u = cached[1]
        fast = edit_in_body(old_u, old, new, path)
        edits: List[Edit]
        if fast is None:
            # Not one edit inside one function body: the whole module.
            try:
                new_tree = ast.parse(new, path)
            except SyntaxError as e:
                e.filename = rel
                raise
            new_u = Units(new_tree)
            if old_u.skeleton != new_u.skeleton:
                raise Fallback("%s: module-level code, a class body, a decorator or a signature changed" % rel)
            if old_u.ambiguous or new_u.ambiguous:
                raise Fallback("%s: %s is defined twice" % (rel, sorted(old_u.ambiguous | new_u.ambiguous)[0]))
            edits = []
            for q, node in new_u.nodes.items():
                if old_u.bodies[q] != new_u.bodies[q]:
                    edits.append((q, node, 0))
                    continue
                (f0, _, e0), (f1, _, e1) = old_u.spans[q], new_u.spans[q]
                if (f0, e0) != (f1, e1):
                    edits.append((q, node, f1 - f0) if e1 - f1 == e0 - f0 else (q, node, 0))
        else:
            edits, new_u = fast
        mod = sys.modules.get(self.module_of.get(path, ""))
        if mod is None or os.path.abspath(getattr(mod, "__file__", "") or "") != path:
            raise Fallback("%s: its module is not loaded" % rel)
        if type(getattr(mod, "__loader__", None)).__name__ == "AssertionRewritingHook":
            raise Fallback("%s: pytest rewrote its asserts (a test module, conftest or registered for rewriting)" % rel)
        patches: List[Patch] = []
        changed: List[str] = []
        moved: List[str] = []
        for q, node, shift in edits:
            same = old_u.bodies[q] == new_u.bodies[q]
            unit = "%s::%s" % (rel, q)
            fn = locate(mod, q, path, old_u.spans[q][0])
            if fn is None:
                raise Fallback("%s: cannot find the live function %s" % (rel, q))
            if same and shift:
                # Only moved: the same code, its lines shifted.
                patches.append((fn, shifted(fn.__code__, shift), None, False, []))
                moved.append(unit)
                continue
            code = compile_unit(new_u, q, node, path)
            if code is None:
                raise Fallback("%s: %s did not compile to one function" % (rel, q))
            if code.co_freevars != fn.__code__.co_freevars:
                raise Fallback("%s: the free variables of %s changed" % (rel, q))
            if code.co_flags != fn.__code__.co_flags:
                raise Fallback("%s: %s changed kind (generator, coroutine) or its flags" % (rel, q))
            nested: List[Tuple[FunctionType, CodeType]] = []
            if not same and nested_defs(old_u.nodes[q]) != nested_defs(node):
                nested = stale_closures(fn.__code__, code)
            patches.append((fn, code, ast.get_docstring(node, clean=False) if not same else None, not same, nested))
            (moved if same else changed).append(unit)
        self._trees[path] = (new, new_u)
        return patches, changed, moved

    def apply(self, files: List[Tuple[str, str]], patches: List[Patch]) -> None:
        for fn, code, doc, body, nested in patches:
            fn.__code__ = code
            if body and fn.__doc__ != doc:
                fn.__doc__ = doc
            for f, c in nested:
                f.__code__ = c
        for rel, new in files:
            self.sources[os.path.join(self.root, rel)] = new


_MONITORING = hasattr(sys, "monitoring") and os.environ.get("RIPPLE_WATCH_SETTRACE") != "1"


class _Monitor:
    """The recorder on sys.monitoring (3.12+): PY_START and PY_RESUME of
    every function, disabled for good at code that is not the project's
    (so only project calls cost a callback, and no frame objects are
    made); PY_RETURN and PY_YIELD only on the special codes (module code,
    cached functions) whose depth the recorder counts, PY_UNWIND (global
    only in sys.monitoring) filtered to them."""

    NAME = "ripple-watch"

    def __init__(self, rec: Recorder) -> None:
        mon = sys.monitoring  # type: ignore[attr-defined]  # 3.12+; mypy checks as 3.9
        self.rec, self.mon = rec, mon
        self.id: Optional[int] = None
        for i in range(mon.PROFILER_ID, 6):
            if mon.get_tool(i) is None:
                mon.use_tool_id(i, self.NAME)
                self.id = i
                break
        if self.id is None:
            raise RuntimeError("no free sys.monitoring tool id for --watch's recorder")
        ev = mon.events
        kind_of, disable, add = rec._kind, mon.DISABLE, rec._add
        special = self.special

        def start(code: CodeType, offset: int) -> object:
            k = kind_of.get(code)
            if k == 0:
                add[0](code)
                return None
            if k is None:
                k = rec._classify(code)
                if k == 1 or k == 2:
                    special(code)
            if k == 3:
                return disable
            if k == 1:
                rec._module_depth += 1
                rec._switch()
            elif k == 2:
                rec._cache_depth += 1
                rec._switch()
            add[0](code)  # a cached function itself is cached
            return None

        def leave(code: CodeType, offset: int, arg: object) -> None:
            k = kind_of.get(code)
            if k == 1:
                rec._module_depth -= 1
                rec._switch()
            elif k == 2:
                rec._cache_depth -= 1
                rec._switch()

        for e, f in ((ev.PY_START, start), (ev.PY_RESUME, start), (ev.PY_RETURN, leave),
                     (ev.PY_YIELD, leave), (ev.PY_UNWIND, leave)):
            mon.register_callback(self.id, e, f)
        mon.set_events(self.id, ev.PY_START | ev.PY_RESUME | ev.PY_UNWIND)

    def special(self, code: CodeType) -> None:
        ev = self.mon.events
        self.mon.set_local_events(self.id, code, ev.PY_RETURN | ev.PY_YIELD)

    def intact(self) -> bool:
        return self.mon.get_tool(self.id) == self.NAME

    def close(self) -> None:
        if self.intact():
            self.mon.set_events(self.id, 0)
            self.mon.free_tool_id(self.id)


def _cached_functions(mod: ModuleType, out: Set[CodeType]) -> None:
    """The code objects of the functions caches wrap in module mod (its
    namespace and its classes'): an object with cache_clear and a
    __wrapped__ chain (functools.lru_cache, functools.cache, sympy's
    cacheit)."""
    try:
        values = list(vars(mod).values())
    except TypeError:
        return
    name = getattr(mod, "__name__", None)
    for v in values:
        _cached_one(v, out)
        if isinstance(v, type) and v.__module__ == name:
            for cv in list(vars(v).values()):
                _cached_one(cv, out)


def _cached_one(v: object, out: Set[CodeType]) -> None:
    if isinstance(v, (staticmethod, classmethod)):
        v = v.__func__
    elif isinstance(v, property):
        v = v.fget
    d = getattr(v, "__dict__", None) if type(v).__name__ in ("function", "_lru_cache_wrapper") else None
    if not isinstance(d, dict) or "__wrapped__" not in d or not hasattr(v, "cache_clear"):
        return
    w = d["__wrapped__"]
    for _ in range(8):
        c = getattr(w, "__code__", None)
        if c is not None:
            out.add(c)
        dd = getattr(w, "__dict__", None)
        if not isinstance(dd, dict) or "__wrapped__" not in dd:
            break
        w = dd["__wrapped__"]
