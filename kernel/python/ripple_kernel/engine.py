"""ripple's Python execution engine: the Engine methods of kernel/PROTOCOL.md.

The kernel process imports this module and calls ``register(api)``, which
returns ``{method: handler(params) -> JSON result}`` for ``compile``,
``execute``, ``dropContext`` and ``status``; ``detach()`` takes the engine
out again (pytest runs). ``api`` is the kernel's KernelAPI (api.py).

An ``execute`` starts in Engine.execute: the request is checked
(request.py), the context's frames are kept or reset by their stack items,
each item is entered (calls.py) and run (Runner). Displays of user
code go through display.py; the value journal (journal.py) keeps frames'
caches on disk.

State: one Engine per kernel process; contexts by id, each a stack of
Frames. Everything runs on the kernel's main thread, one request at a time,
so nothing here is locked.
"""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import analysis, display, effects, instrument, journal, keptoutput, modules, reads, values
from .api import KernelAPI, WireObject
from .calls import Calls
from .frame import Frame
from .request import Drop, ExecuteRequest, ItemKey, compile_request, drops, execute_request, item_key, params_object
from .runner import Failure, Runner
from .text import Source

# The install directory (the package's parent): tracebacks hide its files.
_KERNEL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

Handler = Callable[[object], WireObject]


@dataclass
class _Registered:
    """The Engine register made: detach takes it out of the kernel."""

    engine: Optional[Engine] = None


_REGISTERED = _Registered()


def detach() -> None:
    """Take the engine out of this kernel for good, so that it is a plain
    interpreter: the kernel method "pytest" calls it first (ripple run
    --tests), because under pytest nothing of ripple may be seen. Project
    modules then import through Python's own machinery (the engine's
    loader serves its text, which breaks importlib.resources, __loader__
    and __cached__ as pytest has them), ``import ripple`` fails unless a
    ``ripple`` is installed, and MPLBACKEND is as the user's environment
    has it (the engine's backend closes figures on plt.show())."""
    engine, _REGISTERED.engine = _REGISTERED.engine, None
    if engine is not None:
        engine.close()


def register(kernel: KernelAPI) -> Dict[str, Handler]:
    """The engine's request handlers, bound to a new Engine for kernel."""
    engine = Engine(kernel)
    _REGISTERED.engine = engine
    at_exit = getattr(kernel, "at_exit", None)
    set_idle = getattr(kernel, "set_idle", None)
    if engine.journal is not None and set_idle is not None:
        set_idle(engine.journal_pending, engine.journal_idle, engine.journal.idle_seconds)
        if at_exit is not None:
            # A kernel stopped on purpose (shutdown, restart) writes what it
            # has not written yet; a killed one loses only that.
            at_exit(engine.journal_flush)
    elif engine.journal is not None:
        engine.journal = None  # nobody would ever write it
    if at_exit is not None:
        # Cached values are released at exit like the user's globals (an
        # unclosed file a statement opened is flushed). Project modules
        # stay in sys.modules: the interpreter's teardown clears those.
        at_exit(engine.contexts.clear)
    return engine.handlers()


def context_namespaces(context_id: str) -> Optional[Tuple[Dict[str, object], Dict[str, object]]]:
    """(locals, globals) of the top frame of a context's last run on this
    kernel (completion, complete.py), or None when it has none here."""
    engine = _REGISTERED.engine
    ctx = engine.contexts.get(context_id) if engine is not None else None
    if ctx is None or not ctx.frames:
        return None
    frame = ctx.frames[-1]
    script = frame.script_globals
    module = sys.modules.get(frame.pointer[0]) if frame.pointer is not None else None
    if isinstance(script, dict):
        globs = script
    elif script is None and module is not None:
        globs = vars(module)
    else:
        globs = {}  # a script's globals are made afresh per pass: its names are in the namespace
    return frame.namespace, globs


@dataclass
class Context:
    """An execution context: its stack of frames (bottom first).

    generation tells apart the contexts the Go side created under one id
    (a context destroyed and created again): a run of another generation
    starts from an empty cache, and a drop of another generation leaves the
    context alone, whatever order the two requests come in."""

    id: str
    generation: int
    frames: List[Frame] = field(default_factory=list)


