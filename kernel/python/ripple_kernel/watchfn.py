"""ripple run --tests --watch at function granularity: the kernel side.

Two parts, both used only by a watch (ripple_pytest.py's "collect" with
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

The patcher (plan / apply) takes a saved module's new source, diffs it
against the source the kernel imported (ast without positions) and, when
only function or method bodies changed, replaces those functions'
__code__ in place, so every reference (imports elsewhere, decorators'
__wrapped__, bound methods) sees the new body. Anything else is a
fallback with its reason: the caller then forgets and re-imports the
project (batch/watch.go's module path).

Ownership: this kernel's Recorder holds the record of the tests that ran
in this kernel; the Go side asks every kernel and merges the answers.
"""

import ast
import gc
import os
import sys
import threading

# Node types whose body is a function unit.
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Fallback(Exception):
    """The change cannot be patched in place: the message says why."""


class Recorder:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.prefix = self.root + os.sep
        self.tests = {}  # nodeid -> frozenset of units
        self.by_unit = {}  # unit -> set of nodeids
        self.untraced = set()
        self.import_units = set()
        self.wide_units = set()
        self.cached_units = set()
        self._unit = {}  # code -> unit, or None (not a project function)
        self._kind = {}  # code -> 0 plain, 1 module code, 2 cached, 3 other
        self._cached_codes = set()
        self._import = set()
        self._wide = set()
        self._cached = set()
        self._test = None  # the set of the running test
        self._test_id = None
        self._module_depth = 0
        self._cache_depth = 0
        self._wide_depth = 0
        self._collecting = False
        # _add[0]: the add of the set the running context records into
        # (a list read from the trace functions' closures: cheaper per
        # call than an attribute of the recorder).
        self._add = [self._wide.add]
        self.sources = {}  # absolute path -> source the kernel runs (None: unknown)
        self.module_of = {}  # absolute path -> module name
        self._trees = {}  # absolute path -> (source, parsed units)
        self._snap_ns = 0
        self._trace = self._make_trace()
        self._tool = None  # _Monitor, with sys.monitoring
        self.on = False

    # ---- recording

    def _make_trace(self):
        kind_of = self._kind
        rec = self

        def local(frame, event, arg):
            if event == "return":
                if kind_of.get(frame.f_code) == 1:
                    rec._module_depth -= 1
                else:
                    rec._cache_depth -= 1
                rec._switch()
            return local

        get, add = kind_of.get, self._add

        def trace(frame, event, arg):
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

    def _classify(self, code):
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

    def _switch(self):
        if self._module_depth > 0 or self._collecting:
            self._add[0] = self._import.add
        elif self._cache_depth > 0:
            self._add[0] = self._cached.add
        elif self._wide_depth > 0 or self._test is None:
            self._add[0] = self._wide.add
        else:
            self._add[0] = self._test.add

    def start(self):
        """Records from now on: with sys.monitoring (3.12+) in every
        thread, else with sys.settrace in this thread and in threads
        started later."""
        self.on = True
        if _MONITORING:
            self._tool = _Monitor(self)
            return
        sys.settrace(self._trace)
        threading.settrace(self._trace)

    def stop(self):
        self.on = False
        if self._tool is not None:
            self._tool.close()
            self._tool = None
            return
        sys.settrace(None)
        threading.settrace(None)

    def _intact(self):
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

    def collecting(self, on):
        """Everything that runs during a "collect" op counts as import."""
        self._collecting = on
        self._module_depth = self._cache_depth = self._wide_depth = 0
        self._switch()
        if not on:
            self._fold()

    def wide(self, delta):
        """Enter (+1) or leave (-1) a fixture of a wider scope."""
        self._wide_depth += delta
        self._switch()

    def begin_test(self, nodeid):
        if self.on:
            self._intact()
        self._test, self._test_id = set(), nodeid
        self._module_depth = self._cache_depth = self._wide_depth = 0
        self._switch()

    def end_test(self):
        codes, nodeid = self._test, self._test_id
        self._test = self._test_id = None
        self._module_depth = self._cache_depth = self._wide_depth = 0
        self._switch()
        if nodeid is None:
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

    def _fold(self):
        """Move the recorded code objects of the wider contexts to units
        (code objects of a purged module are not kept alive)."""
        for codes, units in ((self._import, self.import_units), (self._wide, self.wide_units),
                             (self._cached, self.cached_units)):
            units.update(u for u in map(self.unit, codes) if u is not None)
            codes.clear()

    def unit(self, code):
        u = self._unit.get(code, 0)
        if u != 0:
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

    def forget_sources(self):
        """The project's modules were purged: they are imported again from
        disk, and snapshot() reads their sources again. The records of
        tests stay (units are names, not code objects)."""
        self.sources.clear()
        self.module_of.clear()
        self._trees.clear()
        self._kind.clear()
        self._unit.clear()

    # ---- after a collection

    def snapshot(self, started_ns=None):
        """Notes the source of each project module the kernel imported,
        and the functions caches wrap. At the end of a collection
        (started_ns: when it started) it looks at every module; at the end
        of a run (None), at the modules imported since the last snapshot.
        A file changed since the collection started (or since the last
        snapshot began) may not be what was imported: its source is
        unknown (a change to it falls back)."""
        import time

        full = started_ns is not None
        bound = started_ns if full else self._snap_ns
        self._snap_ns = time.time_ns()
        cached = set() if full else self._cached_codes
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

    def plan(self, files):
        """files: [(relative path, new source)]. Returns (patches, changed
        units, moved units); raises Fallback, or SyntaxError for a source
        that does not parse."""
        patches, changed, moved = [], [], []
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

    def affected(self, changed):
        out = set(self.untraced)
        for u in changed:
            out |= self.by_unit.get(u, set())
        return out

    def _plan_file(self, path, rel, new):
        old = self.sources.get(path)
        if old is None and path not in self.sources and _loaded(path) is None:
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
            cached = (old, _Units(ast.parse(old, path)))
        old_u = cached[1]
        edits = _edit_in_body(old_u, old, new, path)
        if edits is None:
            # Not one edit inside one function body: the whole module.
            try:
                new_tree = ast.parse(new, path)
            except SyntaxError as e:
                e.filename = rel
                raise
            new_u = _Units(new_tree)
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
            edits, new_u = edits
        mod = sys.modules.get(self.module_of.get(path, ""))
        if mod is None or os.path.abspath(getattr(mod, "__file__", "") or "") != path:
            raise Fallback("%s: its module is not loaded" % rel)
        if type(getattr(mod, "__loader__", None)).__name__ == "AssertionRewritingHook":
            raise Fallback("%s: pytest rewrote its asserts (a test module, conftest or registered for rewriting)" % rel)
        patches, changed, moved = [], [], []
        for q, node, shift in edits:
            same = old_u.bodies[q] == new_u.bodies[q]
            unit = "%s::%s" % (rel, q)
            fn = _locate(mod, q, path, old_u.spans[q][0])
            if fn is None:
                raise Fallback("%s: cannot find the live function %s" % (rel, q))
            if same and shift:
                # Only moved: the same code, its lines shifted.
                patches.append((fn, _shifted(fn.__code__, shift), None, False, []))
                moved.append(unit)
                continue
            code = _compile_unit(new_u, q, node, path)
            if code is None:
                raise Fallback("%s: %s did not compile to one function" % (rel, q))
            if code.co_freevars != fn.__code__.co_freevars:
                raise Fallback("%s: the free variables of %s changed" % (rel, q))
            if code.co_flags != fn.__code__.co_flags:
                raise Fallback("%s: %s changed kind (generator, coroutine) or its flags" % (rel, q))
            nested = []
            if not same and _nested_defs(old_u.nodes[q]) != _nested_defs(node):
                nested = _stale_closures(fn.__code__, code)
            patches.append((fn, code, ast.get_docstring(node, clean=False) if not same else None, not same, nested))
            (moved if same else changed).append(unit)
        self._trees[path] = (new, new_u)
        return patches, changed, moved

    def apply(self, files, patches):
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

    def __init__(self, rec):
        mon = sys.monitoring
        self.rec, self.mon = rec, mon
        self.id = None
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

        def start(code, offset):
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

        def leave(code, offset, arg):
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

    def special(self, code):
        ev = self.mon.events
        self.mon.set_local_events(self.id, code, ev.PY_RETURN | ev.PY_YIELD)

    def intact(self):
        return self.mon.get_tool(self.id) == self.NAME

    def close(self):
        if self.intact():
            self.mon.set_events(self.id, 0)
            self.mon.free_tool_id(self.id)


