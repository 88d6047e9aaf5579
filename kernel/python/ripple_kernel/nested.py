"""Values of the statements nested in a compound statement (the update's
``inner``, kernel/PROTOCOL.md "Inner values").

A frame's expressions are the statements directly in its body (PROTOCOL
5.2); an ``if``/``for``/``while``/``with``/``try``/``match`` statement's
own value is None. Its inner statements (assignments, augmented and
annotated assignments, expression statements, at any depth but never
inside a nested def, class or lambda) are reported with its update: the
last value each had in the run and how many times it completed.

Cost: a loop may run an inner statement a million times, so the
instrumented code does no call per execution (instrument()). An inner
statement that alone binds a plain name in the compound statement
(``x = e``, ``total += e``: Layout.names) records nothing: its last value
is the name's after the statement. Any other one also stores its value in
a slot of a list (``t = VALUES[k] = e``). Each straight run of simple
statements (a segment, Layout) adds 1 to its counter when it starts, but
the one that starts the body of a ``for NAME in range(...)``: the loop's
range iterator counts it (Slots.loop: its length less what is left of it,
no code per iteration); a handler around the segment notes where an
exception left it (Slots.cut, a call only then) and raises it again, so
a statement's count is its segment's starts less the cuts at or before
it. The Slots, its values and its counts lists are put in the code's
constants for the run (Patches.bind: their names are loaded as
constants, no lookup per execution, and the user's namespace never holds
them); where that rewrite of the bytecode is not possible, they are bound
in the namespace for the statement's run instead. Previews, type names
and ranges are made once, after the statement (report()). What the code
computes is unchanged: the value is the one the statement computed, read
once; only the last value's lifetime is longer (until the statement
ends). (A name read after the statement shows a rebinding by code outside
it that the loop called, a function's ``global``: rare, and the value is
then the name's at the end.) bench/inner/loops.py measures the cost.

A statement with more than MAX_INNER inner statements reports the first
MAX_INNER.
"""

from __future__ import annotations

import ast
import dis
import itertools
import operator
import sys
import types
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from . import values

if TYPE_CHECKING:
    from .api import WireObject

# The names of the run's Slots and of its values and counts lists in the
# instrumented code (Patches.bind loads them as constants).
SLOTS = "__ripple_inner__"
VALUES = "__ripple_inner_values__"
COUNTS = "__ripple_inner_counts__"
_NAMES = (SLOTS, VALUES, COUNTS)

MAX_INNER = 256

# Compound statements whose bodies run in the frame (not a new scope).
_COMPOUND: Tuple[type, ...] = (ast.If, ast.For, ast.While, ast.With, ast.Try)
if hasattr(ast, "TryStar"):
    _COMPOUND += (getattr(ast, "TryStar"),)
if hasattr(ast, "Match"):
    _COMPOUND += (getattr(ast, "Match"),)

_VALUED = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)

_UNSET = object()  # a value slot never written


def is_compound(node: ast.stmt) -> bool:
    """Whether node has nested statements that report inner values."""
    return isinstance(node, _COMPOUND)


def _bodies(node: ast.stmt) -> Iterator[List[ast.stmt]]:
    """The statement lists directly under a compound statement, in source
    order (a try's handlers come before its else)."""
    yield getattr(node, "body", None) or []
    for handler in getattr(node, "handlers", None) or ():
        yield handler.body
    yield getattr(node, "orelse", None) or []
    yield getattr(node, "finalbody", None) or []
    for case in getattr(node, "cases", None) or ():
        yield case.body


def _reported(stmt: ast.stmt) -> bool:
    """Whether an inner statement reports a value (an annotation without
    a value does nothing)."""
    return isinstance(stmt, _VALUED) and not (isinstance(stmt, ast.AnnAssign) and stmt.value is None)


# Statements that leave a straight run of statements only by an
# exception (a segment: Layout).
_SIMPLE = _VALUED + (ast.Pass, ast.Delete, ast.Assert, ast.Raise, ast.Import, ast.ImportFrom)

