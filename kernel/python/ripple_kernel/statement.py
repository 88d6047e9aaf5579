"""Running one statement of a frame's rerun set.

StatementRunner.run executes the statement's code in the frame's
namespace with the hooks that catch its value, its direct call and its
return; logs the mutations it may make (mutation.py) and the module
globals it writes (modstate.py); and caches its outcome as an Entry and
sends its update, or reports its Panic. This is the hot path of a run that
executes code: helpers here run once per statement, never per name.
"""

from __future__ import annotations

import ast
import re
import sys
import time
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from . import instrument, nested, notebook, values
from .effects import GUARD, HOLD, OFF, RECORD, Held
from .frame import DELETED, Call, Entry, Frame
from .labelling import SCRIPT
from .modstate import ModuleState, Watched, snapshot, state_writes
from .mutation import MutationAnalysis, log_mutations, register_objects, seen_mutations
from .plan import GLOBAL, IMPORT, LOCAL, SCRIPT_QUALNAME, Plan, PlanStmt, declared

if TYPE_CHECKING:
    from .api import KernelAPI, WireObject
    from .engine import Engine
    from .modstate import BodyState
    from .rerun import Versions
    from .visualize import Visualizer

Emit = Callable[["WireObject"], None]

# How a statement ended its frame's run (StatementRunner.run's answer; None:
# it did not): a return (or a skip under stopAtSkip), an uncaught exception
# (8.1), a held effect (8.2).
RETURNED = "return"
RAISED = "exception"
HELD = "held"


class _Return(BaseException):
    """Raised by RETURN_HOOK: the frame's function returns this value."""

    def __init__(self, value: object) -> None:
        self.value = value


class Hooks:
    """Receives the value (and direct call) of the running statement."""

    __slots__ = ("value", "has", "call")

    def __init__(self) -> None:
        self.value: object = None
        self.has = False
        self.call: Optional[Call] = None

    def reset(self) -> None:
        self.value = None
        self.has = False
        self.call = None

    def value_hook(self, value: object) -> object:
        self.value = value
        self.has = True
        return value

    # CALLEE_HOOK(f)(*ARGS_HOOK(a, k=b), **KWARGS_HOOK()) (instrument.py):
    # Python evaluates the callee, then the arguments, then calls.

    def callee_hook(self, func: object) -> object:
        self.call = (func, (), {})
        return func

    def args_hook(self, /, *args: object, **kwargs: object) -> Tuple[object, ...]:
        self.call = (self.call[0], args, kwargs)  # type: ignore[index]  # callee_hook ran first
        return args

    def kwargs_hook(self) -> Dict[str, object]:
        return self.call[2]  # type: ignore[index]  # callee_hook ran first

    @staticmethod
    def return_hook(value: object) -> None:
        raise _Return(value)

    def install(self, ns: Dict[str, object]) -> None:
        """Put the hooks where the statements' compiled code calls them."""
        ns[instrument.VALUE_HOOK] = self.value_hook
        ns[instrument.CALLEE_HOOK] = self.callee_hook
        ns[instrument.ARGS_HOOK] = self.args_hook
        ns[instrument.KWARGS_HOOK] = self.kwargs_hook
        ns[instrument.RETURN_HOOK] = self.return_hook


@dataclass(eq=False)
class FrameRun:
    """One pass over a frame's statements: what its statements run in and
    report to (runner.FramePass makes it; StatementRunner reads it)."""

    frame: Frame
    plan: Plan
    depth: int
    module_dict: Dict[str, object]
    top: bool  # the top frame of the stack: visualizations apply
    ns: Dict[str, object]
    hooks: Hooks
    vis_by_id: Dict[str, List[WireObject]]  # expression id -> its visualizations
    frame_names: Dict[str, str]  # the frame's filename -> qualname, for diagnostics
    # Updates not sent yet (cached statements', the last statement's value):
    # they go out together with the next running mark, or before anything
    # else is sent (runner.FramePass.flush), in order.
    batch: List[WireObject]

    @property
    def panics(self) -> Dict[int, Tuple[str, List[str]]]:
        return self.frame.panicked


