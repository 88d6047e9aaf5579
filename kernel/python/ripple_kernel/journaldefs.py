"""Values the value journal (journal.py) writes in a form of its own, and
its size check (too_big).

Modules: a statement that binds one (``a = side.step(1)`` may mutate
``side``, so its bindings hold the module; issue 26) has it written by
name (ModuleByName) and gets the module of that name back.

Functions a frame's own statements defined (issue 26: scripts that call
their functions were run again after every restart):

A ``def`` in a script's top level, or inside the body of a function ripple
runs, makes a function whose ``__globals__`` is the frame's namespace
(statements run with it as their globals). Pickle cannot store such a
function (it names one by module and qualname, and the script's
``__main__`` is not the kernel's), so a journal row used to leave out the
``def`` statement, and with it every statement that called the function.

Here, such a function is written as a LocalFunction (its name): in the
bindings of the statement that defined it and of any statement that bound
it, and as the callee of a statement's direct call. Restoring, the
``def`` statement is executed again into the frame's namespace (defining a
function has no effect beyond the binding), and a LocalFunction is the
function the namespace holds under its name at that point of the
statements, in order. Only a plain ``def`` is executed again: one with
decorators, or with defaults that are not constants, is left out (it and
what calls it run again), as are classes.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from .frame import Call
    from .plan import PlanStmt


class LocalFunction:
    """Stands for a function the frame's statements defined (the module doc)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> Tuple[type, Tuple[str]]:
        return LocalFunction, (self.name,)


def out_value(v: object, ns: Dict[str, object]) -> object:
    """v as the journal writes it: a LocalFunction for a function the
    frame's statements defined, a ModuleByName for a module."""
    t = type(v)
    if t is types.FunctionType and v.__globals__ is ns:  # type: ignore[attr-defined]  # a function
        return LocalFunction(v.__name__)  # type: ignore[attr-defined]  # a function
    if t is types.ModuleType:
        name = getattr(v, "__name__", None)
        if isinstance(name, str) and sys.modules.get(name) is v:
            return ModuleByName(name)
    return v


def out_call(call: Optional[Call], ns: Dict[str, object]) -> Optional[Call]:
    if call is None:
        return None
    return (out_value(call[0], ns), call[1], call[2])


def _plain_def(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return False
    args = node.args
    return all(isinstance(d, ast.Constant) for d in list(args.defaults) + [d for d in args.kw_defaults if d is not None])


def _resolve(v: object, ns: Dict[str, object]) -> object:
    """The function a LocalFunction names now (KeyError when none)."""
    if isinstance(v, LocalFunction):
        f = ns[v.name]
        if type(f) is not types.FunctionType:
            raise KeyError(v.name)
        return f
    return v


def restore(record: List[Any], ps: PlanStmt, ns: Dict[str, object], filename: str, module: str) -> Optional[List[Any]]:
    """The record with its LocalFunctions resolved, executing ps again
    when it is the plain ``def`` that made one (its ``__module__``:
    module, as the namespace's ``__name__`` says in a run); None when it
    cannot be (the statement is left out of the restore)."""
    bindings, call = record[5], record[7]
    if not any(isinstance(v, LocalFunction) for _, v in bindings) and not (call is not None and isinstance(call[0], LocalFunction)):
        return record
    if isinstance(ps.node, ast.FunctionDef):
        if not _plain_def(ps.node):
            return None
        ns.setdefault("__name__", module)  # (the run refills the namespace)
        try:
            exec(compile(ast.Module(body=[ps.node], type_ignores=[]), filename, "exec"), ns)
        except Exception:
            return None
    try:
        out = list(record)
        out[5] = tuple((n, _resolve(v, ns)) for n, v in bindings)
        if call is not None:
            out[7] = (_resolve(call[0], ns), call[1], call[2])
    except KeyError:
        return None
    return out


class ModuleByName:
    """Stands for a module a statement binds (``a = side.step(1)`` may
    mutate ``side``, so its bindings hold the module): a module does not
    pickle, its name does, and it comes back as the module of that name
    in the new process (imported there, as the statement's own run would
    have)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> Tuple[Callable[[str], types.ModuleType], Tuple[str]]:
        return importlib.import_module, (self.name,)


_SCALARS = frozenset([int, float, bool, complex, type(None)])
_SIZED = frozenset([list, tuple, dict, set, frozenset, str, bytes, bytearray])


def too_big(value: object, cap: int) -> bool:
    """Whether a value is plainly larger than cap, told without
    pickling it: an array's nbytes, a long sequence or mapping."""
    t = type(value)
    if t in _SCALARS:
        return False
    if t in _SIZED:
        return len(value) > cap // 8  # type: ignore[arg-type]  # one of _SIZED
    if getattr(t, "nbytes", None) is None:
        return False
    nbytes = getattr(value, "nbytes", None)
    return isinstance(nbytes, int) and nbytes > cap