def _loaded(path):
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if isinstance(f, str) and os.path.abspath(f) == path:
            return mod
    return None


class _Units:
    """A module's function units: per qualname its def node and the dump
    of its body (no positions); the skeleton is the dump of everything
    else (bodies replaced by pass)."""

    def __init__(self, tree):
        # spans: per qualname (first line, decorators included; first line
        # of the body; last line), kept true when an edit moves the unit
        # (the nodes of units an edit did not touch keep their old
        # positions: only their dumps, which have none, are read).
        self.nodes, self.bodies, self.spans, self.ambiguous = {}, {}, {}, set()
        self.future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
        body = self._strip(tree.body, "")
        self.skeleton = ast.dump(ast.Module(body=body, type_ignores=[]))

    def _strip(self, body, prefix):
        out = []
        for node in body:
            if isinstance(node, _FUNCS):
                q = prefix + node.name
                if q in self.nodes:
                    self.ambiguous.add(q)
                self.nodes[q] = node
                self.bodies[q] = ast.dump(ast.Module(body=node.body, type_ignores=[]))
                self.spans[q] = (_first_line(node), node.body[0].lineno, node.end_lineno)
                stub = type(node)(**{f: getattr(node, f, None) for f in node._fields})
                stub.body = [ast.Pass()]
                out.append(stub)
            elif isinstance(node, ast.ClassDef):
                stub = ast.ClassDef(**{f: getattr(node, f, None) for f in node._fields})
                stub.body = self._strip(node.body, prefix + node.name + ".")
                out.append(stub)
            else:
                out.append(node)
        return out


