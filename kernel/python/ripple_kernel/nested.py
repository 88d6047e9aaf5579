"""Values of the statements nested in a compound statement (the update's
``inner``, kernel/PROTOCOL.md "Inner values").

A frame's expressions are the statements directly in its body (PROTOCOL
5.2); an ``if``/``for``/``while``/``with``/``try``/``match`` statement's
own value is None. Its inner statements (assignments, augmented and
annotated assignments, expression statements, at any depth but never
inside a nested def, class or lambda) are reported with its update: the
last value each had in the run and how many times it completed.

Cost: a loop may run an inner statement a million times, so the
instrumented code does no call per execution. instrument() rewrites each
inner statement of the compiled copy so that it also stores its value in
a slot of one list and adds 1 to a slot of another (``t = S.values[k] =
e``; ``S.counts[k] += 1``, S the run's Slots), two list stores. S is put
in the code's constants for the run (Patches.bind: the name SLOTS is
loaded as a constant, no dictionary lookup per execution, and the user's
namespace never holds it); where that rewrite of the bytecode is not
possible, S is bound in the namespace for the statement's run instead.
Previews, type names and ranges are made once, after the statement
(report()). What the code computes is unchanged: the value is the one the
statement computed, read once; only the last value's lifetime is longer
(until the statement ends).

A statement with more than MAX_INNER inner statements reports the first
MAX_INNER.
"""

from __future__ import annotations

import ast
import dis
import types
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Tuple

from . import values

if TYPE_CHECKING:
    from .api import WireObject

# The name of the run's Slots in the instrumented code (Patches.bind).
SLOTS = "__ripple_inner__"

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


def inner_statements(node: ast.stmt) -> List[ast.stmt]:
    """The inner statements of node that report values, in source order,
    at most MAX_INNER (instrument and report number them alike)."""
    out: List[ast.stmt] = []
    if is_compound(node):
        _collect(node, out)
    return out


def _collect(node: ast.stmt, out: List[ast.stmt]) -> None:
    for body in _bodies(node):
        for stmt in body:
            if len(out) >= MAX_INNER:
                return
            if _reported(stmt):
                out.append(stmt)
            elif is_compound(stmt):
                _collect(stmt, out)


def instrument(node: ast.stmt) -> int:
    """Rewrite the inner statements of node (a copy: compile_statement's)
    in place so that they record their values and counts; returns how many
    there are (0: node is unchanged)."""
    if not is_compound(node):
        return 0
    counter = [0]
    _rewrite(node, counter)
    return counter[0]


def _rewrite(node: ast.stmt, counter: List[int]) -> None:
    for body in _bodies(node):
        new: List[ast.stmt] = []
        for stmt in body:
            if counter[0] >= MAX_INNER:
                new.append(stmt)
            elif _reported(stmt):
                new.extend(_recorded(stmt, counter[0]))
                counter[0] += 1
            else:
                if is_compound(stmt):
                    _rewrite(stmt, counter)
                new.append(stmt)
        body[:] = new


def _slot(field: str, k: int, ctx: ast.expr_context, at: ast.stmt) -> ast.Subscript:
    """SLOTS.field[k]"""
    attr = ast.Attribute(value=ast.Name(id=SLOTS, ctx=ast.Load()), attr=field, ctx=ast.Load())
    sub = ast.Subscript(value=attr, slice=ast.Constant(value=k), ctx=ctx)
    for n in (sub, attr, attr.value, sub.slice):
        ast.copy_location(n, at)
    return sub


def _recorded(stmt: ast.stmt, k: int) -> List[ast.stmt]:
    """stmt followed (or replaced) by what records its value in slot k,
    then the count. The value is stored only once the statement's own
    targets are bound (``t = V[k] = e`` assigns t first), so a statement
    that raised has neither value nor count from that run."""
    out: List[ast.stmt] = []
    if isinstance(stmt, ast.Assign):
        stmt.targets = stmt.targets + [_slot("values", k, ast.Store(), stmt)]
        out.append(stmt)
    elif isinstance(stmt, ast.Expr):
        out.append(ast.copy_location(ast.Assign(targets=[_slot("values", k, ast.Store(), stmt)], value=stmt.value), stmt))
    else:  # AugAssign, AnnAssign: the target's new value, read back when it is a plain name
        out.append(stmt)
        target = stmt.target  # type: ignore[attr-defined]  # both have target
        if isinstance(target, ast.Name):
            read = ast.copy_location(ast.Name(id=target.id, ctx=ast.Load()), stmt)
            out.append(ast.copy_location(ast.Assign(targets=[_slot("values", k, ast.Store(), stmt)], value=read), stmt))
    count = ast.AugAssign(target=_slot("counts", k, ast.Store(), stmt), op=ast.Add(), value=ast.Constant(value=1))
    ast.copy_location(count.value, stmt)
    out.append(ast.copy_location(count, stmt))
    return out


