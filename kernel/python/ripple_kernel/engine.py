"""ripple's Python execution engine: the Engine methods of kernel/PROTOCOL.md.

server.py loads this file by path and calls ``register(kernel)``, which
returns ``{method: handler(params) -> JSON result}`` for ``compile``,
``execute``, ``dropContext`` and ``status``. ``kernel`` provides ``root``,
``user_code()`` (the only place a KeyboardInterrupt may be raised),
``emit_progress(obj)`` and ``flush_output()``.

The engine is split into sibling files loaded from this file's directory
(never through sys.path), in dependency order:

- engine_text.py: parsed module sources, code-point positions, incremental
  re-parsing;
- engine_analysis.py: what each statement uses, defines and mutates; labels;
  compiling statements so they report their values;
- engine_values.py: previews, type names, messages, diagnostics,
  visualization JSON;
- engine_modules.py: project modules, the import finder, reloads, global
  versions;
- engine_run.py: frames, caches and runs; the caching invariant is written
  down there;
- engine_journal.py: the value journal (issue 16), frames' caches kept on
  disk for a kernel that starts after a restart or a crash.

State: one Engine per kernel process; contexts by id, each a stack of
Frames. Everything runs on the kernel's main thread, one request at a time,
so nothing here is locked.
"""

import itertools
import os
import re
import sys
import types

_HERE = os.path.dirname(os.path.abspath(__file__))
# The install directory (the package's parent): tracebacks hide its files.
_KERNEL_DIR = os.path.dirname(_HERE)

from . import analysis, journal, modules, run, text, values  # noqa: E402

Failure = run.Failure
_POINTER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*):([A-Za-z_][A-Za-z0-9_.]*)\s*$")


# The Engine register made: detach takes it out of the kernel.
_ENGINE = None


def detach():
    """Take the engine out of this kernel for good, so that it is a plain
    interpreter: the kernel method "pytest" calls it first (ripple run
    --tests), because under pytest nothing of ripple may be seen. Project
    modules then import through Python's own machinery (the engine's
    loader serves its text, which breaks importlib.resources, __loader__
    and __cached__ as pytest has them), ``import ripple`` fails unless a
    ``ripple`` is installed, and MPLBACKEND is as the user's environment
    has it (the engine's backend closes figures on plt.show())."""
    global _ENGINE
    engine, _ENGINE = _ENGINE, None
    if engine is not None:
        engine.close()


def register(kernel):
    """The engine's request handlers, bound to a new Engine for kernel."""
    global _ENGINE
    engine = Engine(kernel)
    _ENGINE = engine
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


class Context:
    """An execution context: its stack of frames (bottom first).

    generation tells apart the contexts the Go side created under one id
    (a context destroyed and created again): a run of another generation
    starts from an empty cache, and a drop of another generation leaves the
    context alone, whatever order the two requests come in."""

    def __init__(self, context_id, generation):
        self.id = context_id
        self.generation = generation
        self.frames = []