# A segment's statements: (the statement, its inner index, -1 when it
# reports nothing), in order.
_Items = List[Tuple[ast.stmt, int]]


class Layout:
    """Where a compound statement's inner statements are: nodes, the ones
    that report values (at most MAX_INNER), in source order (their inner
    index); segments, each a straight run of simple statements of one body
    holding at least one of them, in source order, with the body list and
    the run's place in it (start, end); where[k], inner statement k's
    (segment, place in the segment); names[k], the plain name whose value
    after the statement is inner statement k's last value (None: its value
    is stored, _named; stored: names code it calls may rebind); loops, the ``for NAME in range(...)`` loops whose
    body starts with a segment, with that segment: it starts once per
    iteration, so the loop's iterator counts it (Slots.loop)."""

    __slots__ = ("nodes", "segments", "where", "names", "loops", "_bound")

    def __init__(self, node: ast.stmt, stored: FrozenSet[str] = frozenset()) -> None:
        self.nodes: List[ast.stmt] = []
        self.segments: List[Tuple[List[ast.stmt], int, int, _Items]] = []
        self.where: List[Tuple[int, int]] = []
        self.names: List[Optional[str]] = []
        self.loops: List[Tuple[ast.For, int]] = []
        self._bound: Dict[str, int] = {}
        if is_compound(node):
            self._bound = _bindings(node)
            for name in stored:  # rebound by code it calls: not its alone
                self._bound[name] = 2
            self._walk(node)

    def _walk(self, node: ast.stmt) -> None:
        loop = node if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and _is_range(node.iter) else None
        for body in _bodies(node):
            counted = loop if loop is not None and body is loop.body else None
            run: _Items = []
            start = 0
            for i, stmt in enumerate(body):
                if isinstance(stmt, _SIMPLE):
                    if not run:
                        start = i
                    k = -1
                    if _reported(stmt) and len(self.nodes) < MAX_INNER:
                        k = len(self.nodes)
                        self.nodes.append(stmt)
                        self.names.append(_named(stmt, self._bound))
                    run.append((stmt, k))
                    continue
                self._close(body, start, run, counted if start == 0 else None)
                run = []
                if is_compound(stmt):
                    self._walk(stmt)
            self._close(body, start, run, counted if start == 0 else None)

    def _close(self, body: List[ast.stmt], start: int, run: _Items, loop: Optional[ast.stmt]) -> None:
        if any(k >= 0 for _, k in run):
            seg = len(self.segments)
            self.segments.append((body, start, start + len(run), run))
            self.where.extend((seg, pos) for pos, (_, k) in enumerate(run) if k >= 0)
            if isinstance(loop, ast.For) and not any(seg_loop is loop for seg_loop, _ in self.loops):
                self.loops.append((loop, seg))


def _is_range(node: ast.expr) -> bool:
    """Whether node is a call ``range(...)`` of positional arguments (the
    name may be rebound: Slots.loop checks the value)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
            and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args))


def _bindings(node: ast.stmt) -> Dict[str, int]:
    """How many places in node (nested scopes included) bind, delete or
    declare (global, nonlocal) each name."""
    out: Dict[str, int] = {}

    def add(name: Optional[str]) -> None:
        if name:
            out[name] = out.get(name, 0) + 1

    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            if not isinstance(n.ctx, ast.Load):
                add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for alias in n.names:
                add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            for name in n.names:
                add(name)
        elif isinstance(n, ast.ExceptHandler):
            add(n.name)
        else:  # match patterns: MatchAs, MatchStar (name), MatchMapping (rest)
            add(getattr(n, "name", None) if type(n).__name__ in ("MatchAs", "MatchStar") else None)
            add(getattr(n, "rest", None) if type(n).__name__ == "MatchMapping" else None)
    return out


def _named(stmt: ast.stmt, bound: Dict[str, int]) -> Optional[str]:
    """The name an inner statement assigns when its last value can be read
    from the namespace after the compound statement: a plain name that it
    alone binds in the compound statement, so no other statement of it can
    rebind or delete the name after the statement's last run (None: the
    statement stores its value). Code outside the statement that a call
    reaches could still rebind it (a ``global`` in a function the loop
    calls when the plan does not see it, exec): the value shown is then the
    name's at the end."""
    if isinstance(stmt, ast.Assign):
        target: Optional[ast.expr] = stmt.targets[0] if len(stmt.targets) == 1 else None
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        target = stmt.target
    else:
        return None
    if isinstance(target, ast.Name) and bound.get(target.id) == 1:
        return target.id
    return None


