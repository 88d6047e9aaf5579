"""Whether a statement's calls stored into the objects they were given,
observed while it ran (issue 27's precision by run-time facts).

A statement that passes an object to code the rules cannot see through
(``a = peek(p)``, ``d = df.head(r)``) may mutate it, so its mutation log
would name the statement and its re-run would re-create the object first
(mutation.py). Here the object's state is taken before the statement runs
and again after it; when nothing changed, the statement did not mutate it
in that run: its mutation is taken back from the log
(Observation.settle), and Frame.observed remembers, for the statement's
stamp, the objects it was seen to leave alone (mutation.clean_names uses
that to spare their definition chain).

A state (fingerprint) is a flat list: each mutable object visited appears
as itself (compared by identity, so a replaced inner list counts as a
change) followed by its contents the first time it is met; immutable
scalars appear as values (compared by exact type and value, a float by
its bits). It covers the whole graph the object reaches: plain containers
(list, dict, set, tuple, frozenset, bytearray), instances of Python classes
with a plain ``__dict__`` (no slots, no builtin base but object or tuple),
bound methods, numpy arrays (shape, strides, dtype, data address and a
digest of the bytes) and pandas DataFrame/Series (block manager, blocks,
their arrays, axes and their names, attrs; not pandas' caches). Anything
else (an iterator, a closure, a file, an extension array, a graph larger
than the budget) has no state here: the object is not observed and stays
"may have been mutated", as before. No user code runs while a state is
taken (no __eq__, __getattr__ or property of the user's classes).
"""

from __future__ import annotations

import hashlib
import sys
import types
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, List, Optional, Tuple

from .effects import object_key
from .objects import UserValue, immutable

if TYPE_CHECKING:
    from .frame import Frame

_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
_SCALARS = (int, str, bytes, bool, type(None))
_NODES = 4000  # values visited at most per statement (before and after each)
_BYTES = 4 << 20  # array bytes digested at most per statement
# Types whose methods are known: a method that is not pure mutates them
# (objects._PURE_METHODS), so observing them as receivers is wasted work.
_KNOWN_METHODS = frozenset([list, dict, set, bytearray])


class _Plain:
    pass


class _PlainTuple(tuple):
    pass


# The instance sizes of classes whose instances hold nothing but their
# __dict__ (and weakref): a class made in C with state of its own (a
# pybind11 class is a heap type too) is larger.
_OBJECT_SIZE = _Plain.__basicsize__
_TUPLE_SIZES = (tuple.__basicsize__, _PlainTuple.__basicsize__)


class _Budget:
    __slots__ = ("nodes", "bytes")

    def __init__(self) -> None:
        self.nodes = _NODES
        self.bytes = _BYTES


def _instance(x: UserValue, t: type, stack: List[object]) -> bool:
    """An instance of a class that keeps its state in its __dict__ (and,
    for a namedtuple, its items): every class of its MRO a class
    statement's, without non-empty __slots__, on object or tuple, of the
    size of such a class. Its dict and items go onto stack; False for any
    other object."""
    mro = t.__mro__
    if mro[-1] is not object:
        return False
    descr = None
    on_tuple = False
    for c in mro[:-1]:
        own = c.__dict__
        if not c.__flags__ & _HEAPTYPE:
            if c is not tuple:
                return False
            on_tuple = True
            continue
        if own.get("__slots__", ()):
            return False
        if descr is None and "__dict__" in own:
            descr = own["__dict__"]
    if t.__basicsize__ not in (_TUPLE_SIZES if on_tuple else (_OBJECT_SIZE,)):
        return False
    if descr is not None:
        if type(descr) is not types.GetSetDescriptorType:
            return False
        state = descr.__get__(x, t)
        if type(state) is not dict:
            return False
        stack.append(state)
    elif not on_tuple:
        return False
    if on_tuple:
        stack.append(tuple(x))
    return True


def _array(x: UserValue, out: List[object], stack: List[object], budget: _Budget) -> bool:
    """A numpy array's state into out (its object elements onto stack)."""
    dtype = x.dtype
    head = repr((x.__array_interface__["data"][0], x.shape, x.strides, dtype.descr, bool(x.flags.writeable)))
    out.append(head)
    if dtype.hasobject:
        if x.size > 1000:
            return False
        budget.nodes -= x.size
        stack.extend(x.ravel(order="K").tolist())
        return budget.nodes >= 0
    budget.bytes -= x.nbytes
    if budget.bytes < 0:
        return False
    out.append(hashlib.blake2b(x.tobytes(order="A"), digest_size=16).digest())
    return True


def _pandas(x: UserValue, out: List[object], stack: List[object]) -> bool:
    """A DataFrame's or Series' state: its block manager (replaced by
    in-place operations), blocks (their arrays and places), axes (their
    names can be set in place), attrs and flags; not its caches."""
    state = x.__dict__
    mgr = state["_mgr"]
    out.append(mgr)
    blocks = mgr.blocks
    out.append(blocks)
    out.append(len(blocks))
    for block in blocks:
        out.append(block)
        stack.append(block.values)
        stack.append(block.mgr_locs.as_array)
    axes = mgr.axes
    out.append(len(axes))
    for axis in axes:
        out.append(axis)
        stack.append(tuple(axis.names))
    stack.append(state.get("_attrs"))
    stack.append(x.flags.allows_duplicate_labels)
    stack.append(state.get("_name"))
    return True