# A tear-down a finalize run registered: (stage named in its failure, fn).
Teardown = Tuple[str, Callable[[], object]]


class Engine:
    """The engine of one kernel; see the module doc."""

    def __init__(self, kernel: KernelAPI) -> None:
        self.kernel = kernel
        self.root = os.path.realpath(kernel.root)
        self.analyzer = analysis.Analyzer()  # what statements use, define, mutate
        self.codes = instrument.CodeCache()  # statements compiled to report their values
        # Tear-downs of the finalize run in flight (execute), else None.
        self.teardowns: Optional[List[Teardown]] = None
        self.diagnostics = values.Diagnostics(self.root, self._source_for_filename, _KERNEL_DIR)
        self.modules = modules.ModuleTable(self.root, kernel, self.analyzer, self.diagnostics)
        self.contexts: Dict[str, Context] = {}
        self._stamps = itertools.count(1)
        self.expression: Optional[str] = None  # the statement running now (set_expression)
        # The frame whose statements run now (reads.py keeps what they
        # read), and whether it is journalled (its finished statements are
        # written soon: Journal.finished).
        self.frame: Optional[Frame] = None
        self.frame_journalled = False
        # The output of the statement running now, kept with its value
        # (PROTOCOL.md 8.3, keptoutput.py).
        self.collector = keptoutput.Collector()
        tee = getattr(kernel, "tee_output", None)
        if tee is not None:
            tee(self.collector.chunk)
        # Context id -> the files its cached statements read, as last
        # reported to the Go side (the "reads" progress event).
        self.reported_reads: Dict[str, List[str]] = {}
        # The value journal, when the server gave it a file (RIPPLE_VALUES_DB).
        self.journal: Optional[journal.Journal] = journal.from_env(getattr(kernel, "log", None) or _no_log)
        self.calls = Calls(kernel, self.modules, self.diagnostics, self.next_stamp)
        # The run's questions about callables (bound here: the run loop
        # asks them per statement).
        self.method_pointer = self.calls.method_pointer
        self.visualization_callable = self.calls.visualization_callable
        self.refresh_arguments = self.calls.refresh_arguments
        self._mplbackend = display.install(self)
        # The process's one audit hook (8.2): it looks at events only while
        # a user statement runs (statement.StatementRunner).
        effects.install().project = self.root

    def handlers(self) -> Dict[str, Handler]:
        return {
            "compile": self.compile,
            "execute": self.execute,
            "dropContext": self.drop_context,
            "status": self.status,
        }

    def close(self) -> None:
        """Forget all state and remove the import finders (tests, shutdown)."""
        self.contexts.clear()
        if self.journal is not None:
            self.journal.close()
        self.modules.close()
        display.uninstall(self._mplbackend)

    # -- the value journal (journal.py) --------------------------------------

    def journal_pending(self) -> bool:
        return bool(self.journal is not None and self.journal.pending)

    def journal_idle(self, arrived: Optional[Callable[[], bool]] = None) -> bool:
        """Write one frame of the journal (the kernel is idle; arrived()
        says a request came: the write is left for later)."""
        assert self.journal is not None  # set_idle is given this only with a journal
        return self.journal.idle(self._journal_runner, arrived)

    def journal_flush(self) -> None:
        """Write everything now (tests, a kernel stopped on purpose)."""
        if self.journal is None:
            return
        while self.journal_pending():
            self.journal_idle()
        self.journal.flush()

    def _journal_runner(self) -> Runner:
        return Runner(self, _no_log)

    # -- what the run calls ------------------------------------------------------

    def next_stamp(self) -> int:
        return next(self._stamps)

    def set_expression(self, expression_id: Optional[str]) -> None:
        """The statement that runs from now on (None: none): its output
        and displays are attributed to it (PROTOCOL.md 7.2, 7.3)."""
        finished, self.expression = self.expression, expression_id
        self.kernel.set_expression(expression_id)
        guard = effects.GUARD
        if expression_id is not None:
            guard.reads = []  # the files it opens for reading, from here on
            self.collector.start(expression_id)
            return
        paths, guard.reads = guard.reads, None
        items = self.collector.take()
        frame = self.frame
        if finished is None or frame is None or paths is None:
            return
        entry = frame.cache.get(finished)
        if entry is not None:
            reads.record(frame, finished, entry.stamp, reads.snapshot(paths) if paths else ())
            keptoutput.record(frame, finished, entry.stamp, items)
        if self.frame_journalled and self.journal is not None:
            self.journal.finished(frame, self._journal_runner)

    def display(self, *objs: object, mimes: Optional[Sequence[str]] = None) -> None:
        """executionContext/displayData of each object, attributed to the
        running statement, in order with its output (7.2)."""
        for obj in objs:
            self.display_bundle(values.mime_bundle(obj, mimes))

    def display_bundle(self, bundle: Dict[str, object]) -> None:
        """displayData of a ready mime bundle."""
        data, error = values.encode_visualization(bundle, values.DISPLAY_LIMIT)
        if error is not None:
            raise ValueError("display: " + error)
        self.kernel.flush_output()
        self.collector.display(self.expression, data, keptoutput.size_of(data))
        self.kernel.emit_progress({"type": "displayData", "expressionId": self.expression, "data": data})

    def defer_teardown(self, stage: str, fn: Callable[[], object]) -> None:
        """Run fn after the finalize run in flight; outside one (the
        server), nothing runs it."""
        if self.teardowns is not None:
            self.teardowns.append((stage, fn))

    def _source_for_filename(self, filename: str) -> Optional[Source]:
        return self.modules.source_for_filename(filename)

    # -- methods --------------------------------------------------------------------

    def compile(self, params: object) -> WireObject:
        req = compile_request(params)
        return self.modules.compile(req.modules, req.removed, req.scripts, req.load, req.faulty, req.timeout, req.lazy)

    def drop_context(self, params: object) -> WireObject:
        self._drop(drops(params_object(params, "dropContext params").get("contexts"), "dropContext: contexts"))
        return {}

    def _drop(self, dropped: Sequence[Drop]) -> None:
        for context_id, generation in dropped:
            ctx = self.contexts.get(context_id)
            if ctx is not None and (generation is None or ctx.generation == generation):
                del self.contexts[context_id]
                self.reported_reads.pop(context_id, None)

    def status(self, params: object = None) -> WireObject:
        return {"modules": self.modules.status(), "contexts": sorted(self.contexts)}

    def execute(self, params: object) -> WireObject:
        req = execute_request(params)
        if not req.finalize:
            return self._execute(req)
        # A batch run: the tear-downs registered in self.teardowns during it
        # run after it, the last registered first, all of them; one that
        # raises fails the run.
        self.teardowns = []
        try:
            result = self._execute(req)
        except BaseException:
            self.teardowns = None  # interrupted: tearing down could hang as the test did
            raise
        todo, self.teardowns = self.teardowns, None
        failed = self._tear_down(todo)
        if failed is None:
            return result
        stage, exc = failed
        message = "%s raised %s" % (stage, values.exception_message(exc))
        if result.get("status") == "failed":
            return result  # the run's own failure comes first
        return Failure("failure", message, self.diagnostics.for_exception(exc, message=message)).result()

    def _tear_down(self, todo: List[Teardown]) -> Optional[Tuple[str, BaseException]]:
        """Run every tear-down, the last registered first; the first failure."""
        failed = None
        with self.kernel.user_code():
            while todo:
                stage, fn = todo.pop()
                try:
                    fn()
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:
                    failed = failed or (stage, exc)
        return failed

    def _context(self, req: ExecuteRequest) -> Tuple[Context, List[ItemKey]]:
        """The request's context, its frames kept as far as the stack's
        items are the same, the top frame's cache invalidated as asked;
        and the keys of the stack's items."""
        # Contexts destroyed since the last request ride along with the next
        # run on this kernel instead of costing a round trip of their own.
        self._drop(req.drops)
        ctx = self.contexts.get(req.context_id)
        if ctx is None or ctx.generation != req.generation:
            ctx = self.contexts[req.context_id] = Context(req.context_id, req.generation)
        keys = [item_key(item) for item in req.stack]
        keep = 0
        while keep < len(ctx.frames) and keep < len(keys) and ctx.frames[keep].item_key == keys[keep]:
            keep += 1
        del ctx.frames[keep:]
        # Invalidation first, before any user code can be interrupted, so an
        # interrupt never loses it.
        if len(ctx.frames) == len(req.stack):
            top = ctx.frames[-1]
            if req.invalidate == "all":
                top.cache.clear()
            elif req.invalidate:
                for expression_id in req.invalidate:
                    top.cache.pop(expression_id, None)
        # A value whose files changed on disk is not used (reads.py): it
        # runs again, and its dependents with it.
        for frame in ctx.frames:
            for expression_id in reads.stale(frame):
                frame.cache.pop(expression_id, None)
        return ctx, keys

    def _execute(self, req: ExecuteRequest) -> WireObject:
        ctx, keys = self._context(req)
        wanted = None
        if req.wanted is not None:
            wanted = set(req.wanted)
            for vis in req.visualizations:
                if vis.get("apply") or vis.get("oneshot"):
                    wanted.add(vis["expressionId"])
        runner = Runner(self, self.kernel.emit_progress, req.stop_at_skip, req.run_once, req.hold)
        journalled = self.journal is not None and not req.run_once
        restored: Dict[str, int] = {}  # id -> stamp of the top frame's entries the journal restored
        if journalled:
            assert self.journal is not None
            self.journal.run_started()
        try:
            for depth, item in enumerate(req.stack):
                if depth == len(ctx.frames):
                    ctx.frames.append(Frame(keys[depth]))
                frame = ctx.frames[depth]
                frame.item = item
                top = depth == len(req.stack) - 1
                if item["type"] == "ExplicitCall":
                    rec, qualname = self.calls.enter_explicit(frame, item)
                else:
                    rec, qualname = self.calls.enter_local(ctx.frames[depth - 1], frame, item)
                if depth == 0 and journalled and not frame.journal_checked:
                    # A frame new to this kernel: its cache from the journal;
                    # a recompute's ids are left out.
                    assert self.journal is not None
                    plan = runner.plan_for(frame, rec, qualname)
                    try:
                        self.journal.restore(runner, frame, plan, req.invalidate if top else None)
                    except BaseException:
                        # Interrupted (a restore imports modules: user code):
                        # the next run asks the journal again, from nothing.
                        frame.cache.clear()
                        frame.mutlog.clear()
                        raise
                    frame.journal_checked = True
                    if top:
                        restored = {k: e.stamp for k, e in frame.cache.items()}
                self.frame, self.frame_journalled = frame, depth == 0 and journalled
                runner.run(frame, depth, rec, qualname, top, wanted if top else None,
                           req.visualizations if top else None)
        except Failure as failure:
            return failure.result()
        finally:
            self.frame, self.frame_journalled = None, False
            if journalled and ctx.frames and ctx.frames[0].last_rerun:
                assert self.journal is not None
                self.journal.changed(ctx.frames[0])
            if restored:
                self._replay(ctx.frames[-1], restored)
            self._report_reads(ctx)
        return {"status": "complete"}

    def _replay(self, frame: Frame, restored: Dict[str, int]) -> None:
        """Send the kept output of the statements the journal restored in
        this request and the run did not run again, in statement order, as
        one "replay" event (PROTOCOL.md 8.3): the clients did not see it."""
        plan = frame.plan
        if plan is None:
            return
        out: List[WireObject] = []
        for ps in plan.stmts:
            stamp = restored.get(ps.id)
            e = frame.cache.get(ps.id)
            if stamp is None or e is None or e.stamp != stamp:
                continue
            for kind, value in keptoutput.of(frame, ps.id, stamp):
                if kind == "display":
                    out.append({"expressionId": ps.id, "data": value})
                else:
                    out.append({"expressionId": ps.id, "stream": kind, "text": value})
        if out:
            self.kernel.emit_progress({"type": "replay", "items": out})

    def _report_reads(self, ctx: Context) -> None:
        """Tell the Go side which files the context's cached values read,
        when that changed (a "reads" progress event): a change of one of
        them on disk runs the context again (kernel/PROTOCOL.md)."""
        files = sorted({p for frame in ctx.frames for p in reads.paths(frame)})
        if self.reported_reads.get(ctx.id, []) == files:
            return
        self.reported_reads[ctx.id] = files
        self.kernel.emit_progress({"type": "reads", "paths": files})


def _no_log(*args: object) -> None:
    pass