def inner_statements(node: ast.stmt) -> List[ast.stmt]:
    """The inner statements of node that report values, in source order,
    at most MAX_INNER (instrument and report number them alike)."""
    return Layout(node).nodes


def instrument(node: ast.stmt, stored: FrozenSet[str] = frozenset()) -> int:
    """Rewrite the inner statements of node (a copy: compile_statement's)
    in place so that they record their values and counts; returns how many
    there are (0: node is unchanged).

    Each segment (Layout) counts its starts and wraps its statements in a
    handler that notes where an exception cut it short (Slots.cut) and
    raises it again, unchanged: a statement's count is its segment's
    starts less the cuts at or before it, one counter per straight run of
    statements rather than one per statement. A segment that starts a
    ``for NAME in range(...)`` body is counted by the loop's iterator
    (Slots.loop), no code per iteration; a statement whose value is a
    name's after the compound statement (Layout.names) stores nothing;
    stored: as Layout's."""
    lay = Layout(node, stored)
    looped = {seg for _, seg in lay.loops}
    # Last segment first: a rewrite changes the places after it in its body.
    for seg in range(len(lay.segments) - 1, -1, -1):
        body, start, end, items = lay.segments[seg]
        body[start:end] = _wrapped(seg, items, lay.names, seg not in looped)
    for loop, seg in lay.loops:
        call = ast.Call(func=ast.Attribute(value=ast.Name(id=SLOTS, ctx=ast.Load()), attr="loop", ctx=ast.Load()),
                        args=[ast.Constant(value=seg), loop.iter], keywords=[])
        for n in (call, call.func, call.func.value, call.args[0]):  # type: ignore[attr-defined]  # an Attribute
            ast.copy_location(n, loop.iter)
        loop.iter = call
    return len(lay.nodes)


def _wrapped(seg: int, items: _Items, names: List[Optional[str]], counted: bool) -> List[ast.stmt]:
    """A segment's statements recording their values, after its start is
    counted (unless its loop counts it), in a handler of its cuts:
    ``COUNTS[seg] += 1; try: ... except BaseException: S.cut(seg); raise``."""
    first = items[0][0]
    inner: List[ast.stmt] = []
    for stmt, k in items:
        inner.extend(_recorded(stmt, k) if k >= 0 and names[k] is None else [stmt])
    cut = ast.Call(func=ast.Attribute(value=ast.Name(id=SLOTS, ctx=ast.Load()), attr="cut", ctx=ast.Load()),
                   args=[ast.Constant(value=seg)], keywords=[])
    handler = ast.ExceptHandler(type=ast.Name(id="BaseException", ctx=ast.Load()), name=None,
                                body=[ast.Expr(value=cut), ast.Raise(exc=None, cause=None)])
    wrapper = ast.Try(body=inner, handlers=[handler], orelse=[], finalbody=[])
    for n in (wrapper, handler):
        ast.copy_location(n, first)
    for n in ast.walk(handler):
        if n is not handler:
            ast.copy_location(n, first)
    if not counted:
        return [wrapper]
    count = ast.AugAssign(target=_slot(COUNTS, seg, ast.Store(), first), op=ast.Add(), value=ast.Constant(value=1))
    for n in ast.walk(count):
        ast.copy_location(n, first)
    return [count, wrapper]


def _slot(name: str, k: int, ctx: ast.expr_context, at: ast.stmt) -> ast.Subscript:
    """name[k], name VALUES or COUNTS (a constant list: Patches.bind)"""
    sub = ast.Subscript(value=ast.Name(id=name, ctx=ast.Load()), slice=ast.Constant(value=k), ctx=ctx)
    for n in (sub, sub.value, sub.slice):
        ast.copy_location(n, at)
    return sub


