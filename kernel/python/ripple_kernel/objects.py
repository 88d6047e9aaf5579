"""Run-time facts about user values that the re-run rules rely on.

Which values cannot be mutated (numbers, strings, tuples of those,
functions without a closure, classes, modules), what a plain container
holds, whether two values may share a mutable object, and whether what a
statement does to a value for a reason of analysis's StmtInfo.maybe (an
argument, a receiver, a callee, an iterable) cannot mutate it. Every
answer errs on the safe side: when it cannot tell, a value may be mutated
and may be shared (conservative first).
"""

from __future__ import annotations

import ast
import builtins
import os
import sysconfig
import types
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from . import analysis
from .effects import object_key

# Where the standard library lives (project_getitem).
_LIBRARY_PREFIXES = tuple(sorted({sysconfig.get_paths()[k] + os.sep for k in ("stdlib", "platstdlib")}))
_IMMUTABLE_TYPES = frozenset(
    [
        int,
        float,
        complex,
        str,
        bytes,
        bool,
        type(None),
        range,
        types.FunctionType,
        types.BuiltinFunctionType,
        types.MethodType,
        types.ModuleType,
        type,
        type(Ellipsis),
    ]
)

# Builtins that do not mutate their arguments (they may consume an iterator).
_PURE_BUILTINS = frozenset(
    getattr(builtins, n) for n in (
        "len sum min max sorted list tuple set frozenset dict str repr int float complex bool abs round "
        "isinstance issubclass hasattr getattr print format hash id type range enumerate zip reversed map "
        "filter any all divmod pow chr ord hex bin oct callable iter ascii bytes bytearray slice"
    ).split()
)
# Methods of builtin types that do not mutate their receiver.
_PURE_METHODS: Dict[type, FrozenSet[str]] = {
    list: frozenset("count index copy".split()),
    dict: frozenset("get keys values items copy".split()),
    set: frozenset("copy union intersection difference symmetric_difference issubset issuperset isdisjoint".split()),
    bytearray: frozenset("count find index decode hex startswith endswith".split()),
}
_PLAIN = frozenset([list, dict, set, frozenset, tuple, str, bytes, bytearray, int, float, complex, bool, range, type(None)])
_PURE_NAMES = frozenset(f.__name__ for f in _PURE_BUILTINS if hasattr(f, "__name__"))

# (kind, detail) of StmtInfo.maybe: why a statement may mutate a name.
Reason = Tuple[str, Optional[str]]
# A user's value where the code dispatches on its exact type (``type(v) is
# list``: subclasses may mutate in their own ways) and then uses it as
# that type. mypy does not narrow ``object`` on ``type(v) is``, and an
# isinstance would add a check to the hot path; elsewhere user values are
# ``object``.
UserValue = Any


def immutable(value: UserValue, depth: int = 0) -> bool:
    """Whether nothing can mutate value (a closure or a bound method of a
    mutable object can change state: not immutable)."""
    t = type(value)
    if t in _IMMUTABLE_TYPES:
        # A closure holds state its calls may change (a counter), and a
        # bound method can change its object: not immutable.
        if t is types.FunctionType:
            return not value.__closure__
        if t is types.MethodType:
            return depth < 3 and immutable(value.__self__, depth + 1)
        return True
    if (t is tuple or t is frozenset) and depth < 3 and len(value) <= 64:
        return all(immutable(v, depth + 1) for v in value)
    return False


def elements(v: UserValue, limit: int = 1000) -> List[object]:
    """The mutable objects directly inside a plain container (none for
    anything else or a container larger than limit)."""
    t = type(v)
    if t in (list, tuple, set, frozenset) and len(v) <= limit:
        return [x for x in v if not immutable(x)]
    if t is dict and len(v) <= limit:
        return [x for x in v.values() if not immutable(x)]
    return []


def flat(v: UserValue, limit: int = 1000) -> bool:
    """A plain container of immutable values (a list of ints, a dict of
    strings to numbers): nothing in it can be mutated but itself."""
    t = type(v)
    if t in (list, tuple, set, frozenset):
        return len(v) <= limit and all(immutable(x) for x in v)
    if t is dict:
        return len(v) <= limit and all(immutable(k) and immutable(x) for k, x in v.items())
    return False


def _children(x: UserValue, limit: int) -> Optional[List[object]]:
    """What x holds, for shares: None when it cannot see inside."""
    t = type(x)
    if t in (list, tuple, set, frozenset):
        return x if len(x) <= limit else None
    if t is dict:
        return list(x.values()) + list(x.keys()) if len(x) <= limit else None
    if t in _PLAIN:
        return []
    d = getattr(x, "__dict__", None)
    if type(d) is dict and t.__module__ != "builtins" and not isinstance(x, type):
        return list(d.values()) if len(d) <= limit else None
    return None  # iterators, generators, arrays, frames...: cannot see inside


