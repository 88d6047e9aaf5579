"""A frame: one level of a context's stack, its cache and its state.

- Entry: the cached outcome of one statement's last successful run (the
  caching invariant's entries: rerun.py's module doc).
- TrackedDict: a dict that notes which keys changed since its owner last
  looked; a frame's cache and reported are TrackedDicts.
- FrameState: everything a frame knows of the function it runs, a
  dataclass, so Frame.reset is one fresh FrameState; SyncState, the
  incremental bookkeeping of its runs, and Layout, which statement is
  where, are dataclasses inside it.
- Frame: a FrameState plus what the stack item and the last run gave it.

Also the helpers the engine needs to give a frame its arguments
(bind_arguments, class_cell).
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import (TYPE_CHECKING, Any, Callable, Collection, Dict, FrozenSet, Iterable, List, Optional, Sequence,
                    Set, Tuple, TypeVar, Union)

if TYPE_CHECKING:
    from .api import WireObject
    from .plan import Plan

DELETED = object()  # binding mark: the name was unbound after the statement
# Binding (and Entry.value) mark: the value was let go of once a later
# statement overwrote it, and is in the value journal (overwritten.py).
RELEASED = object()
BLOCK = 32  # statements per block of merged bindings (SyncState.blocks); tests make it smaller
PENDING = "pending"  # reported-state marks (identity compared)
NOT_REACHED = "not reached"

Bindings = Tuple[Tuple[str, object], ...]  # (name, value or DELETED) in the statement's defines order
Mutation = Tuple[str, int]  # (mutator expression id, its stamp when it mutated)
Call = Tuple[object, Tuple[object, ...], Dict[str, object]]  # (callee, args, kwargs) of a direct call
# A mutation log, Frame.mutlog's value: [object, creator expression id or
# None, [Mutation]]. A list, changed in place (and unpacked by journal.py),
# so its items' types are not one.
MutLog = List[Any]
# An update sent, PENDING, or (NOT_REACHED, range, reason kind or None, the
# id of the statement that ended the run or None): runner.FramePass.
Reported = Union["WireObject", str, Tuple[str, "WireObject", Optional[str], Optional[str]]]
Pointer = Tuple[str, str]  # (module, qualname)

V = TypeVar("V")


class Entry:
    """The cached outcome of one statement's last successful run.

    A slotted class, not a dataclass: a frame holds one per statement, and
    Python 3.9's dataclasses cannot combine slots with defaults."""

    __slots__ = ("key", "dep_names", "sig", "stamp", "bindings", "update", "value", "returned", "call", "gwrites",
                 "seen", "layout", "deletes", "released")

    def __init__(self, key: str, dep_names: Tuple[str, ...], sig: Optional[Tuple[object, ...]], stamp: int,
                 bindings: Bindings, update: WireObject, value: object, returned: bool, call: Optional[Call],
                 gwrites: Tuple[Tuple[str, str], ...] = (), seen: Optional[FrozenSet[Mutation]] = None,
                 layout: Optional[object] = None) -> None:
        self.key = key
        self.dep_names = dep_names
        self.sig = sig
        self.stamp = stamp
        self.bindings = bindings
        self.update = update
        self.value = value
        self.returned = returned
        self.call = call  # (callee, args, kwargs) of a direct call, or None
        self.gwrites = gwrites  # (module, name) of the module globals it rebound (module state)
        # The mutations (mutator id, stamp) that earlier statements had
        # made to the objects it read when it ran, and the frame's layout
        # then (mutation.seen_mutations); None: not known, not checked.
        self.seen = seen
        self.layout = layout
        # A binding is DELETED or RELEASED: the run loop applies it on its
        # own (apply_clean merges only plain bindings).
        self.deletes = any(v is DELETED or v is RELEASED for _, v in bindings)
        # name -> the journal key of its RELEASED binding ("" for a
        # RELEASED value), or None (overwritten.py).
        self.released: Optional[Dict[str, str]] = None


def binding(entry: Entry, name: str) -> object:
    """The value entry bound to name, or DELETED (also when it was
    released: the rules take a value they do not know as unknown)."""
    for bound, value in entry.bindings:
        if bound == name:
            return DELETED if value is RELEASED else value
    return DELETED


class TrackedDict(Dict[str, V]):
    """A dict that notes which keys were set or removed since its owner
    last looked (touched; cleared: everything may have changed).

    A Frame's cache and reported are TrackedDicts: rerun.RerunPlanner.sync
    folds what changed since the last run into the frame's incremental
    bookkeeping (SyncState), then empties touched. Every way of changing
    the dict records it; a key noted that did not change (a pop of a
    missing key) only costs a look."""

    __slots__ = ("touched", "cleared")

    def __init__(self) -> None:
        super().__init__()
        self.touched: Set[str] = set()
        self.cleared = False

    def __setitem__(self, key: str, value: V) -> None:
        self.touched.add(key)
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self.touched.add(key)
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        self.touched.add(key)
        return dict.pop(self, key, *default)

    # The rarely used ones go through super(): mypy cannot type dict's
    # unbound methods on a generic subclass.

    def setdefault(self, key: str, default: Any = None) -> Any:
        self.touched.add(key)
        return super().setdefault(key, default)

    def popitem(self) -> Tuple[str, V]:
        self.cleared = True
        return super().popitem()

    def clear(self) -> None:
        self.cleared = True
        self.touched.clear()
        super().clear()

    def update(self, *args: Any, **kwargs: V) -> None:
        self.cleared = True
        super().update(*args, **kwargs)

    def __ior__(self, other: Any) -> TrackedDict[V]:  # type: ignore[override, misc]  # dict's |= of any mapping
        self.cleared = True
        return dict.__ior__(self, other)

    def __reduce__(self) -> Tuple[Callable[..., object], Tuple[object, ...]]:
        return (dict, (dict(self),))


