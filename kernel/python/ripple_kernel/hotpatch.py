"""--watch's patcher: what a saved module's new source changes (the diff
of its function units against the source the kernel imported) and the new
code objects to put in place. Recorder.plan (watchfn.py) drives it; a
change it cannot patch raises Fallback with the reason.
"""

from __future__ import annotations

import ast
import gc
import os
import sys
from types import CodeType, FunctionType, ModuleType
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union, cast

# Node types whose body is a function unit.
FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
FuncNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
# (first line, decorators included; first line of the body; last line)
Span = Tuple[int, int, int]
# An edit: (qualname, its new def node, the lines it moved by (0: its body changed)).
Edit = Tuple[str, FuncNode, int]


class Fallback(Exception):
    """The change cannot be patched in place: the message says why."""


def loaded(path: str) -> Optional[ModuleType]:
    """The module imported from path, if any."""
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if isinstance(f, str) and os.path.abspath(f) == path:
            return mod
    return None


class Units:
    """A module's function units: per qualname its def node and the dump
    of its body (no positions); the skeleton is the dump of everything
    else (bodies replaced by pass)."""

    def __init__(self, tree: ast.Module) -> None:
        # spans: per qualname (first line, decorators included; first line
        # of the body; last line), kept true when an edit moves the unit
        # (the nodes of units an edit did not touch keep their old
        # positions: only their dumps, which have none, are read).
        self.nodes: Dict[str, FuncNode] = {}
        self.bodies: Dict[str, str] = {}
        self.spans: Dict[str, Span] = {}
        self.ambiguous: Set[str] = set()
        self.future: List[ast.stmt] = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
        body = self._strip(tree.body, "")
        self.skeleton = ast.dump(ast.Module(body=body, type_ignores=[]))

    def _strip(self, body: List[ast.stmt], prefix: str) -> List[ast.stmt]:
        out: List[ast.stmt] = []
        for node in body:
            if isinstance(node, FUNCS):
                q = prefix + node.name
                if q in self.nodes:
                    self.ambiguous.add(q)
                self.nodes[q] = node
                self.bodies[q] = ast.dump(ast.Module(body=node.body, type_ignores=[]))
                self.spans[q] = (_first_line(node), node.body[0].lineno, _end_line(node))
                stub = type(node)(**{f: getattr(node, f, None) for f in node._fields})
                stub.body = [ast.Pass()]
                out.append(stub)
            elif isinstance(node, ast.ClassDef):
                cstub = ast.ClassDef(**{f: getattr(node, f, None) for f in node._fields})
                cstub.body = self._strip(node.body, prefix + node.name + ".")
                out.append(cstub)
            else:
                out.append(node)
        return out


def edit_in_body(units: Units, old: str, new: str, path: str) -> Optional[Tuple[List[Edit], Units]]:
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
    hit: Optional[str] = None
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
    new_node = stmts[0] if len(stmts) == 1 else None
    if not isinstance(new_node, FUNCS) or type(new_node) is not type(node) or new_node.name != node.name:
        return None
    if new_node.end_lineno != end + delta or _signature(new_node) != _signature(node):
        return None
    out = _copy_units(units)
    out.nodes[hit] = new_node
    out.bodies[hit] = ast.dump(ast.Module(body=new_node.body, type_ignores=[]))
    out.spans[hit] = (_first_line(new_node), new_node.body[0].lineno, _end_line(new_node))
    edits: List[Edit] = [(hit, new_node, 0)]
    if delta:
        for q, (f2, body2, end2) in units.spans.items():
            if f2 > end:
                out.spans[q] = (f2 + delta, body2 + delta, end2 + delta)
                edits.append((q, units.nodes[q], delta))
    return edits, out


def _copy_units(units: Units) -> Units:
    out = Units.__new__(Units)
    out.nodes, out.bodies, out.spans = dict(units.nodes), dict(units.bodies), dict(units.spans)
    out.ambiguous, out.future, out.skeleton = units.ambiguous, units.future, units.skeleton
    return out


def _signature(node: FuncNode) -> str:
    return ast.dump(type(node)(**{f: getattr(node, f, None) for f in node._fields if f != "body"}))


def shifted(code: CodeType, delta: int) -> CodeType:
    """code with its lines (and its nested code objects') moved by delta."""
    consts = tuple(shifted(c, delta) if hasattr(c, "co_code") else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + delta, co_consts=consts)


def _end_line(node: FuncNode) -> int:
    return cast(int, node.end_lineno)  # parsed nodes have one


def _first_line(node: FuncNode) -> int:
    return min([node.lineno] + [d.lineno for d in node.decorator_list])


def compile_unit(units: Units, q: str, node: FuncNode, path: str) -> Optional[CodeType]:
    """The code object of function q alone: its def, inside classes of the
    same names (the qualname, private name mangling and __class__ cell of
    the real module), after the module's __future__ imports."""
    stmt: ast.stmt = node
    parts = q.split(".")
    for name in reversed(parts[:-1]):
        stmt = ast.ClassDef(name=name, bases=[], keywords=[], body=[stmt], decorator_list=[],
                            lineno=node.lineno, col_offset=0, end_lineno=node.end_lineno, end_col_offset=0)
    mod = ast.Module(body=list(units.future) + [stmt], type_ignores=[])
    ast.fix_missing_locations(mod)
    top = compile(mod, path, "exec", dont_inherit=True)
    found = [c for c in _codes(top) if getattr(c, "co_qualname", c.co_name) == q]
    return found[0] if len(found) == 1 else None


def _codes(code: CodeType) -> Iterator[CodeType]:
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield c
            yield from _codes(c)


def nested_defs(node: FuncNode) -> List[str]:
    return [ast.dump(n) for n in ast.walk(node) if n is not node and isinstance(n, FUNCS + (ast.Lambda, ast.ClassDef))]


def stale_closures(old: CodeType, new: CodeType) -> List[Tuple[FunctionType, CodeType]]:
    """Function objects made from old's nested code objects (closures
    created by earlier calls, kept somewhere), with the new code of the
    same qualname: they are patched too. Fallback when one cannot be."""
    by_name: Dict[str, List[CodeType]] = {}
    for c in _codes(new):
        by_name.setdefault(getattr(c, "co_qualname", c.co_name), []).append(c)
    olds = list(_codes(old))
    out: List[Tuple[FunctionType, CodeType]] = []
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


def locate(mod: ModuleType, q: str, path: str, first_line: int) -> Optional[FunctionType]:
    """The live function object of unit q in module mod, through classes,
    staticmethod/classmethod/property and __wrapped__ chains; None when
    it is not found or is not the one imported from the saved source
    (first_line: its def's first line there)."""
    parts = q.split(".")
    owner: object = mod
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


def _functions(obj: object, depth: int) -> Iterator[FunctionType]:
    if obj is None or depth > 8:
        return
    if type(obj).__name__ == "function":
        yield cast(FunctionType, obj)
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