def update_of(ps: PlanStmt, payload: WireObject, elapsed: Optional[int] = None) -> WireObject:
    """A statement's update (PROTOCOL.md's ExpressionUpdate)."""
    return {
        "expressionId": ps.id,
        "profilingInfo": [] if elapsed is None else [{"type": "ExecutionTime", "nanoTime": elapsed}],
        "fromCache": False,
        "range": ps.range,
        "payload": payload,
    }


# Test frameworks' "this test does not apply" exceptions, by (module,
# qualname) of a class in the exception's MRO, so that neither unittest nor
# pytest is imported here. pytest gives Skipped the module "builtins" (its
# messages read "Skipped: ..."); XFailed (pytest.xfail()) keeps its own.
_SKIP_OUTCOMES = frozenset([
    ("unittest.case", "SkipTest"),
    ("builtins", "Skipped"),
    ("_pytest.outcomes", "Skipped"),
    ("_pytest.outcomes", "XFailed"),
])


def is_skip_outcome(exc: BaseException) -> bool:
    """Whether exc is a skip or xfail outcome (execute's stopAtSkip)."""
    return any((getattr(c, "__module__", None), getattr(c, "__qualname__", None)) in _SKIP_OUTCOMES for c in type(exc).__mro__)


@dataclass
class RunSettings:
    """What an execute request asks of its runs (kernel/PROTOCOL.md)."""

    stop_at_skip: bool = False  # stopAtSkip: a skip or xfail outcome ends the frame as a return does
    # runOnce: no statement is cached (values, bindings, mutation logs), so
    # objects die when the code releases them; no module state is tracked.
    run_once: bool = False
    hold: bool = False  # effects "hold": the statements' external effects are refused (effects.py)