def _edit_in_body(units, old, new, path):
    """The fast path of a one-place edit: when the lines that differ
    between old and new lie inside one unit's body, only that unit's new
    text is parsed (a module of thousands of lines costs tens of ms to
    parse and dump whole). Returns ([(qualname, new def node, 0)] plus the
    units after the edit with the lines they moved by, the updated units),
    or None: take the whole module."""
    a, b = old.splitlines(True), new.splitlines(True)
    lo = 0
    n = min(len(a), len(b))
    while lo < n and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < n - lo and a[len(a) - 1 - hi] == b[len(b) - 1 - hi]:
        hi += 1
    first, last = lo + 1, len(a) - hi  # old lines first..last differ (1-based; none when last < first)
    delta = len(b) - len(a)
    hit = None
    for q, (f, body, end) in units.spans.items():
        if body <= first and max(first, last) <= end:
            if body == f or hit is not None:
                return None  # body on the def's line, or nesting we do not handle
            hit = q
    if hit is None or hit in units.ambiguous:
        return None
    f, body, end = units.spans[hit]
    seg = "".join(b[f - 1:end + delta])
    node = units.nodes[hit]
    indented = seg[:1] in (" ", "\t")
    try:
        tree = ast.parse(("if 1:\n" + seg) if indented else seg, path)
    except SyntaxError:
        return None  # the whole module says where
    ast.increment_lineno(tree, f - 2 if indented else f - 1)
    stmts = tree.body[0].body if indented and len(tree.body) == 1 and isinstance(tree.body[0], ast.If) else tree.body
    if len(stmts) != 1 or type(stmts[0]) is not type(node) or stmts[0].name != node.name:
        return None
    new_node = stmts[0]
    if new_node.end_lineno != end + delta or _signature(new_node) != _signature(node):
        return None
    out = _copy_units(units)
    out.nodes[hit] = new_node
    out.bodies[hit] = ast.dump(ast.Module(body=new_node.body, type_ignores=[]))
    out.spans[hit] = (_first_line(new_node), new_node.body[0].lineno, new_node.end_lineno)
    edits = [(hit, new_node, 0)]
    if delta:
        for q, (f2, body2, end2) in units.spans.items():
            if f2 > end:
                out.spans[q] = (f2 + delta, body2 + delta, end2 + delta)
                edits.append((q, units.nodes[q], delta))
    return edits, out