@dataclass
class SyncState:
    """The incremental bookkeeping of a frame's runs (RerunPlanner.sync).

    An edit's run costs what changed, not the length of the function, by
    carrying these from one run of the frame to the next. They describe
    plan, with the layout layout, the parameter stamp param and the module
    globals' versions global_versions, as of the last sync; the changes since then
    are the plan's (Plan.parent, Plan.changed), the keys touched in cache
    and reported (TrackedDict), and the differences of those values. Only
    sync and the run it serves update them; plan None: nothing is known,
    the next run checks and visits every statement.
    """

    plan: Optional[Plan] = None
    layout: Optional[object] = None
    param: Optional[int] = None
    global_versions: Dict[str, object] = field(default_factory=dict)
    # Indices of the statements the re-run check found failing (no entry,
    # another key, signature, a move) last time. Every other statement
    # passed, and its check cannot change until one of its inputs does:
    # its entry, its definers' entries, its PlanStmt, the parameter stamp,
    # a global's version, an import.
    unverified: Set[int] = field(default_factory=set)
    # Indices the run loop must visit one by one. Every other statement is
    # clean: it has an entry that returned nothing and unbinds nothing, and
    # reported holds that entry's update with its range, so visiting it
    # changes nothing but the namespace and reached (apply_clean).
    dirty: Set[int] = field(default_factory=set)
    # Per block of BLOCK statements (index // BLOCK), the merged bindings
    # of their entries, or None; valid while none of their entries changes
    # (an entry set or removed drops its block).
    blocks: List[Optional[Dict[str, object]]] = field(default_factory=list)
    # cache or reported may hold ids that are not the plan's (set by sync
    # when the ids changed or such a key was touched; cleared by the run
    # that removed them).
    stale_keys: bool = True

    def visit_all(self, n: int) -> None:
        """Nothing is known of a body of n statements: every one is dirty,
        no block is merged, any key may be stale."""
        self.dirty = set(range(n))
        self.blocks = [None] * (n // BLOCK)
        self.stale_keys = True

    def drop_blocks(self, indices: Iterable[int]) -> None:
        """Forget the merged bindings of the blocks holding indices."""
        blocks = self.blocks
        for k in indices:
            if k // BLOCK < len(blocks):
                blocks[k // BLOCK] = None


def apply_clean(cache: Dict[str, Entry], sync: SyncState, ids: List[str], ns: Dict[str, object],
                reached: Set[str], a: int, b: int) -> None:
    """Visit the clean statements a..b-1 (SyncState.dirty) in bulk: their
    bindings into the namespace, in order, and their ids into reached; a
    whole block at a time where one fits (SyncState.blocks)."""
    blocks = sync.blocks
    k = a
    while k < b:
        if k % BLOCK == 0 and k + BLOCK <= b:
            merged = blocks[k // BLOCK]
            if merged is None:
                merged = {}
                for e in map(cache.__getitem__, ids[k:k + BLOCK]):
                    merged.update(e.bindings)
                blocks[k // BLOCK] = merged
            ns.update(merged)
            k += BLOCK
        else:
            ns.update(cache[ids[k]].bindings)
            k += 1
    reached.update(ids[a:b])


@dataclass
class Layout:
    """Which statement is where (rerun.layout): token is the same object
    while every statement id of the function stays at its index."""

    token: object = field(default_factory=object)
    ids: Optional[Tuple[str, ...]] = None
    plan: Optional[Plan] = None  # the plan token was last checked for
    plan_token: Optional[object] = None  # that plan's Plan.layout_token


@dataclass(eq=False)
class FrameState:
    """What a frame knows of the function it runs: its caches, arguments,
    mutation log and module state. Frame.reset starts it afresh."""

    pointer: Optional[Pointer] = None  # (module, qualname) of the function it runs
    cache: TrackedDict[Entry] = field(default_factory=TrackedDict)  # expression id -> Entry
    reported: TrackedDict[Reported] = field(default_factory=TrackedDict)  # expression id -> last update sent
    namespace: Dict[str, object] = field(default_factory=dict)  # persistent across runs (rerun.py's module doc)
    plan: Optional[Plan] = None
    params: Dict[str, object] = field(default_factory=dict)
    param_stamp: int = 0
    args_key: Optional[Tuple[object, ...]] = None  # ExplicitCall: what the arguments were evaluated from
    # ExplicitCall of a method a class inherits from another class of the
    # module: the qualname its code has (its def's place).
    code_qualname: Optional[str] = None
    # The arguments were evaluated by this request and no statement has run
    # on them yet: they are as fresh as a refresh would make them.
    args_fresh: bool = False
    # The class of a method that uses super() or __class__ (its __class__
    # cell) and the name of its first parameter, for the statements'
    # zero-argument super() (instrument.compile_statement).
    func_class: Optional[type] = None
    self_name: Optional[str] = None
    # effects.object_key(object) -> MutLog for mutable objects bound in this frame
    # (mutation.dirty_reads).
    mutlog: Dict[int, MutLog] = field(default_factory=dict)
    # expression id -> (its stamp, object_key -> object): the objects its
    # calls were seen to leave unchanged in that run (observe.py).
    observed: Dict[str, Tuple[int, Dict[int, object]]] = field(default_factory=dict)
    # Module state (modstate.py): (module, name) -> (module dict, the value
    # before the frame first rebound it), and the ids of the statements that
    # rebound module globals in the last run.
    gbase: Dict[Tuple[str, str], Tuple[Dict[str, object], object]] = field(default_factory=dict)
    gwriters: Set[str] = field(default_factory=set)
    # effects.object_key(object) -> (the object, a copy of its content
    # before the frame's body first changed it in place): module state a
    # body statement mutated (helpers.LOG.append(1); modstate.BodyState).
    gcontent: Dict[int, Tuple[object, object]] = field(default_factory=dict)
    gforce: bool = False  # the next pass resets the state (runner.Runner.run)
    gnew: Optional[int] = None  # index of the first statement that became a writer in this pass
    last_rerun: Collection[int] = ()  # R of the last pass
    layout: Layout = field(default_factory=Layout)
    # The value journal was asked for this frame's cache (it is asked once,
    # for a frame new to this kernel: journal.py).
    journal_checked: bool = False
    # id -> stamp of entries the journal found it cannot store (they do not
    # pickle, or are too large): not tried again while unchanged.
    journal_skip: Dict[str, int] = field(default_factory=dict)
    # Ids of the entries holding RELEASED bindings (overwritten.py; an id
    # may have lost its entry since: the entry says).
    released: Set[str] = field(default_factory=set)
    # The journal keys of the values this frame let go of or restored
    # naming: a write drops the rows of those no entry names any more
    # (journal.py).
    released_rows: Set[str] = field(default_factory=set)
    # After a restore from the journal, its (old id -> new id, old id ->
    # (old stamp, new stamp)): the mutation log of a value released by the
    # old process is read in this one's ids and stamps.
    journal_remap: Optional[Tuple[Dict[str, str], Dict[str, Tuple[int, int]]]] = None
    sync: SyncState = field(default_factory=SyncState)


class Frame(FrameState):
    """One level of a context's stack and its caches.

    Owned by its Context; touched only by the request being served.
    """

    def __init__(self, item_key: object) -> None:
        super().__init__()
        self.item_key = item_key  # what the stack item said
        self.item: Optional[WireObject] = None  # the stack item of the current request
        # True for a script frame (module:__main__), the script's namespace
        # for a function a script defined, else None (the module's globals).
        self.script_globals: Union[None, bool, Dict[str, object]] = None
        self.reached: Set[str] = set()  # ids applied or run without a panic in the last run
        self.panicked: Dict[int, Tuple[str, List[str]]] = {}  # index -> (message, trace) of the last run
        # ids the last run did not reach because a statement before them
        # ended it (a return, an exception, a held effect): they did not run.
        self.unreached: Set[str] = set()

    def reset(self, pointer: Pointer) -> None:
        """Forget the function the frame ran: it runs pointer now. What the
        stack item and the last run gave it stays (the engine sets those)."""
        vars(self).update(vars(FrameState(pointer)))


def class_cell(func: object) -> Tuple[Optional[type], Optional[str]]:
    """(class, first parameter name) of a function whose code has a
    __class__ cell (a method that uses super() or __class__), else
    (None, None)."""
    code = getattr(func, "__code__", None)
    closure = getattr(func, "__closure__", None)
    if code is None or "__class__" not in code.co_freevars or not closure or not code.co_argcount:
        return None, None
    try:
        cls = closure[code.co_freevars.index("__class__")].cell_contents
    except ValueError:  # an empty cell
        return None, None
    return cls, code.co_varnames[0]


_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08  # inspect's values, without importing it


def bind_arguments(func: Callable[..., object], args: Sequence[object], kwargs: Dict[str, object]) -> Dict[str, object]:
    """inspect.signature binding with defaults applied: {param: value}."""
    code = getattr(func, "__code__", None)
    if (
        not args
        and not kwargs
        and isinstance(func, types.FunctionType)  # exactly: FunctionType has no subclasses
        and code is not None
        and code.co_argcount == 0
        and code.co_kwonlyargcount == 0
        and not code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS)
        and not hasattr(func, "__wrapped__")
        and not hasattr(func, "__signature__")
    ):
        return {}  # a function of no parameters (most tests): nothing to bind
    import inspect  # imported on first need: it costs a kernel start ~5 ms

    sig = inspect.signature(func)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)