class StatementRunner:
    """Runs the statements of R for one execute request."""

    def __init__(self, engine: Engine, emit: Emit, settings: RunSettings, versions: Versions,
                 effects: MutationAnalysis, visualizer: Visualizer) -> None:
        self.engine = engine
        self.kernel: KernelAPI = engine.kernel
        self.codes = engine.codes  # the statements' compiled code, kept across requests
        self.diagnostics = engine.diagnostics
        self.emit = emit
        self.versions = versions
        self.effects = effects
        self.state = None if settings.run_once else ModuleState(engine.modules)  # None: not tracked
        self.visualizer = visualizer
        self.stop_at_skip = settings.stop_at_skip
        self.run_once = settings.run_once
        self.guard = GUARD
        self.effects_mode = HOLD if settings.hold else RECORD
        if settings.hold:
            self.guard.refresh_roots()
        else:
            self.guard.dirs.clear()  # directories may have moved since the last request
        self.clock = _CLOCK

    def run(self, fr: FrameRun, ps: PlanStmt) -> Optional[str]:
        """Run one statement of R; returns how it ended the frame's run
        (RETURNED, RAISED, HELD), or None when the run goes on."""
        frame, plan, ns, hooks = fr.frame, fr.plan, fr.ns, fr.hooks
        info = ps.info
        frame.cache.pop(ps.id, None)  # no stale entry survives an interrupt or a panic
        sig = self.versions.current_sig(plan, ps, frame)
        seen = None if self.run_once else seen_mutations(plan, frame, ps.index)
        stamp = self.engine.next_stamp()
        hooks.reset()
        returned = False
        # (The guards skip a call for statements without such facts: most.)
        mutated = self.effects.targets(info, ns, self.run_once) if info.mutates or info.maybe else []
        observing = self.effects.observe(info, ns, mutated) if mutated and not self.run_once else None  # observe.py
        if ps.deps:
            _read_globals(fr, ps)
        watched: Watched = self.state.watched() if self.state is not None else []
        state = snapshot(watched) if watched else None
        body = self.state.body_state(ps, ns) if self.state is not None else None
        gwrites: Tuple[Tuple[str, str], ...] = ()
        before = _declared_values(fr)
        size = len(ns)
        started = time.perf_counter_ns()
        guard = self.guard
        guard.effects = guard.held = None  # what this statement does, from here on
        code: Optional[types.CodeType] = None
        slots: Optional[nested.Slots] = None  # a compound statement's inner values (nested.py)
        try:
            self_name = frame.self_name if frame.func_class is not None and "super" in ps.text else None
            # Frame names that functions it calls rebind (nonlocal, a
            # script's global): an inner statement binding one stores its
            # value rather than leaving it to be read after (nested.Layout).
            stored = _rebound(plan, ps) if ps.defines is not ps.info.defines and nested.is_compound(ps.node) else _NONE
            code = self.codes.code(plan.filename, ps.text, ps.node, plan.flags, self_name, plan.qualname.rpartition(".")[2],
                                   stored)
            if nested.SLOTS in code.co_names:
                slots = nested.Slots(self.codes.patches.layout(code, ps.node, stored), ns)
                code = self.codes.patches.bind(code, slots, ns)
            self._running(fr, ps)
            self.engine.set_expression(ps.id)
            with self.kernel.user_code():
                started = time.perf_counter_ns()
                try:
                    guard.mode = self.effects_mode
                    exec(code, ns)
                    if plan.qualname == SCRIPT and plan.filename.endswith((".ipynb", notebook.JUPYTER_SCRIPT)):
                        # Figures and the cell's value at a cell's end.
                        expr = hooks.has and isinstance(ps.node, ast.Expr)
                        shown = hooks.value if expr else None
                        notebook.cell_end(plan.filename, getattr(ps.node, "end_lineno", 0) or 0, shown)
                except _Return as ret:
                    returned = True
                    hooks.value = ret.value
                    hooks.has = True
                finally:
                    guard.mode = OFF  # the kernel's code from here on
                    if slots is not None:
                        slots.unbind(ns)
                    # Logged even when it raised or was interrupted: its
                    # partial effects make the objects dirty.
                    if not self.run_once:
                        log_mutations(frame, mutated, ps.id, stamp)
                        if observing is not None:
                            observing.settle(frame, ps.id, stamp)
                    _write_globals(fr, ps.text, size, before)
                    if state is not None or body is not None:
                        gwrites = _note_writer(frame, ps, _state_writes(frame, watched, state, body))
                elapsed = time.perf_counter_ns() - started
                if ps.deps and ps.deps[-1][1] == IMPORT:
                    # The versions of the modules it has just imported
                    # (unloaded before it ran the first time).
                    sig = self.versions.current_sig(plan, ps, frame)
                value, update = _value_update(ps, hooks, ns, fr.module_dict, elapsed)
        except KeyboardInterrupt:
            forget_broken_imports()
            raise
        except BaseException as exc:  # a Panic of this statement, unless it was held
            if guard.held is None:
                elapsed = time.perf_counter_ns() - started
                inner = _inner(slots, ps, exc, code)
                return self._panicked(fr, ps, as_unbound_local(exc, plan, code), elapsed, inner)
        if guard.held is not None:  # held, also when its code caught the refusal
            return self._held(fr, ps, guard.held)
        if guard.effects:
            update["payload"]["effects"] = guard.effects
        if slots is not None:
            inner = _inner(slots, ps)
            if inner:
                update["inner"] = inner
        bindings = tuple((name, ns.get(name, DELETED)) for name in ps.defines)
        if not self.run_once:
            register_objects(frame, ns, info, ps.id)
        call = hooks.call
        if call is not None:
            call = self._method_call(call, update)
        entry = Entry(info.key, ps.dep_names, sig, stamp, bindings, update, value, returned, call, gwrites,
                      seen, frame.layout.token)
        if not self.run_once:
            frame.cache[ps.id] = entry
        frame.reported[ps.id] = update
        self.kernel.flush_output()
        self.engine.set_expression(None)
        fr.batch.append(update)  # sent with the next running mark, or before anything else
        if fr.top and ps.id in fr.vis_by_id:
            self.flush(fr)
            self.visualizer.visualize(fr.vis_by_id[ps.id], value, ns, fr.module_dict, fresh=True)
        return RETURNED if returned else None

    def flush(self, fr: FrameRun) -> None:
        """Send the updates batched so far (FrameRun.batch)."""
        batch = fr.batch
        if batch:
            self.emit({"type": "updates", "depth": fr.depth, "updates": batch[:]})
            batch.clear()

    def _running(self, fr: FrameRun, ps: PlanStmt) -> None:
        """Mark the statement running (8.4), with what was batched before it:
        one write, so a run of cheap statements costs no more frames."""
        fr.batch.append(update_of(ps, {"type": "Pending", "message": "running", "startedAt": self.clock.now()}))
        self.flush(fr)

    def _held(self, fr: FrameRun, ps: PlanStmt, held: Held) -> str:
        """Report the statement held (8.2): it tried an effect an automatic
        run refuses. Nothing is cached for it (its entry is gone); its
        partial mutations are logged as a Panic's are."""
        forget_broken_imports()
        self.kernel.flush_output()
        self.engine.set_expression(None)
        update = update_of(ps, held.payload())
        fr.frame.reported[ps.id] = update
        if not self.run_once:
            register_objects(fr.frame, fr.ns, ps.info, ps.id)
        fr.batch.append(update)
        self.flush(fr)
        return HELD

    def _method_call(self, call: Call, update: WireObject) -> Optional[Call]:
        """The statement's direct call when it calls a method of the project
        (the update names it: a LocalCall can enter it), else None."""
        pointer = self.engine.method_pointer(call[0])
        if pointer is None:
            return None
        update["methodCall"] = {"methodPointer": pointer}
        return call

    def _panicked(self, fr: FrameRun, ps: PlanStmt, exc: BaseException, elapsed: int,
                  inner: Optional[List[WireObject]] = None) -> str:
        """Report the statement's Panic; it ends the frame's run (8.1), as a
        return does for a skip or xfail outcome under stopAtSkip."""
        forget_broken_imports()
        message = values.exception_message(exc)
        trace = [ps.id]
        fr.panics[ps.index] = (message, trace)
        diag = self.diagnostics.for_exception(
            exc, location=ps.range, path=fr.plan.path, expression_id=ps.id, frame_names=fr.frame_names
        )
        self.kernel.flush_output()
        self.engine.set_expression(None)
        self.flush(fr)
        self.emit({"type": "diagnostic", "diagnostic": diag})
        update = update_of(ps, {"type": "Panic", "message": message, "trace": trace}, elapsed)
        if inner:
            update["inner"] = inner  # what its inner statements did before it raised
        fr.frame.reported[ps.id] = update
        if not self.run_once:
            register_objects(fr.frame, fr.ns, ps.info, ps.id)
        self.emit({"type": "updates", "depth": fr.depth, "updates": [update]})
        return RETURNED if self.stop_at_skip and is_skip_outcome(exc) else RAISED