def _recorded(stmt: ast.stmt, k: int) -> List[ast.stmt]:
    """stmt followed (or replaced) by what records its value in slot k.
    The value is stored only once the statement's own targets are bound
    (``t = VALUES[k] = e`` assigns t first): a statement that raised
    leaves the value of its last run that completed."""
    if isinstance(stmt, ast.Assign):
        stmt.targets = stmt.targets + [_slot(VALUES, k, ast.Store(), stmt)]
        return [stmt]
    if isinstance(stmt, ast.Expr):
        return [ast.copy_location(ast.Assign(targets=[_slot(VALUES, k, ast.Store(), stmt)], value=stmt.value), stmt)]
    # AugAssign, AnnAssign: the target's new value, read back when it is a plain name
    target = stmt.target  # type: ignore[attr-defined]  # both have target
    if not isinstance(target, ast.Name):
        return [stmt]
    read = ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), stmt)
    return [stmt, ast.copy_location(ast.Assign(targets=[_slot(VALUES, k, ast.Store(), stmt)], value=read), stmt)]


_FIRST = operator.itemgetter(0)


class Slots:
    """What one run of an instrumented statement records: each inner
    statement's last value, each segment's starts and cuts (Layout,
    instrument). Hashed by identity, so the code holding it as a constant
    hashes as code does (a tracer's dict keyed by code objects)."""

    __slots__ = ("values", "counts", "cuts", "layout", "ns", "ranges", "counters")

    def __init__(self, layout: Layout, ns: Dict[str, object]) -> None:
        self.layout = layout
        self.ns = ns  # the namespace the statement runs in (Layout.names are read from it)
        self.values: List[object] = [_UNSET] * len(layout.nodes)
        self.counts: List[int] = [0] * len(layout.segments)  # per segment: its starts (loops: folded in, _fold)
        self.cuts: Dict[int, List[int]] = {}  # segment -> per place: exceptions that left it there
        # Per loop-counted segment (Layout.loops): its loop's latest range
        # iterator with its length when it started; the counter of a loop
        # whose range() was not a range.
        self.ranges: Dict[int, Tuple[Iterator[int], int]] = {}
        self.counters: Dict[int, Iterator[int]] = {}

    def loop(self, seg: int, r: Iterable[object]) -> Iterable[object]:
        """What a ``for NAME in range(...)`` loop whose body starts with
        segment seg iterates over: r's own iterator when r is a range (its
        items are not counted one by one: the iterations are its length
        less what is left of it, _fold), else r's items through a C
        counter (the name range was rebound). A range iterator holds no
        user object, so keeping it until the statement ends keeps nothing
        of the user's alive."""
        if type(r) is not range:
            counter = self.counters.get(seg)
            if counter is None:
                counter = self.counters[seg] = itertools.count()
            return map(_FIRST, zip(r, counter))
        started = self.ranges.get(seg)
        if started is not None:
            self.counts[seg] += started[1] - operator.length_hint(started[0])
        it = iter(r)
        self.ranges[seg] = (it, operator.length_hint(it))
        return it

    def _fold(self) -> None:
        """Add the iterations of the loops (loop) to their segments' starts."""
        for seg, (it, length) in self.ranges.items():
            self.counts[seg] += length - operator.length_hint(it)
        for seg, counter in self.counters.items():
            self.counts[seg] += next(counter)  # the items it counted
        self.ranges = {}
        self.counters = {}

    def cut(self, seg: int) -> None:
        """An exception is leaving segment seg: note the statement it left
        from (its traceback's entry for the running code, the first)."""
        exc = sys.exc_info()[1]
        tb = exc.__traceback__ if exc is not None else None
        if tb is None:
            return
        line, col = tb.tb_lineno, _column(tb.tb_frame.f_code, tb.tb_lasti)
        items = self.layout.segments[seg][3]
        place = 0
        for i, (stmt, _) in enumerate(items):
            if (stmt.lineno, stmt.col_offset) <= (line, col if col is not None else stmt.col_offset):
                place = i
        cuts = self.cuts.get(seg)
        if cuts is None:
            cuts = self.cuts[seg] = [0] * len(items)
        cuts[place] += 1

    def count(self, k: int) -> int:
        """How many times inner statement k completed."""
        seg, place = self.layout.where[k]
        cuts = self.cuts.get(seg)
        return self.counts[seg] - (sum(cuts[:place + 1]) if cuts else 0)

    @staticmethod
    def unbind(ns: Dict[str, object]) -> None:
        """Take the Slots out of the namespace when Patches.bind put it
        there (the user's code never sees it after its statement)."""
        for name in _NAMES:
            ns.pop(name, None)

    def report(self, where: Place, raised: Optional[BaseException] = None,
               code: Optional[types.CodeType] = None) -> List[WireObject]:
        """The inner values (kernel/PROTOCOL.md): one per inner statement
        that completed at least once or raised the exception that ended
        the statement (raised, from code), in source order. Previews and
        types are made here, once."""
        self._fold()
        nodes, names, ns = self.layout.nodes, self.layout.names, self.ns
        failed = _raiser(nodes, raised, code) if raised is not None else -1
        out: List[WireObject] = []
        for k, node in enumerate(nodes):
            count = self.count(k)
            if count <= 0 and k != failed:
                continue
            item: WireObject = {"range": where.range_of(node), "count": max(count, 0)}
            name = names[k]
            value = self.values[k] if name is None else ns.get(name, _UNSET) if count > 0 else _UNSET
            if value is not _UNSET:
                item["type"] = values.type_name(value)
                item["preview"] = values.preview(value)
            if k == failed:
                item["panic"] = values.exception_message(raised)  # type: ignore[arg-type]  # raised is set when failed >= 0
            out.append(item)
        # The values go now, not with the Slots or the code that holds
        # the list as a constant (a traceback may keep it).
        self.values[:] = []
        self.ns = {}
        return out


