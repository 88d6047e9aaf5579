"""Compiling statements so that they report their values to the run.

compile_statement turns one body statement into a code object whose
assignment, expression or return value goes through VALUE_HOOK, whose
direct call goes through CALLEE_HOOK, ARGS_HOOK and KWARGS_HOOK, and whose
``return`` calls RETURN_HOOK (the run puts the hooks in the namespace:
statement.py). Line numbers and columns stay the user's, so tracebacks
point at the source.

CodeCache keeps the compiled code by text and column: a statement that
only moved is re-positioned, not recompiled.
"""

from __future__ import annotations

import ast
import types
from typing import Dict, FrozenSet, List, Optional, Set, Tuple, Union

from . import analysis, nested

# A slot of the code cache: the code at line 1 (key 1) and by (line, function name).
_Slot = Dict[Union[int, Tuple[int, Optional[str]]], types.CodeType]

VALUE_HOOK = "__ripple_value__"
# A statement's direct call f(a, k=b) runs as
# CALLEE_HOOK(f)(*ARGS_HOOK(a, k=b), **KWARGS_HOOK()): the hooks record the
# callee and the arguments, and the call itself is made by the statement's
# own code, so the callee's caller frame is the user's (sys._getframe(1)
# in namedtuple, Enum's functional API, logging and warnings see the
# statement, not the engine).
CALLEE_HOOK = "__ripple_callee__"
ARGS_HOOK = "__ripple_args__"
KWARGS_HOOK = "__ripple_kwargs__"
RETURN_HOOK = "__ripple_return__"

_CACHE_LIMIT = 100000


class CodeCache:
    """Compiled statement code by source text and column.

    Not thread-safe: the kernel runs one request at a time.
    """

    def __init__(self) -> None:
        self._codes: Dict[Tuple[str, str, int, int, Optional[str], FrozenSet[str]], _Slot] = {}  # by (filename, text, col, flags, self_name, stored)
        self.patches = nested.Patches()  # the compound statements' code with their Slots as a constant

    def code(self, filename: str, text: str, node: ast.stmt, flags: int = 0, self_name: Optional[str] = None,
             func_name: Optional[str] = None, stored: FrozenSet[str] = frozenset()) -> types.CodeType:
        """Code object of the transformed statement node, positioned at node.
        self_name, func_name, stored: see compile_statement."""
        slot_key = (filename, text, node.col_offset, flags, self_name, stored)
        slot = self._codes.get(slot_key)
        if slot is None:
            if len(self._codes) > _CACHE_LIMIT:
                self._codes.clear()
            slot = self._codes[slot_key] = {}
        # The same text in two functions (test_a's "x = 1" and test_b's) is
        # compiled once: only the code's name and lines differ.
        code = slot.get((node.lineno, func_name))
        if code is None:
            base = slot.get(1)
            if base is None:
                # Compiled once at line 1, then moved: a statement that only
                # changed lines is not compiled again.
                base = slot[1] = compile_statement(node, filename, flags, first_line=1, self_name=self_name,
                                                   nonlocals="nonlocal" in text, returns="return" in text, stored=stored)
            code = _named(_shift(base, node.lineno - 1), func_name)
            slot[(node.lineno, func_name)] = code
        return code


def future_flags(tree: ast.Module) -> int:
    """The compiler flags of the module's `from __future__` imports."""
    import __future__

    flags = 0
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            for alias in node.names:
                feature = getattr(__future__, alias.name, None)
                if feature is not None:
                    flags |= feature.compiler_flag
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            break
    return flags




def compile_statement(node: ast.stmt, filename: str, flags: int = 0, first_line: Optional[int] = None,
                      self_name: Optional[str] = None, func_name: Optional[str] = None, nonlocals: bool = True,
                      returns: bool = True, stored: FrozenSet[str] = frozenset()) -> types.CodeType:
    """Compile one body statement so that it reports its value.

    The value of an assignment, annotated assignment, expression statement
    or return is passed through VALUE_HOOK; when it is a call, its callee
    and arguments go through CALLEE_HOOK, ARGS_HOOK and KWARGS_HOOK first
    (so the run can see them; the call stays the statement's); every ``return``
    outside nested scopes becomes a call of RETURN_HOOK, which raises. A
    compound statement's inner statements record their values and counts
    in a nested.Slots (nested.py). Line
    numbers and columns stay the user's, so tracebacks point at the source.

    self_name: the statement is in a method whose first parameter is
    self_name and whose class the run puts in the namespace as __class__:
    a zero-argument super() becomes super(__class__, self_name), which the
    compiler does for a method's own code (a statement compiled on its own
    has neither the __class__ cell nor the method's first argument).

    func_name: the name of the function the statement belongs to, given to
    its code so that a traceback or sys._getframe().f_code.co_name shows
    the function, not "<module>".

    nonlocals, returns: whether the statement may contain a `nonlocal` or a
    `return` (False when its text does not say so: rewriting them walks the
    whole tree, a good part of the cost of compiling a statement).

    stored: names that code the statement calls may rebind (nested.Layout):
    an inner statement binding one stores its value.
    """
    new = _transform(node, nonlocals, returns, stored)
    if self_name is not None:
        new = _SuperRewriter(self_name).visit(new)
    if first_line is not None and first_line != new.lineno:
        ast.increment_lineno(new, first_line - new.lineno)
    module = ast.Module(body=[new], type_ignores=[])
    ast.fix_missing_locations(module)
    return _named(compile(module, filename, "exec", flags=flags, dont_inherit=True), func_name)