class StartClock:
    """startedAt of a running mark (8.4): RFC 3339 UTC with milliseconds,
    "2026-11-29T01:02:03.456Z"; the formatted second is reused."""

    __slots__ = ("second", "prefix")

    def __init__(self) -> None:
        self.second = -1
        self.prefix = ""

    def now(self) -> str:
        t = time.time()
        second = int(t)
        if second != self.second:
            self.second = second
            self.prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return "%s.%03dZ" % (self.prefix, min(int((t - second) * 1000), 999))


_CLOCK = StartClock()  # one per process: the formatted second outlives a request


def _inner(slots: Optional[nested.Slots], ps: PlanStmt, exc: Optional[BaseException] = None,
           code: Optional[types.CodeType] = None) -> Optional[List[WireObject]]:
    """The inner values of a compound statement that ran (nested.py), or
    None for a statement without inner statements."""
    if slots is None:
        return None
    return slots.report(nested.Place(ps.node, ps.text, ps.range), exc, code)


_NONE: FrozenSet[str] = frozenset()


def _rebound(plan: Plan, ps: PlanStmt) -> FrozenSet[str]:
    """The frame names that code ps calls rebinds (nonlocal, a script's
    global): the writes of the code its local definers bound (plan.py's
    resolve adds them to ps.defines)."""
    out: Set[str] = set()
    for _, kind, ref in ps.deps:
        if kind == LOCAL and isinstance(ref, int):  # a statement index
            out |= plan.writes[ref]
    return frozenset(out)