def _copy_units(units):
    out = _Units.__new__(_Units)
    out.nodes, out.bodies, out.spans = dict(units.nodes), dict(units.bodies), dict(units.spans)
    out.ambiguous, out.future, out.skeleton = units.ambiguous, units.future, units.skeleton
    return out


def _signature(node):
    return ast.dump(type(node)(**{f: getattr(node, f, None) for f in node._fields if f != "body"}))


def _shifted(code, delta):
    """code with its lines (and its nested code objects') moved by delta."""
    consts = tuple(_shifted(c, delta) if hasattr(c, "co_code") else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + delta, co_consts=consts)


def _first_line(node):
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


def _compile_unit(units, q, node, path):
    """The code object of function q alone: its def, inside classes of the
    same names (the qualname, private name mangling and __class__ cell of
    the real module), after the module's __future__ imports."""
    stmt = node
    parts = q.split(".")
    for name in reversed(parts[:-1]):
        stmt = ast.ClassDef(name=name, bases=[], keywords=[], body=[stmt], decorator_list=[],
                            lineno=node.lineno, col_offset=0, end_lineno=node.end_lineno, end_col_offset=0)
    mod = ast.Module(body=list(units.future) + [stmt], type_ignores=[])
    ast.fix_missing_locations(mod)
    top = compile(mod, path, "exec", dont_inherit=True)
    found = [c for c in _codes(top) if getattr(c, "co_qualname", c.co_name) == q]
    return found[0] if len(found) == 1 else None


def _codes(code):
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield c
            yield from _codes(c)


def _nested_defs(node):
    return [ast.dump(n) for n in ast.walk(node) if n is not node and isinstance(n, _FUNCS + (ast.Lambda, ast.ClassDef))]


def _stale_closures(old, new):
    """Function objects made from old's nested code objects (closures
    created by earlier calls, kept somewhere), with the new code of the
    same qualname: they are patched too. Fallback when one cannot be."""
    by_name = {}
    for c in _codes(new):
        by_name.setdefault(getattr(c, "co_qualname", c.co_name), []).append(c)
    olds = list(_codes(old))
    out = []
    if not olds:
        return out
    ids = {id(c): c for c in olds}
    for ref in gc.get_referrers(*olds):
        if type(ref).__name__ != "function" or id(ref.__code__) not in ids:
            continue
        q = getattr(ref.__code__, "co_qualname", ref.__code__.co_name)
        cands = by_name.get(q, [])
        if len(cands) != 1 or cands[0].co_freevars != ref.__code__.co_freevars:
            raise Fallback("a closure %s made by an earlier call cannot be updated" % q)
        out.append((ref, cands[0]))
    return out


def _locate(mod, q, path, first_line):
    """The live function object of unit q in module mod, through classes,
    staticmethod/classmethod/property and __wrapped__ chains; None when
    it is not found or is not the one imported from the saved source
    (first_line: its def's first line there)."""
    parts = q.split(".")
    owner = mod
    for name in parts[:-1]:
        owner = vars(owner).get(name) if hasattr(owner, "__dict__") else None
        if not isinstance(owner, type):
            return None
    try:
        obj = vars(owner).get(parts[-1])
    except TypeError:
        return None
    for fn in _functions(obj, 0):
        c = fn.__code__
        if getattr(c, "co_qualname", c.co_name) == q and os.path.abspath(c.co_filename) == path:
            return fn if c.co_firstlineno == first_line else None
    return None


def _functions(obj, depth):
    if obj is None or depth > 8:
        return
    if type(obj).__name__ == "function":
        yield obj
    if isinstance(obj, (staticmethod, classmethod)):
        yield from _functions(obj.__func__, depth + 1)
        return
    if isinstance(obj, property):
        for f in (obj.fget, obj.fset, obj.fdel):
            yield from _functions(f, depth + 1)
        return
    try:
        d = object.__getattribute__(obj, "__dict__")
    except Exception:  # no __dict__; never the object's own __getattr__
        return
    if isinstance(d, dict) and "__wrapped__" in d:
        yield from _functions(d["__wrapped__"], depth + 1)


def _cached_functions(mod, out):
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


def _cached_one(v, out):
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