def _named(code: types.CodeType, func_name: Optional[str]) -> types.CodeType:
    """code named func_name (see compile_statement); unchanged for None."""
    if not func_name:
        return code
    if hasattr(code, "co_qualname"):
        return code.replace(co_name=func_name, co_qualname=func_name)  # type: ignore[call-arg]  # Python 3.11+, checked above
    return code.replace(co_name=func_name)


def compile_expression(source: str, filename: str = "<ripple>") -> types.CodeType:
    """Compile a user-supplied expression (arguments, visualizations)."""
    return compile(source.strip(), filename, "eval", dont_inherit=True)


def _wrap(value: ast.expr) -> ast.Call:
    if isinstance(value, ast.Call):
        orig = value
        callee = ast.Call(func=ast.Name(id=CALLEE_HOOK, ctx=ast.Load()), args=[orig.func], keywords=[])
        record = ast.Call(func=ast.Name(id=ARGS_HOOK, ctx=ast.Load()), args=list(orig.args), keywords=list(orig.keywords))
        kwargs = ast.Call(func=ast.Name(id=KWARGS_HOOK, ctx=ast.Load()), args=[], keywords=[])
        starred = ast.Starred(value=record, ctx=ast.Load())
        spread = ast.keyword(arg=None, value=kwargs)
        value = ast.Call(func=callee, args=[starred], keywords=[spread])
        # Every new node takes the call's place: a traceback through the
        # call points at the user's call.
        for node in (value, callee, callee.func, record, record.func, kwargs, kwargs.func, starred, spread):
            ast.copy_location(node, orig)
    call = ast.Call(func=ast.Name(id=VALUE_HOOK, ctx=ast.Load()), args=[value], keywords=[])
    ast.copy_location(call, value)
    ast.copy_location(call.func, value)
    return call


def _return_call(node: ast.Return) -> ast.Expr:
    value = _wrap(node.value) if node.value is not None else ast.Constant(value=None)
    if node.value is None:
        ast.copy_location(value, node)
    call = ast.Call(func=ast.Name(id=RETURN_HOOK, ctx=ast.Load()), args=[value], keywords=[])
    ast.copy_location(call, node)
    ast.copy_location(call.func, node)
    stmt = ast.Expr(value=call)
    return ast.copy_location(stmt, node)


def clone(node: object) -> object:
    """A deep copy of an AST: fields copied recursively, positions kept.
    Several times faster than copy.deepcopy, whose generic path a
    statement's compile paid every time. Parsed trees share no nodes but
    the ctx singletons, which are kept as they are."""
    if isinstance(node, list):
        return [clone(x) for x in node]
    if not isinstance(node, ast.AST) or isinstance(node, ast.expr_context):
        return node  # str, numbers, None, constant values: immutable
    new = node.__class__()
    for name in node._fields:
        value = getattr(node, name, None)
        setattr(new, name, clone(value) if isinstance(value, (list, ast.AST)) else value)
    for name in node._attributes:
        value = getattr(node, name, None)
        if value is not None:
            setattr(new, name, value)
    return new


def _transform(node: ast.stmt, nonlocals: bool = True, returns: bool = True,
               stored: FrozenSet[str] = frozenset()) -> ast.stmt:
    copied = clone(node)
    assert isinstance(copied, ast.stmt)
    node = copied
    if isinstance(node, (ast.Assign, ast.Expr, ast.AnnAssign)) and node.value is not None:
        node.value = _wrap(node.value)
        if nonlocals:
            _fix_nested(node)
        return node
    if isinstance(node, ast.Return):
        new = _return_call(node)
        if nonlocals:
            _fix_nested(new)
        return new
    # Before the returns become hook calls (an expression statement each).
    nested.instrument(node, stored)
    if returns:
        _ReturnRewriter().visit(node)
    if nonlocals:
        _fix_nested(node)
    return node