def _read_globals(fr: FrameRun, ps: PlanStmt) -> None:
    """The statement reads module globals as they are now: a function it or
    an earlier statement called may have rebound one since the namespace
    was filled."""
    ns, module_dict = fr.ns, fr.module_dict
    for name, kind, _ in ps.deps:
        # A name the function binds is its local (read before its binding,
        # it is unbound, as in Python), unless declared global.
        if kind == GLOBAL and (name not in fr.plan.bound or name in declared(fr.plan)):
            value = module_dict.get(name, DELETED)
            if value is not DELETED and ns.get(name, DELETED) is not value:
                ns[name] = value


def _declared_values(fr: FrameRun) -> Optional[Dict[str, object]]:
    """The names written as module globals (the body's `global`, nested
    functions' too) start as the module has them: a helper may have
    rebound one since; after the statement, only what it wrote goes back
    (_write_globals), never a stale copy over the helper's. Returns their
    values now, or None when there are none."""
    names = declared(fr.plan)
    if not names:
        return None
    ns, module_dict = fr.ns, fr.module_dict
    before = {}
    for name in names:
        value = module_dict.get(name, DELETED)
        if value is DELETED:
            ns.pop(name, None)
        else:
            ns[name] = value
        before[name] = value
    return before


def _write_globals(fr: FrameRun, text: str, size: int, before: Optional[Dict[str, object]]) -> None:
    """Carry a statement's writes of module globals to the module, as the
    function's own code would make them: the names the function declares
    `global`, and names it added with globals()[...] (any new name of the
    namespace that is not the function's, looked for only after a
    statement that says globals: the scan is of the whole namespace)."""
    ns, module_dict = fr.ns, fr.module_dict
    for name, old in (before or {}).items():
        value = ns.get(name, DELETED)
        if value is old:
            # Not written by the statement: take what the module has now (a
            # function it called may have rebound it there).
            current = module_dict.get(name, DELETED)
            if current is DELETED:
                ns.pop(name, None)
            else:
                ns[name] = current
        elif value is DELETED:
            module_dict.pop(name, None)
        else:
            module_dict[name] = value
    if len(ns) > size and "globals" in text:
        bound, params = fr.plan.bound, fr.frame.params
        for name in [n for n in ns if n not in module_dict and n not in bound and n not in params
                     and not n.startswith("__ripple_") and n != "__class__"]:
            module_dict[name] = ns[name]


def _state_writes(frame: Frame, watched: Watched, state: Optional[List[object]],
                  body: Optional[BodyState]) -> Tuple[Tuple[str, str], ...]:
    """(module, name) of the module state a statement changed: watched
    globals (through helpers) and what the body changed (BodyState)."""
    writes = state_writes(frame, watched, state) if state is not None else ()
    if body is not None:
        writes += body.writes(frame)
    return writes


def _note_writer(frame: Frame, ps: PlanStmt, gwrites: Tuple[Tuple[str, str], ...]) -> Tuple[Tuple[str, str], ...]:
    """Note whether the statement rebound module globals (Frame.gwriters,
    and Frame.gnew for a new writer); returns gwrites."""
    if gwrites:
        if ps.id not in frame.gwriters:
            frame.gwriters.add(ps.id)
            if frame.gnew is None or ps.index < frame.gnew:
                frame.gnew = ps.index
    else:
        frame.gwriters.discard(ps.id)
    return gwrites


def _value_update(ps: PlanStmt, hooks: Hooks, ns: Dict[str, object], module_dict: Dict[str, object],
                  elapsed: int) -> Tuple[object, WireObject]:
    """(value, update) of a statement that ran: its value is what the value
    hook caught, an augmented target's new value, else None; the update
    holds its preview, type and mime types (user code may run: a
    __repr__)."""
    if hooks.has:
        value = hooks.value
    elif isinstance(ps.node, ast.AugAssign):
        value = _target_value(ps.node.target, ns, module_dict)
    else:
        value = None
    payload: WireObject = {"type": "Value", "preview": values.preview(value)}
    type_name = values.type_name(value)
    mimes = values.mime_types(value)
    if mimes:
        payload["mimeTypes"] = list(mimes)
    update = update_of(ps, payload, elapsed)
    update["type"] = type_name
    return value, update