class Slots:
    """The lists one run of an instrumented statement records into. Hashed
    by identity, so the code holding it as a constant hashes as code does
    (a tracer's dict keyed by code objects)."""

    __slots__ = ("values", "counts")

    def __init__(self, n: int) -> None:
        self.values: List[object] = [_UNSET] * n
        self.counts: List[int] = [0] * n

    @staticmethod
    def unbind(ns: Dict[str, object]) -> None:
        """Take the Slots out of the namespace when Patches.bind put it
        there (the user's code never sees it after its statement)."""
        ns.pop(SLOTS, None)

    def report(self, nodes: List[ast.stmt], where: Place, raised: Optional[BaseException] = None,
               code: Optional[types.CodeType] = None) -> List[WireObject]:
        """The inner values (kernel/PROTOCOL.md): one per inner statement
        that completed at least once or raised the exception that ended
        the statement (raised, from code), in source order. Previews and
        types are made here, once."""
        failed = _raiser(nodes, raised, code) if raised is not None else -1
        out: List[WireObject] = []
        for k, node in enumerate(nodes[:len(self.counts)]):
            count = self.counts[k]
            if count == 0 and k != failed:
                continue
            item: WireObject = {"range": where.range_of(node), "count": count}
            value = self.values[k]
            if value is not _UNSET:
                item["type"] = values.type_name(value)
                item["preview"] = values.preview(value)
            if k == failed:
                item["panic"] = values.exception_message(raised)  # type: ignore[arg-type]  # raised is set when failed >= 0
            out.append(item)
        self.values = []  # the values go now, not with the Slots
        return out


def _raiser(nodes: List[ast.stmt], exc: Optional[BaseException], code: Optional[types.CodeType]) -> int:
    """The index of the inner statement whose line raised exc in the
    statement's own code (its traceback's entry for code), or -1."""
    tb = exc.__traceback__ if exc is not None else None
    line = None
    col: Optional[int] = None
    while tb is not None:
        if tb.tb_frame.f_code is code:
            line = tb.tb_lineno
            positions = getattr(code, "co_positions", None)
            if positions is not None:
                for i, pos in enumerate(positions()):
                    if i == tb.tb_lasti // 2:
                        col = pos[2]
                        break
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

    def bind(self, code: types.CodeType, slots: Slots, ns: Dict[str, object]) -> types.CodeType:
        """The code to run for one run of code (an instrumented statement)
        recording into slots: code with slots as its last constant, or
        code itself with slots bound in ns (Slots.unbind takes it out)."""
        patched = self._code.get(code, b"")
        if patched == b"":
            if len(self._code) > _PATCH_LIMIT:
                self._code.clear()
            patched = self._code[code] = _rewrite_loads(code)
        if patched is None:
            ns[SLOTS] = slots
            return code
        return code.replace(co_code=patched, co_consts=code.co_consts + (slots,))


def _rewrite_loads(code: types.CodeType) -> Optional[bytes]:
    """code's bytecode with each LOAD_NAME of SLOTS made a LOAD_CONST of
    the constant after code's own, or None when that is not a rewrite of
    single instructions (an argument over 255 needs EXTENDED_ARG)."""
    const = len(code.co_consts)
    if _LOAD_NAME is None or _LOAD_CONST is None or const > 255:
        return None
    b = bytearray(code.co_code)
    found = False
    for ins in dis.get_instructions(code):
        if ins.opname == "LOAD_NAME" and ins.argval == SLOTS:
            if ins.arg is None or ins.arg > 255 or b[ins.offset] != _LOAD_NAME:
                return None
            b[ins.offset] = _LOAD_CONST
            b[ins.offset + 1] = const
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