class _SuperRewriter(ast.NodeTransformer):
    """super() -> super(__class__, self_name), outside nested scopes
    (compile_statement)."""

    def __init__(self, self_name: str) -> None:
        self.self_name = self_name

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args and not node.keywords:
            node.args = [
                ast.copy_location(ast.Name(id="__class__", ctx=ast.Load()), node),
                ast.copy_location(ast.Name(id=self.self_name, ctx=ast.Load()), node),
            ]
        return node

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node  # a nested def has its own super()

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef


class _ReturnRewriter(ast.NodeTransformer):
    """Replaces returns outside nested scopes by RETURN_HOOK calls."""

    def visit_Return(self, node: ast.Return) -> ast.Expr:
        return _return_call(node)

    def visit_FunctionDef(self, node: ast.AST) -> ast.AST:
        return node

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef


def _fix_nested(node: ast.AST) -> None:
    """Make nested functions' ``nonlocal`` names of the frame work.

    The statements of a frame run at the top level of one namespace dict, so
    the frame's locals are globals for the code nested in them: a
    ``nonlocal x`` naming a frame local must become ``global x``.
    """
    _NonlocalFixer([]).visit(node)
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _split_mixed(child.body)


class _NonlocalFixer(ast.NodeVisitor):
    def __init__(self, enclosing: List[Set[str]]) -> None:
        self.enclosing = enclosing  # sets of names bound by enclosing nested functions

    def visit_FunctionDef(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> None:
        bound = _function_locals(node)
        inner = _NonlocalFixer(self.enclosing + [bound])
        for stmt in node.body:
            inner._fix_statement(stmt)
            inner.visit(stmt)
        for dec in node.decorator_list:
            self.visit(dec)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _fix_statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Nonlocal):
            outer = self.enclosing[:-1]
            frame_names = [n for n in stmt.names if not any(n in s for s in outer)]
            if frame_names and len(frame_names) == len(stmt.names):
                setattr(stmt, "__class__", ast.Global)
            elif frame_names:
                # Mixed (`nonlocal u, v`, v the frame's): the frame's names
                # become `global`, in a statement of their own that
                # _split_mixed puts beside this one.
                stmt.names = [n for n in stmt.names if n not in frame_names]
                setattr(stmt, "_ripple_frame_names", frame_names)


def _split_mixed(body: List[ast.stmt]) -> None:
    """Put a `global` of the frame's names beside each nonlocal statement
    _NonlocalFixer split (nested bodies included)."""
    for i in range(len(body) - 1, -1, -1):
        stmt = body[i]
        names = getattr(stmt, "_ripple_frame_names", None)
        if names:
            body.insert(i + 1, ast.copy_location(ast.Global(names=names), stmt))
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _split_mixed(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            _split_mixed(handler.body)


def _function_locals(node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> Set[str]:
    """The names node's own scope binds (as Python's compiler sees them:
    nested functions, classes and comprehensions are scopes of their own,
    and a name node declares nonlocal or global is not its local)."""
    names = set(analysis.parameter_names(node.args))
    declared: Set[str] = set()
    todo: List[ast.AST] = list(node.body)
    while todo:
        child = todo.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(child.name)
            todo.extend(child.decorator_list)
            if not isinstance(child, ast.ClassDef):
                todo.extend(child.args.defaults)
                todo.extend(d for d in child.args.kw_defaults if d is not None)
            continue
        if isinstance(child, ast.Lambda):
            todo.extend(child.args.defaults)
            continue
        if isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            todo.append(child.generators[0].iter)  # evaluated in this scope; the rest is the comprehension's
            names.update(n.target.id for n in ast.walk(child) if isinstance(n, ast.NamedExpr))  # := binds here
            continue
        if isinstance(child, (ast.Nonlocal, ast.Global)):
            declared.update(child.names)
        elif isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load):
            names.add(child.id)
        elif isinstance(child, ast.alias):
            if child.name != "*":
                names.add(child.asname or child.name.split(".")[0])
        elif isinstance(child, ast.ExceptHandler) and child.name:
            names.add(child.name)
        elif isinstance(child, ast.NamedExpr):
            names.add(child.target.id)
        elif type(child).__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
            bound = getattr(child, "name", None) or getattr(child, "rest", None)
            if bound:
                names.add(bound)
        todo.extend(ast.iter_child_nodes(child))
    return names - declared


def _shift(code: types.CodeType, delta: int) -> types.CodeType:
    """code with every line number moved by delta (nested code included)."""
    if delta == 0:
        return code
    consts = tuple(_shift(c, delta) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_firstlineno=code.co_firstlineno + delta, co_consts=consts)