def _library(x: UserValue, t: type, out: List[object], stack: List[object], budget: _Budget) -> bool:
    """numpy arrays and pandas frames and series; False for anything else."""
    np = sys.modules.get("numpy")
    if np is not None and t is getattr(np, "ndarray", None):
        return _array(x, out, stack, budget)
    pd = sys.modules.get("pandas")
    if pd is not None and (t is getattr(pd, "DataFrame", None) or t is getattr(pd, "Series", None)):
        return _pandas(x, out, stack)
    return False


def fingerprint(obj: object, budget: _Budget) -> Optional[List[object]]:
    """obj's state (the module doc), or None when it cannot be taken."""
    out: List[object] = []
    seen: Dict[int, object] = {}
    stack: List[object] = [obj]
    try:
        while stack:
            x: UserValue = stack.pop()
            t = type(x)
            budget.nodes -= 1
            if budget.nodes < 0:
                return None
            if t in _SCALARS or t is float or t is complex:
                out.append(x)
                continue
            if t is not tuple and t is not frozenset and t is not types.MethodType and immutable(x):
                out.append(x)  # a function without a closure, a class, a module: by identity
                continue
            if t is tuple or t is frozenset:
                # Immutable: its items, not its identity (a tuple made
                # afresh from the same items is the same state).
                out.append(t)
                out.append(len(x))
                stack.extend(x)
                continue
            k = object_key(x)
            if k in seen:
                if seen[k] is not x:
                    return None
                out.append(x)  # met before: its contents are listed there
                continue
            seen[k] = x
            out.append(x)
            if t is list:
                out.append(len(x))
                stack.extend(reversed(x))
            elif t is dict:
                out.append(len(x))
                for key, value in x.items():
                    stack.append(value)
                    stack.append(key)
            elif t is set:
                out.append(len(x))
                stack.extend(x)
            elif t is bytearray:
                out.append(bytes(x))
            elif t is types.MethodType:
                stack.append(x.__func__)
                stack.append(x.__self__)
            elif not _library(x, t, out, stack, budget) and not _instance(x, t, stack):
                return None
    except Exception:
        return None
    return out


def _same_atom(a: object, b: object) -> bool:
    t = type(a)
    if t is not type(b):
        return False
    if t in _SCALARS:
        return bool(a == b)
    if t is float:
        return a.hex() == b.hex()  # type: ignore[attr-defined]  # a float
    if t is complex:
        return repr(a) == repr(b)
    return False


def same(a: List[object], b: List[object]) -> bool:
    """Whether two states of one object are the same (the module doc)."""
    return len(a) == len(b) and all(x is y or _same_atom(x, y) for x, y in zip(a, b))


class Observation:
    """The states of the objects a statement about to run may mutate."""

    __slots__ = ("items",)

    def __init__(self, items: List[Tuple[object, List[object]]]) -> None:
        self.items = items

    def settle(self, frame: Frame, expression_id: str, stamp: int) -> None:
        """After the statement ran (also when it raised): take its mutation
        (expression_id, stamp) back from the logs of the objects whose state
        is unchanged, and note them in Frame.observed. Called after
        log_mutations: an interrupt in here leaves the logs as they were."""
        budget = _Budget()
        unchanged: Dict[int, object] = {}
        for obj, before in self.items:
            after = fingerprint(obj, budget)
            if after is not None and same(before, after):
                unchanged[object_key(obj)] = obj
        mutlog = frame.mutlog
        mutation = (expression_id, stamp)
        for key, obj in unchanged.items():
            log = mutlog.get(key)
            if log is not None and log[0] is obj and mutation in log[2]:
                log[2][:] = [m for m in log[2] if m != mutation]  # once per name it was mutated under
        if unchanged:
            frame.observed[expression_id] = (stamp, unchanged)
        else:
            frame.observed.pop(expression_id, None)


def observe(stored: FrozenSet[str], names: Iterable[Tuple[str, str]], ns: Dict[str, object],
            mutated: List[object]) -> Optional[Observation]:
    """The states of the objects of mutated (mutation.targets) that the
    statement may mutate only through calls: names gives (name, reason
    kind) of those (StmtInfo.maybe and receivers), stored the names it
    stores into (never observed: it does change them)."""
    skip = {object_key(ns[n]) for n in stored if n in ns}
    wanted: Dict[int, object] = {}
    for name, kind in names:
        v: UserValue = ns.get(name, wanted)
        if v is wanted or (kind == "method" and type(v) in _KNOWN_METHODS):
            continue
        k = object_key(v)
        if k not in skip:
            wanted[k] = v
    if not wanted:
        return None
    budget = _Budget()
    items = []
    for obj in mutated:
        if wanted.get(object_key(obj)) is obj:
            state = fingerprint(obj, budget)
            if state is not None:
                items.append((obj, state))
    return Observation(items) if items else None
