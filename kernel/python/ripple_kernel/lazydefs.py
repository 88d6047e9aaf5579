"""Long module-level functions compiled on their first call.

A module-level function with more than LAZY_MIN statements is compiled as
a stub with the same name, signature, decorators and line, whose body
fetches the real code on its first call (compiled then, swapped into the
function so later calls are direct) and calls it with the same arguments.
Execution contexts never call the function they run (they run its
statements), so an edit of a long ``main`` costs a compile of the stub,
not of the whole body.
"""

from __future__ import annotations

import ast
import itertools
import sys
import types
import weakref
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import instrument
from .text import Source

LAZY_MIN = 64
LAZY_HOOK = "__ripple_lazy__"


class _LazyDef:
    """A long function compiled lazily. Holds no module namespace, so the
    module can be collected; the entry goes with its function object."""

    __slots__ = ("node", "filename", "flags", "stub_code", "real_code")

    def __init__(self, node: ast.FunctionDef, filename: str, flags: int) -> None:
        self.node = node
        self.filename = filename
        self.flags = flags
        self.stub_code: Optional[types.CodeType] = None
        self.real_code: Optional[types.CodeType] = None


class LazyDefs:
    """The lazily compiled functions of the kernel's modules, by token."""

    def __init__(self) -> None:
        self._lazy: Dict[int, _LazyDef] = {}
        self._tokens = itertools.count(1)

    def compile_module(self, src: Source, generators: Sequence[bool],
                       namespace: Dict[str, object]) -> Tuple[types.CodeType, List[int]]:
        """(code of a module's top level, tokens of its stubs); generators
        says which top-level statements are defs that yield or await
        (never made lazy). namespace gets the hook the stubs call."""
        flags = instrument.future_flags(src.tree)
        body: List[ast.stmt] = []
        stubs = []
        for node, generator in zip(src.tree.body, generators):
            if isinstance(node, ast.FunctionDef) and len(node.body) > LAZY_MIN and not generator:
                token = next(self._tokens)
                self._lazy[token] = _LazyDef(node, src.filename, flags)
                body.append(_stub(node, token))
                stubs.append(token)
            else:
                body.append(node)
        if not stubs:
            return compile(src.tree, src.filename, "exec", flags=flags, dont_inherit=True), stubs
        namespace[LAZY_HOOK] = self._resolve
        tree = ast.Module(body=body, type_ignores=[])
        code = compile(tree, src.filename, "exec", flags=flags, dont_inherit=True)
        for token in stubs:
            entry = self._lazy[token]
            for const in code.co_consts:
                if isinstance(const, types.CodeType) and const.co_name == entry.node.name and const.co_firstlineno == entry.node.lineno:
                    entry.stub_code = const
        return code, stubs

    def _resolve(self, token: int) -> Callable[..., object]:
        """The real function behind a stub (called by the stub)."""
        entry = self._lazy.get(token)
        if entry is None:
            raise RuntimeError("ripple: this function's code was discarded with its module; reload the module")
        namespace = sys._getframe(1).f_globals
        node = entry.node
        real = entry.real_code
        if real is None:
            module_code = compile(
                ast.Module(body=[node], type_ignores=[]), entry.filename, "exec", flags=entry.flags, dont_inherit=True
            )
            for const in module_code.co_consts:
                if isinstance(const, types.CodeType) and const.co_name == node.name:
                    real = const
            assert real is not None  # a def's code is a constant of its module's
            entry.real_code = real
            # Later calls skip the stub: swap the real code into the function.
            for func in _functions_with_code(namespace, entry.stub_code):
                try:
                    func.__code__ = real
                except (TypeError, ValueError):
                    pass
        return types.FunctionType(real, namespace, node.name)

    def attach(self, tokens: Iterable[int], namespace: Dict[str, object]) -> None:
        """Tie each stub's bookkeeping to its function object's lifetime."""
        for token in tokens:
            entry = self._lazy.get(token)
            if entry is None:
                continue
            for func in _functions_with_code(namespace, entry.stub_code):
                weakref.finalize(func, _discard, self._lazy, token)


def _functions_with_code(namespace: Dict[str, object], code: Optional[types.CodeType]) -> List[types.FunctionType]:
    """Function objects in namespace (decorated ones through __wrapped__) running code."""
    found: List[types.FunctionType] = []
    for value in list(namespace.values()):
        func = value
        for _ in range(8):
            if getattr(func, "__code__", None) is code:
                found.append(func)  # type: ignore[arg-type]  # it has the code: a function
                break
            func = getattr(func, "__wrapped__", None)
            if func is None:
                break
    return found


def _discard(lazy: Dict[int, _LazyDef], token: int) -> None:
    lazy.pop(token, None)


def _stub(node: ast.FunctionDef, token: int) -> ast.FunctionDef:
    """A def with node's name, signature and decorators that calls the real code."""
    args = node.args
    positional: List[ast.expr] = [ast.Name(id=a.arg, ctx=ast.Load()) for a in list(getattr(args, "posonlyargs", [])) + list(args.args)]
    if args.vararg is not None:
        positional.append(ast.Starred(value=ast.Name(id=args.vararg.arg, ctx=ast.Load()), ctx=ast.Load()))
    keywords = [ast.keyword(arg=a.arg, value=ast.Name(id=a.arg, ctx=ast.Load())) for a in args.kwonlyargs]
    if args.kwarg is not None:
        keywords.append(ast.keyword(arg=None, value=ast.Name(id=args.kwarg.arg, ctx=ast.Load())))
    fetch = ast.Call(func=ast.Name(id=LAZY_HOOK, ctx=ast.Load()), args=[ast.Constant(value=token)], keywords=[])
    call = ast.Call(func=fetch, args=positional, keywords=keywords)
    ret = ast.Return(value=call)
    stub = ast.FunctionDef(
        name=node.name,
        args=args,
        body=[ret],
        decorator_list=node.decorator_list,
        returns=node.returns,
        type_comment=None,
    )
    ast.copy_location(stub, node)
    for child in ast.walk(ret):
        setattr(child, "lineno", node.lineno)
        setattr(child, "col_offset", node.col_offset)
        setattr(child, "end_lineno", node.lineno)
        setattr(child, "end_col_offset", node.col_offset)
    return stub