class Engine:
    def __init__(self, kernel):
        self.kernel = kernel
        self.root = os.path.realpath(kernel.root)
        self.analyzer = analysis.Analyzer()
        self.teardowns = None  # tear-downs of the finalize run in flight (execute)
        self.diagnostics = values.Diagnostics(self.root, self._source_for_filename, _KERNEL_DIR)
        self.modules = modules.ModuleTable(self.root, kernel, self.analyzer, self.diagnostics)
        self.contexts = {}  # contextId -> Context
        self._stamps = itertools.count(1)
        self.expression = None  # the statement running now (set_expression)
        # The value journal, when the server gave it a file (RIPPLE_VALUES_DB).
        self.journal = journal.from_env(getattr(kernel, "log", None) or _no_log)
        self._mplbackend = _install_display(self)

    def handlers(self):
        return {
            "compile": self.compile,
            "execute": self.execute,
            "dropContext": self.drop_context,
            "status": self.status,
        }

    def close(self):
        """Forget all state and remove the import finder (tests, shutdown)."""
        self.contexts.clear()
        if self.journal is not None:
            self.journal.close()
        self.modules.close()
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ not in ("_DisplayFinder", "_IPythonHook")]
        if self._mplbackend is not None and os.environ.get("MPLBACKEND") == self._mplbackend:
            del os.environ["MPLBACKEND"]

    # -- the value journal (engine_journal) --------------------------------------

    def journal_pending(self):
        return bool(self.journal is not None and self.journal.pending)

    def journal_idle(self, arrived=None):
        """Write one frame of the journal (the kernel is idle; arrived()
        says a request came: the write is left for later)."""
        return self.journal.idle(self._journal_runner, arrived)

    def journal_flush(self):
        """Write everything now (tests, a kernel stopped on purpose)."""
        if self.journal is None:
            return
        while self.journal_pending():
            self.journal_idle()
        self.journal.flush()

    def _journal_runner(self):
        return run.Runner(self, _no_log)

    def next_stamp(self):
        return next(self._stamps)

    def set_expression(self, expression_id):
        """The statement that runs from now on (None: none): its output
        and displays are attributed to it (PROTOCOL.md 7.2, 7.3)."""
        self.expression = expression_id
        self.kernel.set_expression(expression_id)

    def display(self, *objs, mimes=None):
        """executionContext/displayData of each object, attributed to the
        running statement, in order with its output (7.2)."""
        for obj in objs:
            self.display_bundle(values.mime_bundle(obj, mimes))

    def display_bundle(self, bundle):
        """displayData of a ready mime bundle."""
        data, error = values.encode_visualization(bundle, values.DISPLAY_LIMIT)
        if error is not None:
            raise ValueError("display: " + error)
        self.kernel.flush_output()
        self.kernel.emit_progress({"type": "displayData", "expressionId": self.expression, "data": data})

    def _source_for_filename(self, filename):
        return self.modules.source_for_filename(filename)

    # -- methods --------------------------------------------------------------------

    def compile(self, params):
        params = _object(params, "compile params")
        mods = params.get("modules") or []
        removed = params.get("removed") or []
        if not isinstance(mods, list):
            raise ValueError("compile: modules must be a list")
        if not isinstance(removed, list):
            raise ValueError("compile: removed must be a list of module names")
        load = params.get("load") or []
        faulty = params.get("faulty") or {}
        timeout = params.get("timeout") or 0
        if not isinstance(load, list) or not all(isinstance(m, str) for m in load):
            raise ValueError("compile: load must be a list of module names")
        if not isinstance(faulty, dict):
            raise ValueError("compile: faulty must be an object {module: diagnostic}")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError("compile: timeout must be a number of seconds >= 0")
        return self.modules.compile(mods, removed, params.get("scripts"), load, faulty, timeout, bool(params.get("lazy")))

    def drop_context(self, params):
        params = _object(params, "dropContext params")
        self._drop(_drops(params.get("contexts"), "dropContext: contexts"))
        return {}

    def _drop(self, drops):
        for context_id, generation in drops:
            ctx = self.contexts.get(context_id)
            if ctx is not None and (generation is None or ctx.generation == generation):
                del self.contexts[context_id]

    def status(self, params=None):
        return {"modules": self.modules.status(), "contexts": sorted(self.contexts)}

    def execute(self, params):
        context_id, generation, drops, stack, invalidate, wanted, visualizations, stop_at_skip, finalize, run_once = _execute_params(params)
        batch = (stop_at_skip, run_once)
        if not finalize:
            return self._execute(context_id, generation, drops, stack, invalidate, wanted, visualizations, batch)
        # A batch run: the tear-downs registered in self.teardowns during it
        # run after it, the last registered first, all of them; one that
        # raises fails the run.
        self.teardowns = []
        try:
            result = self._execute(context_id, generation, drops, stack, invalidate, wanted, visualizations, batch)
        except BaseException:
            self.teardowns = None  # interrupted: tearing down could hang as the test did
            raise
        todo, self.teardowns = self.teardowns, None
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
        if failed is None:
            return result
        stage, exc = failed
        message = "%s raised %s" % (stage, values.exception_message(exc))
        if result.get("status") == "failed":
            return result  # the run's own failure comes first
        return Failure("failure", message, self.diagnostics.for_exception(exc, message=message)).result()

    def defer_teardown(self, stage, fn):
        """Run fn after the finalize run in flight (engine_testing); outside
        one (the server), nothing runs it."""
        if self.teardowns is not None:
            self.teardowns.append((stage, fn))

    def _execute(self, context_id, generation, drops, stack, invalidate, wanted, visualizations, batch):
        # Contexts destroyed since the last request ride along with the next
        # run on this kernel instead of costing a round trip of their own.
        self._drop(drops)
        ctx = self.contexts.get(context_id)
        if ctx is None or ctx.generation != generation:
            ctx = self.contexts[context_id] = Context(context_id, generation)
        keys = [_item_key(item) for item in stack]
        keep = 0
        while keep < len(ctx.frames) and keep < len(keys) and ctx.frames[keep].item_key == keys[keep]:
            keep += 1
        del ctx.frames[keep:]
        # Invalidation first, before any user code can be interrupted, so an
        # interrupt never loses it.
        if len(ctx.frames) == len(stack):
            top = ctx.frames[-1]
            if invalidate == "all":
                top.cache.clear()
            elif invalidate:
                for expression_id in invalidate:
                    top.cache.pop(expression_id, None)
        if wanted is not None:
            wanted = set(wanted)
            for vis in visualizations:
                if vis.get("apply") or vis.get("oneshot"):
                    wanted.add(vis["expressionId"])
        runner = run.Runner(self, self.kernel.emit_progress, *batch)
        journalled = self.journal is not None and not batch[1]
        try:
            for depth, item in enumerate(stack):
                if depth == len(ctx.frames):
                    ctx.frames.append(run.Frame(keys[depth]))
                frame = ctx.frames[depth]
                frame.item = item
                top = depth == len(stack) - 1
                if item["type"] == "ExplicitCall":
                    rec, qualname = self._enter_explicit(frame, item)
                else:
                    rec, qualname = self._enter_local(ctx, depth, frame, item)
                if depth == 0 and journalled and not frame.journal_checked:
                    # A frame new to this kernel: its cache from the journal
                    # (engine_journal); a recompute's ids are left out.
                    frame.journal_checked = True
                    plan = runner.plan_for(frame, rec, qualname)
                    self.journal.restore(runner, frame, plan, invalidate if top else None)
                runner.run(
                    frame,
                    depth,
                    rec,
                    qualname,
                    top,
                    wanted if top else None,
                    visualizations if top else None,
                )
        except Failure as failure:
            return failure.result()
        finally:
            if journalled and ctx.frames and ctx.frames[0].last_rerun:
                self.journal.changed(ctx.frames[0])
        return {"status": "complete"}

    # -- stack items ----------------------------------------------------------------

    def _module(self, name):
        rec = self.modules.ensure(name)
        if rec is None:
            raise Failure("failure", "module %s is not a module of the project" % name)
        if rec.state != modules.OK:
            diag = rec.diagnostic
            message = "module %s failed to compile" % name
            if diag is not None:
                message += ": " + diag.get("message", "")
            raise Failure("compileError", message, diag)
        return rec

    def _enter_explicit(self, frame, item):
        module = item["module"]
        owner = item.get("definedOnType") or ""
        name = item["name"]
        qualname = owner + "." + name if owner else name
        if qualname == run.SCRIPT:
            return self._enter_script(frame, item), qualname
        rec = self._module(module)
        pointer = (module, qualname)
        if frame.pointer != pointer:
            frame.reset(pointer)
        key = self._arguments_key(rec, item, qualname)
        if frame.args_key != key:
            self._evaluate_arguments(frame, rec, item, qualname, key)
        # An inherited method runs the code of the class that defines it.
        return rec, frame.code_qualname or qualname

    def _enter_script(self, frame, item):
        """The bottom frame module:__main__ (PROTOCOL.md 7.1): the module's
        top level run as a script, in a namespace of its own."""
        module = item["module"]
        if item.get("positionalArgumentsExpressions") or item.get("thisArgumentExpression") is not None:
            raise Failure("failure", "%s:__main__ runs the module as a script: it takes no arguments" % module)
        rec = self.modules.script(module)
        if rec is None:
            raise Failure("failure", "module %s is not a module of the project" % module)
        if rec.state == modules.BROKEN:
            diag = rec.diagnostic
            message = "module %s failed to compile" % module
            if diag is not None:
                message += ": " + diag.get("message", "")
            raise Failure("compileError", message, diag)
        pointer = (module, run.SCRIPT)
        if frame.pointer != pointer:
            frame.reset(pointer)
        frame.script_globals = True
        return rec

    def _arguments_key(self, rec, item, qualname):
        sources = tuple(item.get("positionalArgumentsExpressions") or ())
        this = item.get("thisArgumentExpression")
        names = set()
        for src in sources + ((this,) if this is not None else ()):
            try:
                tree = analysis.ast.parse(src.strip(), "<argument>", "eval")
                names |= analysis.analyze(analysis.ast.Expr(value=tree.body)).uses
            except SyntaxError:
                pass
        head = qualname.split(".")[0]
        signature = None
        func = run.find_function(rec.source, qualname) if "." not in qualname and rec.source is not None else None
        if func is None:
            names.add(head)  # a method: its class (and the class cell super() needs) changes with it
        else:
            # A plain function: its arguments depend on its signature
            # (defaults, decorators), not on its body, so an edit of the
            # body keeps them and their stamp: a statement that reads a
            # parameter does not run again for an edit of another (issue 13).
            signature = analysis.node_key(func.args) + "".join(analysis.node_key(d) for d in func.decorator_list)
            for expr in list(func.args.defaults) + [d for d in func.args.kw_defaults if d is not None] + list(func.decorator_list):
                names |= analysis.analyze(analysis.ast.Expr(value=expr)).uses
        versions = tuple((n, self.modules.global_version(rec.name, n)) for n in sorted(names))
        return (qualname, sources, this, versions, signature)

    def refresh_arguments(self, frame, rec):
        """New argument objects for an ExplicitCall frame (a chain reached a parameter)."""
        item = getattr(frame, "item", None)
        if item is None or item.get("type") != "ExplicitCall" or frame.args_key is None:
            return False
        self._evaluate_arguments(frame, rec, item, frame.pointer[1], frame.args_key)
        return True

    def _evaluate_arguments(self, frame, rec, item, qualname, key):
        module = rec.module
        pointer = "%s:%s" % (rec.name, qualname)
        parts = qualname.split(".")
        owner = module
        for part in parts[:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                raise Failure("failure", "function %s not found: %s has no %s" % (pointer, rec.name, ".".join(parts[:-1])))
        this_src = item.get("thisArgumentExpression")
        if len(parts) > 1:
            import inspect  # not at module level: see _unwrap

            try:
                raw = inspect.getattr_static(owner, parts[-1])
            except AttributeError:
                raise Failure("failure", "function %s not found in module %s" % (pointer, rec.name))
        else:
            raw = module.__dict__.get(parts[-1])
            if raw is None:
                raise Failure("failure", "function %s not found in module %s" % (pointer, rec.name))
        kind = "function"
        if isinstance(raw, staticmethod):
            func = raw.__func__
        elif isinstance(raw, classmethod):
            func = raw.__func__
            kind = "classmethod"
        else:
            func = raw
            if len(parts) > 1:
                kind = "method"
        func = _unwrap(func)
        if not isinstance(func, types.FunctionType):
            raise Failure("failure", "%s is not a function (it is a %s)" % (pointer, type(func).__name__))
        if kind == "method" and this_src is None:
            raise Failure("failure", "method %s needs a thisArgumentExpression for its self" % pointer)
        sources = list(item.get("positionalArgumentsExpressions") or ())
        lead = []
        globals_ = module.__dict__
        with self.kernel.user_code():
            if this_src is not None and kind != "function":
                this = _evaluate_argument(this_src, globals_, "the thisArgumentExpression", pointer, self.diagnostics)
                if kind == "classmethod" and not isinstance(this, type):
                    this = type(this)
                lead.append(this)
            elif kind == "classmethod":
                lead.append(owner)
            args = [
                _evaluate_argument(src, globals_, "argument %d" % (i + 1), pointer, self.diagnostics)
                for i, src in enumerate(sources)
            ]
        try:
            params = run.bind_arguments(func, lead + args, {})
        except TypeError as exc:
            raise Failure(
                "failure", "cannot call %s with %d argument(s): %s" % (pointer, len(args), exc)
            )
        frame.params = params
        frame.param_stamp = self.next_stamp()
        frame.args_key = key
        frame.args_fresh = True
        frame.func_class, frame.self_name = run.class_cell(func)
        own = getattr(func, "__qualname__", qualname)
        same_module = getattr(func, "__module__", None) == getattr(module, "__name__", rec.name)
        frame.code_qualname = own if own != qualname and same_module and "<locals>" not in own else None

    def _enter_local(self, ctx, depth, frame, item):
        caller = ctx.frames[depth - 1]
        expression_id = item["expressionId"]
        plan = caller.plan
        if plan is None or expression_id not in plan.by_id:
            where = "%s:%s" % (plan.module, plan.qualname) if plan is not None else "the caller"
            raise Failure("failure", "expression %s is not a statement of %s" % (expression_id, where))
        panic = None
        for index, p in caller.panicked.items():
            if plan.stmts[index].id == expression_id:
                panic = p
        if panic is not None:
            raise Failure("failure", "cannot enter %s: it raised %s" % (expression_id, panic[0]))
        if expression_id not in caller.reached:
            raise Failure("failure", "cannot enter %s: it was not reached in this run" % expression_id)
        entry = caller.cache.get(expression_id)
        if entry is None or entry.call is None:
            raise Failure("failure", "cannot enter %s: it is not a direct call of a project function" % expression_id)
        callee, args, kwargs = entry.call
        func, lead = _callee_function(callee)
        module = self.modules.module_of_object(func)
        script = None if module is not None else self.modules.is_script_code(func)
        if module is None and script is None:
            raise Failure("failure", "cannot enter %s: its callee is not a project function" % expression_id)
        rec = self._module(module) if script is None else self.modules.records[script]
        module = module or script
        qualname = func.__qualname__
        pointer = (module, qualname)
        if frame.pointer != pointer:
            frame.reset(pointer)
        # A function a script defined reads the script's namespace, not
        # the module's (which is not even imported).
        frame.script_globals = func.__globals__ if script is not None else None
        frame.func_class, frame.self_name = run.class_cell(func)
        if frame.param_stamp != entry.stamp:
            try:
                frame.params = run.bind_arguments(func, lead + list(args), kwargs)
            except TypeError as exc:
                raise Failure("failure", "cannot enter %s: %s" % (expression_id, exc))
            frame.param_stamp = entry.stamp
        return rec, qualname

    # -- helpers for the runner -------------------------------------------------------

    def method_pointer(self, callee):
        """MethodPointer of callee if it is a project function, else None."""
        try:
            func, _ = _callee_function(callee)
        except Exception:
            return None
        if not isinstance(func, types.FunctionType):
            return None
        module = self.modules.module_of_object(func)
        qualname = getattr(func, "__qualname__", "")
        namespace = None
        if module is None:
            # A function a script defined: looked up in the script's namespace.
            module = self.modules.is_script_code(func)
            namespace = func.__globals__
        if module is None or "<locals>" in qualname:
            return None
        if namespace is None:
            rec = self.modules.records.get(module)
            namespace = rec.module.__dict__ if rec is not None and rec.module is not None else {}
        parts = qualname.split(".")
        obj = namespace.get(parts[0])
        for part in parts[1:]:
            if obj is None:
                return None
            obj = getattr(obj, part, None)
        if obj is None:
            return None
        if _unwrap(getattr(obj, "__func__", obj)) is not func:
            return None
        owner, _, name = qualname.rpartition(".")
        return {"module": module, "definedOnType": owner, "name": name}

    def visualization_callable(self, expression, module_dict):
        """The callable a visualization expression names (raises on failure)."""
        if not isinstance(expression, str):
            raise TypeError("visualization expression must be a string")
        match = _POINTER.match(expression)
        if match:
            module_name, qualname = match.group(1), match.group(2)
            rec = self.modules.ensure(module_name)
            if rec is None or rec.state != modules.OK:
                raise ImportError("visualization module %s is not a loadable project module" % module_name)
            obj = rec.module
            for part in qualname.split("."):
                obj = getattr(obj, part)
        else:
            obj = eval(analysis.compile_expression(expression, "<visualization>"), module_dict)
        if not callable(obj):
            raise TypeError("visualization expression %r is not callable" % expression)
        return obj


# -- display: ripple.display, IPython.display.display, matplotlib's backend ----


_BACKEND = "_ripple_mpl_backend"


class _DisplayFinder:
    """Serves the module ``ripple`` (``ripple.display(obj)``) when nothing
    else on sys.path does (it is last on sys.meta_path: a project's or an
    installed ``ripple`` wins), and ripple's matplotlib backend (the
    kernels' MPLBACKEND, as Jupyter's inline backend: ``plt.show()``
    displays every open figure and closes it). The backend's file is loaded
    only when matplotlib asks for it."""

    def __init__(self, engine):
        self.engine = engine

    def find_spec(self, fullname, path=None, target=None):
        import importlib.util

        if fullname == "ripple":
            return importlib.util.spec_from_loader("ripple", self)
        if fullname == _BACKEND:
            return importlib.util.spec_from_file_location(_BACKEND, os.path.join(_HERE, "mpl_backend.py"))
        return None

    def invalidate_caches(self):
        pass

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        engine = self.engine

        def display(*objs):
            """Show each object under the running statement (its mime bundle)."""
            engine.display(*objs)

        module.display = display
        module.__doc__ = "ripple's helpers for code running in a ripple kernel."


def _install_display(engine):
    """Install the display finders; answer the MPLBACKEND value it set (None
    when the user's environment has one), which close takes back."""
    for finder in list(sys.meta_path):
        if isinstance(finder, _DisplayFinder) or type(finder).__name__ == "_DisplayFinder":
            sys.meta_path.remove(finder)
    sys.meta_path.append(_DisplayFinder(engine))
    for finder in list(sys.meta_path):
        if type(finder).__name__ == "_IPythonHook":
            sys.meta_path.remove(finder)
    sys.meta_path.insert(0, _IPythonHook(engine))
    sys.modules.pop("ripple", None)
    if "MPLBACKEND" in os.environ:
        return None  # the user's choice
    os.environ["MPLBACKEND"] = "module://" + _BACKEND
    return os.environ["MPLBACKEND"]


_IPYTHON_DISPLAY = "IPython.core.display_functions"


class _IPythonHook:
    """When user code imports IPython (if installed), its display() is
    made to show objects under the running statement, as in a notebook
    (IPython's own, without an initialised shell, prints their repr). The
    module is patched right after it runs, before IPython.display and
    IPython.core.display import the function from it."""

    def __init__(self, engine):
        self.engine = engine

    def find_spec(self, fullname, path=None, target=None):
        if fullname != _IPYTHON_DISPLAY:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _PatchingLoader(spec.loader, self.engine)
        return spec

    def invalidate_caches(self):
        pass


class _PatchingLoader:
    def __init__(self, loader, engine):
        self.loader = loader
        self.engine = engine

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        original = module.display
        engine = self.engine

        def display(*objs, include=None, exclude=None, metadata=None, transient=None, display_id=None, raw=False,
                    clear=False, **kwargs):
            from IPython.core.interactiveshell import InteractiveShell

            if InteractiveShell.initialized():
                return original(*objs, include=include, exclude=exclude, metadata=metadata, transient=transient,
                                display_id=display_id, raw=raw, clear=clear, **kwargs)
            if raw:
                for bundle in objs:
                    engine.display_bundle(dict(bundle))
                return None
            engine.display(*objs)
            return None

        display.__doc__ = original.__doc__
        display.__wrapped__ = original
        module.display = display

    def __getattr__(self, name):
        return getattr(self.loader, name)


def _no_log(*args):
    pass


def _unwrap(func):
    """inspect.unwrap without importing inspect, which costs every kernel
    start ~5 ms for the few calls that need it (methods, signatures)."""
    original, seen = func, {id(func)}
    try:
        while hasattr(func, "__wrapped__"):
            func = func.__wrapped__
            if id(func) in seen or len(seen) > 1000:
                return original  # a cycle: inspect.unwrap raises
            seen.add(id(func))
    except Exception:
        return original
    return func


def _callee_function(callee):
    """(function, leading args) of a captured callee (bound methods bind self)."""
    if isinstance(callee, types.MethodType):
        return _unwrap(callee.__func__), [callee.__self__]
    return _unwrap(callee), []


def _evaluate_argument(src, globals_, what, pointer, diagnostics):
    try:
        code = analysis.compile_expression(src, "<argument>")
        return eval(code, globals_)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        message = "%s of %s (%r) raised %s" % (what, pointer, src, values.exception_message(exc))
        # The traceback shows where, in the code the expression called.
        raise Failure("failure", message, diagnostics.for_exception(exc, message=message))


def _object(params, what):
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ValueError("%s must be an object, got %s" % (what, type(params).__name__))
    return params


def _item_key(item):
    if item["type"] == "ExplicitCall":
        return ("ExplicitCall", item["module"], item.get("definedOnType") or "", item["name"])
    return ("LocalCall", item["expressionId"])


def _drops(drops, field):
    """[(contextId, generation or None)] of a list of contexts to drop;
    field names it in errors ("dropContext: contexts", "execute: drop")."""
    if drops is None:
        return ()
    if not isinstance(drops, list):
        raise ValueError("%s must be a list of {contextId, generation}" % field)
    out = []
    for i, d in enumerate(drops):
        if not isinstance(d, dict) or not isinstance(d.get("contextId"), str):
            raise ValueError("%s[%d] must be an object with a string contextId" % (field, i))
        generation = d.get("generation")
        if generation is not None and (type(generation) is not int):
            raise ValueError("%s[%d].generation must be an integer" % (field, i))
        out.append((d["contextId"], generation))
    return out


def _execute_params(params):
    params = _object(params, "execute params")
    context_id = params.get("contextId")
    if not isinstance(context_id, str) or not context_id:
        raise ValueError("execute: contextId must be a non-empty string")
    generation = params.get("generation", 0)
    if type(generation) is not int:
        raise ValueError("execute: generation must be an integer")
    drops = _drops(params.get("drop"), "execute: drop")
    stack = params.get("stack")
    if not isinstance(stack, list) or not stack:
        raise ValueError("execute: stack must be a non-empty list of stack items")
    for depth, item in enumerate(stack):
        if not isinstance(item, dict):
            raise ValueError("execute: stack item %d must be an object" % depth)
        kind = item.get("type")
        if kind == "ExplicitCall":
            if depth != 0:
                raise ValueError("execute: stack item %d: ExplicitCall is only allowed at the bottom" % depth)
            for field in ("module", "name"):
                if not isinstance(item.get(field), str) or not item.get(field):
                    raise ValueError("execute: stack item %d: ExplicitCall needs a string %s" % (depth, field))
            if item.get("definedOnType") is not None and not isinstance(item.get("definedOnType"), str):
                raise ValueError("execute: stack item %d: definedOnType must be a string" % depth)
            args = item.get("positionalArgumentsExpressions") or []
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                raise ValueError("execute: stack item %d: positionalArgumentsExpressions must be a list of strings" % depth)
            this = item.get("thisArgumentExpression")
            if this is not None and not isinstance(this, str):
                raise ValueError("execute: stack item %d: thisArgumentExpression must be a string" % depth)
        elif kind == "LocalCall":
            if depth == 0:
                raise ValueError("execute: stack item 0 must be an ExplicitCall, not a LocalCall")
            if not isinstance(item.get("expressionId"), str):
                raise ValueError("execute: stack item %d: LocalCall needs a string expressionId" % depth)
        else:
            raise ValueError("execute: stack item %d has unknown type %r" % (depth, kind))
    invalidate = params.get("invalidate")
    if invalidate is not None and invalidate != "all":
        if not isinstance(invalidate, list) or not all(isinstance(i, str) for i in invalidate):
            raise ValueError('execute: invalidate must be null, "all" or a list of expression ids')
    wanted = params.get("wanted")
    if wanted is not None and (not isinstance(wanted, list) or not all(isinstance(i, str) for i in wanted)):
        raise ValueError("execute: wanted must be null or a list of expression ids")
    visualizations = params.get("visualizations") or []
    if not isinstance(visualizations, list):
        raise ValueError("execute: visualizations must be a list")
    for i, vis in enumerate(visualizations):
        if not isinstance(vis, dict):
            raise ValueError("execute: visualization %d must be an object" % i)
        for field in ("visualizationId", "expressionId", "expression"):
            if not isinstance(vis.get(field), str):
                raise ValueError("execute: visualization %d needs a string %s" % (i, field))
        args = vis.get("positionalArgumentsExpressions") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("execute: visualization %s: positionalArgumentsExpressions must be a list of strings" % vis["visualizationId"])
    stop_at_skip = params.get("stopAtSkip", False)
    if type(stop_at_skip) is not bool:
        raise ValueError("execute: stopAtSkip must be a boolean")
    finalize = params.get("finalize", False)
    if type(finalize) is not bool:
        raise ValueError("execute: finalize must be a boolean")
    run_once = params.get("runOnce", False)
    if type(run_once) is not bool:
        raise ValueError("execute: runOnce must be a boolean")
    return context_id, generation, drops, stack, invalidate, wanted, visualizations, stop_at_skip, finalize, run_once