class _Impure(Exception):
    """A target whose reading again could do what the statement did not."""


def _target_value(target: ast.expr, ns: Dict[str, object], module_dict: Dict[str, object]) -> object:
    """The new value of an augmented assignment's target (``n``,
    ``x["q"]``, ``obj.n``, ``grid[i, 1:]``), read again after the statement:
    None when it cannot be read, or when reading it would evaluate more than
    names, constants, attributes and subscripts (``x[f()] += 1`` calls f
    once, as written). Reading runs what the statement ran already: a
    property's getter, a __getitem__."""
    try:
        return _pure(target, ns, module_dict)
    except Exception:  # _Impure, a name not in ns, a failing getter: no value
        return None


def _pure(node: ast.expr, ns: Dict[str, object], module_dict: Dict[str, object]) -> object:
    if isinstance(node, ast.Name):
        return ns[node.id] if node.id in ns else module_dict[node.id]  # a function's global
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute):
        return getattr(_pure(node.value, ns, module_dict), node.attr)
    if isinstance(node, ast.Subscript):
        return _pure(node.value, ns, module_dict)[_pure(node.slice, ns, module_dict)]  # type: ignore[index]  # any subscriptable
    if isinstance(node, ast.Tuple):
        return tuple(_pure(e, ns, module_dict) for e in node.elts)
    if isinstance(node, ast.Slice):
        return slice(*(None if e is None else _pure(e, ns, module_dict) for e in (node.lower, node.upper, node.step)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value  # x[-1]
    raise _Impure(type(node).__name__)


def forget_broken_imports() -> List[str]:
    """Drop the modules a failed or interrupted import left half done.

    An import cut short (an interrupt in the middle of ``import pandas``, an
    error in one of its submodules) loses the module it was loading, as
    importlib removes it, but keeps the submodules that had finished: the
    next ``import pandas`` runs the package again, finds them in
    sys.modules, never binds them on the new package object, and fails
    with "partially initialized module 'pandas' has no attribute 'core'".
    The kernel would stay broken until it restarts. Called after a
    statement raised or was interrupted (rare, so the scan is affordable):
    a submodule whose parent package is gone from sys.modules, and a
    module still marked initializing, are dropped, so the next import
    starts clean, as in a fresh interpreter.
    """
    modules = sys.modules
    broken = []
    for name, module in list(modules.items()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and getattr(spec, "_initializing", False):
            broken.append(name)
            continue
        parent = name.rpartition(".")[0]
        while parent:
            if parent not in modules:
                broken.append(name)
                break
            parent = parent.rpartition(".")[0]
    for name in broken:
        modules.pop(name, None)
    return broken


# What a function's read of a local it has not bound yet raises (3.11 changed the words).
_UNBOUND = ("cannot access local variable '%s' where it is not associated with a value"
            if sys.version_info >= (3, 11) else "local variable '%s' referenced before assignment")
_NOT_DEFINED = re.compile(r"name '([^']+)' is not defined")


def as_unbound_local(exc: BaseException, plan: Plan, code: Optional[types.CodeType]) -> BaseException:
    """exc as a real call of the function raises it: the statements run at
    the top of a namespace, where reading a frame local not bound yet is a
    NameError; in the function (a name it binds somewhere, not declared
    global) it is an UnboundLocalError. Only a read by the statement's own
    code (not by a function it calls); a script's top level keeps the
    NameError, as Python's module level does."""
    if type(exc) is not NameError or code is None or plan.qualname == SCRIPT_QUALNAME:
        return exc
    tb = exc.__traceback__
    if tb is None:
        return exc
    while tb.tb_next is not None:
        tb = tb.tb_next
    if tb.tb_frame.f_code is not code:
        return exc
    name = getattr(exc, "name", None)
    if not isinstance(name, str):
        match = _NOT_DEFINED.match(str(exc))
        name = match.group(1) if match else None
    if name is None or (name not in plan.bound and name not in plan.params) or name in declared(plan):
        return exc
    unbound = UnboundLocalError(_UNBOUND % name).with_traceback(exc.__traceback__)
    unbound.__context__ = exc.__context__
    unbound.__suppress_context__ = exc.__suppress_context__
    return unbound