def shares(a: object, b: object, limit: int = 1000) -> bool:
    """Whether object a is b, lives inside b, or holds a mutable object that
    b holds (two levels deep into plain containers and instance
    dictionaries); True when it cannot tell (another kind of object, a
    container too large to look through): conservative."""
    seen: Dict[int, object] = {}
    # The mutable objects b holds, two levels deep.
    level = [b]
    for depth in range(3):
        nxt: List[object] = []
        for x in level:
            if immutable(x) and type(x) not in (tuple, frozenset):
                continue
            if object_key(x) in seen:
                continue
            seen[object_key(x)] = x
            if depth < 2:
                kids = _children(x, limit)
                if kids is None:
                    return True
                nxt.extend(kids)
        level = nxt
    level = [a]
    for depth in range(3):
        nxt = []
        for x in level:
            if immutable(x) and type(x) not in (tuple, frozenset):
                continue
            if object_key(x) in seen and seen[object_key(x)] is x and type(x) not in (tuple, frozenset):
                return True
            if depth < 2:
                kids = _children(x, limit)
                if kids is None:
                    return True
                nxt.extend(kids)
        level = nxt
    return False


def stateless_callable(v: UserValue) -> bool:
    """Calling v cannot change state the frame holds through v: a function
    without a closure (a frame's nested def reads the frame's names, which
    the plan follows), a builtin function of a module, a class."""
    t = type(v)
    if t is types.FunctionType:
        return not v.__closure__
    if t is types.BuiltinFunctionType:
        owner = getattr(v, "__self__", None)
        return owner is None or type(owner) is types.ModuleType
    return t is type


def inert(reason: Reason, v: UserValue, value_of: Callable[[str], UserValue],
          readonly_callee: Optional[Callable[[types.FunctionType], bool]] = None) -> bool:
    """Whether what a statement does to v for reason (StmtInfo.maybe)
    cannot mutate it. value_of(name) gives another name's value;
    readonly_callee(f) whether project function f only reads its
    parameters (mutation.MutationAnalysis.readonly_callee)."""
    kind, detail = reason
    if kind == analysis.MAYBE_CALLEE:
        return stateless_callable(v) or (immutable(v) and type(v) not in (types.FunctionType, types.MethodType))
    if kind == analysis.MAYBE_ITER:
        # `for i in range(3)` names the class range: a class, a function
        # without a closure or a module has no iteration state to consume.
        return type(v) in _PLAIN or immutable(v)
    if kind == analysis.MAYBE_SUBSCRIPT:
        return not project_getitem(type(v))
    if kind == analysis.MAYBE_METHOD:
        if immutable(v) and type(v) is not types.MethodType:
            return True
        pure = _PURE_METHODS.get(type(v))
        return pure is not None and detail in pure
    # An argument.
    if type(v) in _PLAIN and detail is not None:
        callee = value_of(detail)
        try:
            if callee in _PURE_BUILTINS:
                return True
        except TypeError:  # an unhashable callee
            pass
        # A project function that only hands its parameters to builtins
        # that do not mutate them (h(xs): ys = list(xs)) cannot mutate a
        # flat container: it can reach nothing else in it.
        if readonly_callee is not None and type(callee) is types.FunctionType and flat(v) and readonly_callee(callee):
            return True
    if type(v) is types.FunctionType or type(v) is types.MethodType:
        return stateless_callable(v) if type(v) is types.FunctionType else False
    return immutable(v)


def project_getitem(t: type) -> bool:
    """Whether subscripting an instance of t calls a __getitem__ written in
    the project (a function whose code is outside the installed libraries
    and the standard library: those, pandas' included, are taken not to
    mutate what they index)."""
    fn = getattr(t, "__getitem__", None)
    if type(fn) is not types.FunctionType:
        return False  # a C slot (list, dict, ndarray) or none
    filename = fn.__code__.co_filename
    return not (filename.startswith(_LIBRARY_PREFIXES) or "-packages" + os.sep in filename)


def params_readonly(node: ast.FunctionDef, module_globals: Dict[str, object]) -> bool:
    """Whether every parameter of the function def node is only ever a
    direct argument of a builtin that does not mutate it
    (mutation.MutationAnalysis.readonly_callee)."""
    params = set(analysis.parameter_names(node.args))
    if not params:
        return True
    local = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    parents: Dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and child is not node:
            # A nested scope may keep a parameter (a closure): only when it
            # never names one.
            if any(isinstance(n, ast.Name) and n.id in params for n in ast.walk(child)):
                return False
        if isinstance(child, (ast.Global, ast.Nonlocal)) and params & set(child.names):
            return False
        if not isinstance(child, ast.Name) or child.id not in params:
            continue
        if not isinstance(child.ctx, ast.Load):
            return False  # rebound or deleted
        if not _pure_argument(child, parents.get(child), params, local, module_globals):
            return False
    return True


def _pure_argument(name: ast.Name, call: Optional[ast.AST], params: Set[str], local: Set[str],
                   module_globals: Dict[str, object]) -> bool:
    """Whether the parameter read name is a direct argument of a builtin
    that does not mutate it, under its own name in the module."""
    if not (isinstance(call, ast.Call) and name in call.args and isinstance(call.func, ast.Name)):
        return False
    func = call.func.id
    if func not in _PURE_NAMES or func in params or func in local:
        return False
    bound = module_globals.get(func, getattr(builtins, func, None))
    return bound is getattr(builtins, func, None)  # else the module rebinds the builtin's name
