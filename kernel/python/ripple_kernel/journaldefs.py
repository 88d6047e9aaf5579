"""Functions a frame's own statements defined, in the value journal
(journal.py; issue 26: scripts that call their functions were run again
after every restart).

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
import types
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

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
    """v, or its LocalFunction when the frame's statements defined it."""
    if type(v) is types.FunctionType and v.__globals__ is ns:
        return LocalFunction(v.__name__)
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