def _column(code: types.CodeType, lasti: int) -> Optional[int]:
    """The column of code's instruction at byte offset lasti (Python
    3.11+), or None."""
    positions = getattr(code, "co_positions", None)
    if positions is None or lasti < 0:
        return None
    for pos in itertools.islice(positions(), lasti // 2, lasti // 2 + 1):
        return pos[2]
    return None


def _raiser(nodes: List[ast.stmt], exc: Optional[BaseException], code: Optional[types.CodeType]) -> int:
    """The index of the inner statement whose line raised exc in the
    statement's own code (its traceback's entry for code), or -1."""
    tb = exc.__traceback__ if exc is not None else None
    line = None
    col: Optional[int] = None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno
            col = _column(code, tb.tb_lasti)
        tb = tb.tb_next
    if line is None:
        return -1
    found = -1
    for k, node in enumerate(nodes):
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            # Two statements on the line (`a = 1; b = 1 / 0`): the last
            # one that starts at or before the column.
            if found < 0 or col is None or node.lineno < line or node.col_offset <= col:
                found = k
    return found


_LOAD_NAME = dis.opmap.get("LOAD_NAME")
_LOAD_CONST = dis.opmap.get("LOAD_CONST")
_PATCH_LIMIT = 10000


class Patches:
    """Instrumented code with the name SLOTS loaded as a constant: the
    rewritten bytecode of each code object, made once (the statements'
    code is kept by instrument.CodeCache, so the same objects come back).
    Not thread-safe: the kernel runs one request at a time."""

    def __init__(self) -> None:
        self._code: Dict[types.CodeType, Optional[bytes]] = {}  # None: cannot be rewritten
        self._layouts: Dict[types.CodeType, Layout] = {}  # the Layout instrument made the code from

    def layout(self, code: types.CodeType, node: ast.stmt, stored: FrozenSet[str]) -> Layout:
        """The Layout of node (stored: as Layout's) that code was made
        from, made once per code object (the same text at the same place
        has the same layout), not per run."""
        lay = self._layouts.get(code)
        if lay is None:
            if len(self._layouts) > _PATCH_LIMIT:
                self._layouts.clear()
            lay = self._layouts[code] = Layout(node, stored)
        return lay

    def bind(self, code: types.CodeType, slots: Slots, ns: Dict[str, object]) -> types.CodeType:
        """The code to run for one run of code (an instrumented statement)
        recording into slots: code with slots, its values and its counts
        as its last constants, or code itself with them bound in ns
        (Slots.unbind takes them out)."""
        patched = self._code.get(code, b"")
        if patched == b"":
            if len(self._code) > _PATCH_LIMIT:
                self._code.clear()
            patched = self._code[code] = _rewrite_loads(code)
        if patched is None:
            ns[SLOTS], ns[VALUES], ns[COUNTS] = slots, slots.values, slots.counts
            return code
        return code.replace(co_code=patched, co_consts=code.co_consts + (slots, slots.values, slots.counts))


def _rewrite_loads(code: types.CodeType) -> Optional[bytes]:
    """code's bytecode with each LOAD_NAME of SLOTS, VALUES, COUNTS made a
    LOAD_CONST of the constants after code's own (in that order), or None
    when that is not a rewrite of single instructions (an argument over
    255 needs EXTENDED_ARG)."""
    const = len(code.co_consts)
    if _LOAD_NAME is None or _LOAD_CONST is None or const + len(_NAMES) > 256:
        return None
    b = bytearray(code.co_code)
    found = False
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_NAME" and ins.argval in _NAMES:
            if ins.arg is None or ins.arg > 255 or b[ins.offset] != _LOAD_NAME:
                return None
            b[ins.offset] = _LOAD_CONST
            b[ins.offset + 1] = const + _NAMES.index(ins.argval)
            found = True
    return bytes(b) if found else None


class Place:
    """Where a statement is: protocol ranges of its inner statements
    (0-based lines, code-point columns) from its node, its text (the
    exact source, its first line from the statement's column on: Source.
    segment) and its range."""

    __slots__ = ("node", "lines", "range")

    def __init__(self, node: ast.stmt, text: str, range_: WireObject) -> None:
        self.node = node
        self.lines = text.split("\n")
        self.range = range_

    def _char(self, lineno: int, byte_col: int) -> int:
        first = self.node.lineno
        i = lineno - first
        line = self.lines[i] if 0 <= i < len(self.lines) else ""
        if i == 0:  # the text starts at the statement's column
            byte_col -= self.node.col_offset
            base = self.range["start"]["character"]
        else:
            base = 0
        if line.isascii():
            return base + byte_col
        return base + len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def range_of(self, node: ast.stmt) -> WireObject:
        end_line = node.end_lineno or node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return {
            "start": {"line": node.lineno - 1, "character": self._char(node.lineno, node.col_offset)},
            "end": {"line": end_line - 1, "character": self._char(end_line, end_col)},
        }


def moved(update: WireObject, new_range: WireObject) -> None:
    """Shift update's inner ranges when its statement moved to new_range
    (same text: only its place changed). Columns move with the first
    line (a re-indented one-line ``if x: y = 1``)."""
    inner = update.get("inner")
    old = update.get("range")
    if not inner or not old or old == new_range:
        return
    dl = new_range["start"]["line"] - old["start"]["line"]
    dc = new_range["start"]["character"] - old["start"]["character"]
    first = old["start"]["line"]
    shifted = []
    for item in inner:
        r = item["range"]
        item = dict(item)
        item["range"] = {
            "start": _shift(r["start"], dl, dc if r["start"]["line"] == first else 0),
            "end": _shift(r["end"], dl, dc if r["end"]["line"] == first else 0),
        }
        shifted.append(item)
    update["inner"] = shifted


def _shift(pos: WireObject, dl: int, dc: int) -> WireObject:
    return {"line": pos["line"] + dl, "character": pos["character"] + dc}
