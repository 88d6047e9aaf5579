"""Project modules: sources, loading, the import graph and global versions.

ModuleTable owns every project module of the kernel (PROTOCOL.md 5.1):

- Sources come from ``compile`` requests; a module never sent is read from
  its file under the root (``pkg/mod.py`` or ``pkg/__init__.py``). A
  meta-path finder placed first in ``sys.meta_path`` serves project modules
  from that table, so ``import pkg.mod``, ``from pkg import mod`` and relative
  imports all load the table's text.
- Every load goes through ``ProjectLoader.exec_module``: it parses (reusing
  the previous tree where an edit allows), registers the text with linecache
  so tracebacks show the running text, runs the top-level code inside
  ``kernel.user_code()`` and records the outcome: ``ok`` or ``broken`` with a
  Diagnostic. A broken module is not served (importing it raises
  ImportError naming it) until a compile fixes it. A load cut short by an
  interrupt leaves the module ``stale``: it is loaded again when next needed.
- The import graph is static (the ``ast`` of each module's imports, inside
  functions too). A compile reloads the given modules and every project
  module that imports one of them, transitively, in dependency order, each
  into a fresh module object: all of them are removed from ``sys.modules``
  before the first is loaded again, so no stale object survives.
- Global versions (``versions(name)``): for each module-level name a hash of
  the normalised source of the statements binding it plus the versions of
  the module globals those statements read, across modules through imports;
  cycles are hashed as one strongly connected component. Non-project modules
  and builtins never change. A frame statement reading global g is re-run iff
  g's version changed.

Concurrency: none; the kernel serves one request at a time and every method
here runs on the main thread.
"""

import ast
import builtins
import copy
import importlib
import importlib.util
import itertools
import linecache
import os
import re
import signal
import sys
import types
import weakref

try:
    from _blake2 import blake2b as _blake2b  # hashlib's OpenSSL import costs 3 ms
except ImportError:  # pragma: no cover - a CPython without _blake2
    from hashlib import blake2b as _blake2b

from . import analysis, text, values

OK, BROKEN, STALE = "ok", "broken", "stale"
# A script's module (PROTOCOL.md 7.1, compile's ``scripts``): its text is
# parsed, its top level is not run as an import; it runs as a frame's
# statements instead. Loaded like a STALE module when something imports it.
SOURCE = "source"
_EXCLUDED_TOP = frozenset(["venv", "node_modules", "__pycache__", "site-packages"])
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_BUILTINS = frozenset(dir(builtins))
BUILTIN_VERSION = "builtin"
UNBOUND_VERSION = "unbound"


LAZY_MIN = 64
LAZY_HOOK = "__ripple_lazy__"


class _LazyDef:
    """A long function compiled lazily. Holds no module namespace, so the
    module can be collected; the entry goes with its function object."""

    __slots__ = ("node", "filename", "flags", "stub_code", "real_code")

    def __init__(self, node, filename, flags):
        self.node = node
        self.filename = filename
        self.flags = flags
        self.stub_code = None
        self.real_code = None


def _functions_with_code(namespace, code):
    """Function objects in namespace (decorated ones through __wrapped__) running code."""
    found = []
    for value in list(namespace.values()):
        func = value
        for _ in range(8):
            if getattr(func, "__code__", None) is code:
                found.append(func)
                break
            func = getattr(func, "__wrapped__", None)
            if func is None:
                break
    return found


def _stub(node, token):
    """A def with node's name, signature and decorators that calls the real code."""
    args = node.args
    positional = [ast.Name(id=a.arg, ctx=ast.Load()) for a in list(getattr(args, "posonlyargs", [])) + list(args.args)]
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
        child.lineno = node.lineno
        child.col_offset = node.col_offset
        child.end_lineno = node.lineno
        child.end_col_offset = node.col_offset
    return stub


class CompileTimeout(BaseException):
    """A module's top level ran past the compile timeout (PROTOCOL.md 5.1)."""


class _LoadTimer:
    """Bounds the outermost module load of a compile with SIGALRM.

    arm(seconds) sets the budget of each outermost load of the compile
    (0 disarms); running(name) wraps one load: the outermost one starts
    the interval timer, which raises CompileTimeout in the loading code
    (main thread, between bytecodes) when the budget is spent, and again
    every half second after that if the code swallows it; nested loads
    (imports of the module) run under the same clock. Outside a load the
    handler does nothing, so a late signal cannot hit kernel bookkeeping.
    Code that blocks in C without returning to the interpreter is not
    stopped here: the Go side's watchdog interrupts, then restarts, the
    kernel (engine/compile.go).
    """

    def __init__(self, kernel):
        self.kernel = kernel
        self.seconds = 0
        self.depth = 0
        self.loading = []  # the modules being loaded, innermost last
        self.timed_out = set()  # modules the timer cut during this compile
        self.installed = False

    def arm(self, seconds):
        self.seconds = seconds if isinstance(seconds, (int, float)) and seconds > 0 else 0

    def _fire(self, signum, frame):
        if self.depth > 0:
            self.timed_out.add(self.loading[-1])
            raise CompileTimeout(
                "the top level of %s did not return within the compile timeout (%gs); it was interrupted"
                % (self.loading[-1], self.seconds)
            )

    def running(self, name):
        return _TimedLoad(self, name)


class _TimedLoad:
    __slots__ = ("timer", "name", "outer")

    def __init__(self, timer, name):
        self.timer = timer
        self.name = name
        self.outer = False

    def __enter__(self):
        t = self.timer
        if t.depth == 0 and t.seconds > 0:
            if not t.installed:
                signal.signal(signal.SIGALRM, t._fire)
                t.installed = True
            self.outer = True
            signal.setitimer(signal.ITIMER_REAL, t.seconds, 0.5)
        t.loading.append(self.name)
        t.depth += 1

    def __exit__(self, exc_type, exc, tb):
        t = self.timer
        t.depth -= 1
        t.loading.pop()
        if self.outer:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return False


class ModuleError(ValueError):
    """A compile request names a module or path that cannot be a project module."""


class ModuleRecord:
    """The kernel's knowledge of one project module."""

    __slots__ = ("name", "path", "filename", "source", "state", "diagnostic", "module", "imports", "is_package", "top", "in_service", "fault")

    def __init__(self, name, path, filename, is_package):
        self.name = name
        self.path = path
        self.filename = filename
        self.is_package = is_package
        self.source = None  # engine_text.Source of the text last parsed
        self.state = STALE
        self.diagnostic = None
        self.module = None  # the live module object when state == OK
        self.imports = frozenset()  # project modules this one imports (static)
        self.top = None  # cached module-level analysis of self.source
        # in_service: the module was imported at least once (or a compile's
        # `load` asked for it); a compile reloads only such modules, the
        # others are imported when first needed (PROTOCOL.md 5.1: a module
        # no context needs is not imported).
        self.in_service = False
        # fault: the diagnostic the Go side sent for a module whose import
        # hung or killed a kernel (compile's `faulty`): it is not imported
        # until its text changes; importing it raises ImportError.
        self.fault = None


class _TopStmt:
    """Module-level facts of one top-level statement (cached by text)."""

    __slots__ = ("binds", "reads", "own", "imports", "star", "generator")

    def __init__(self, binds, reads, own, imports, star, generator=False):
        self.binds = binds  # names bound at module level
        self.reads = reads  # module-level names it reads (functions: free names)
        self.own = own  # hash of its normalised source
        self.imports = imports  # [(level, module or "", [(name, asname)] or None, is_from)]
        self.star = star  # [(level, module)] of star imports
        self.generator = generator  # a def whose body yields or awaits


class ModuleTable:
    def __init__(self, root, kernel, analyzer, diagnostics):
        self.root = os.path.realpath(root)
        self.kernel = kernel
        self.analyzer = analyzer
        self.diagnostics = diagnostics
        self.given = {}  # name -> (path, text) sent by compile
        self.records = {}  # name -> ModuleRecord
        self.by_filename = {}  # filename -> ModuleRecord
        self._generation = 0
        self._versions = None  # name -> {global: version}; None = recompute
        self._module_hash = {}
        self._top_cache = {}  # segment text -> _TopStmt
        self._node_memo = {}  # id(stmt) -> (stmt, StmtInfo): nodes an incremental parse kept
        self._lazy = {}  # token -> _LazyDef (see compile_module)
        self._lazy_tokens = itertools.count(1)
        # Modules some context runs as a script and none as functions
        # (compile's ``scripts``): compiled to SOURCE, not imported.
        self.scripts = frozenset()
        self._timer = _LoadTimer(kernel)
        self._finder = _ProjectFinder(self)
        self._loader = ProjectLoader(self)
        sys.meta_path.insert(0, self._finder)

    def close(self):
        """Remove the finder and every project module from sys.modules."""
        try:
            sys.meta_path.remove(self._finder)
        except ValueError:
            pass
        for name in list(self.records):
            self._unload(name)
        for filename in list(self.by_filename):
            linecache.cache.pop(filename, None)

    # -- locating ------------------------------------------------------------

    def locate(self, name):
        """(path, filename, is_package) of project module name, or None."""
        given = self.given.get(name)
        if given is not None:
            path = given[0]
            return path, os.path.join(self.root, *path.split("/")), path.endswith("__init__.py")
        if not _NAME.match(name):
            return None
        parts = name.split(".")
        if parts[0] in _EXCLUDED_TOP:
            return None
        base = os.path.join(self.root, *parts)
        if os.path.isfile(base + ".py"):
            return "/".join(parts) + ".py", base + ".py", False
        init = os.path.join(base, "__init__.py")
        if os.path.isfile(init):
            return "/".join(parts) + "/__init__.py", init, True
        return None

    def is_project(self, name):
        return name in self.records or self.locate(name) is not None

    def _record(self, name):
        rec = self.records.get(name)
        if rec is None:
            where = self.locate(name)
            if where is None:
                return None
            path, filename, is_package = where
            rec = ModuleRecord(name, path, filename, is_package)
            self.records[name] = rec
        return rec

    def _read(self, rec):
        given = self.given.get(rec.name)
        if given is not None:
            return given[1]
        with open(rec.filename, "rb") as f:
            raw = f.read()
        return importlib.util.decode_source(raw)

    # -- compile -----------------------------------------------------------

    def compile(self, modules, removed, scripts=None, load=(), faulty=None, timeout=0, lazy=False):
        """Install sources and reload; the result of the compile method.

        lazy: only modules in service (imported before) and those named by
        load are imported, the others when first needed; otherwise every
        given module is imported too. Modules in faulty ({name:
        diagnostic}) are broken with that diagnostic and never imported;
        timeout (seconds, 0 = none) bounds each outermost module load (see
        _LoadTimer).
        """
        if scripts is not None:
            self._set_scripts(scripts)
        faulty = faulty or {}
        if not lazy:
            load = list(load) + [_module_entry(e)[0] for e in modules]
        changed = []
        for entry in modules:
            name, path, source = _module_entry(entry)
            self.given[name] = (path, source)
            rec = self.records.get(name)
            if rec is not None and rec.path != path:
                self._forget(name)
            changed.append(name)
        gone = []
        for name in removed:
            if not isinstance(name, str) or not _NAME.match(name):
                raise ModuleError("removed module name %r is not a dotted module name" % (name,))
            self.given.pop(name, None)
            if name in self.records:
                gone.append(name)
        graph = self._graph()
        for name in changed:
            rec = self._record(name)
            rec.imports = self._imports_of_text(rec)
            graph[name] = rec.imports
        reverse = {}
        for name, deps in graph.items():
            for dep in deps:
                reverse.setdefault(dep, set()).add(name)
        for name in load:
            rec = self._record(name)
            if rec is not None and not rec.in_service:
                rec.in_service = True
                changed.append(name)
        for name, rec in self.records.items():
            fault = faulty.get(name)
            if fault != rec.fault:
                rec.fault = fault
                changed.append(name)
        for name in faulty:
            if name not in self.records and self._record(name) is not None:
                self.records[name].fault = faulty[name]
        todo = set(changed) | set(gone)
        todo |= {name for name, rec in self.records.items() if rec.state == STALE and rec.in_service}
        affected = set()
        stack = list(todo)
        while stack:
            name = stack.pop()
            if name in affected:
                continue
            affected.add(name)
            stack.extend(reverse.get(name, ()))
        for name in gone:
            self._forget(name)
            affected.discard(name)
        order = _topological(affected, graph)
        for name in order:
            self._unload(name)
            rec = self._record(name)
            if rec is not None:
                rec.state = STALE
        self._versions = None
        results = []
        self._timer.arm(timeout)
        self._timer.timed_out = set()
        try:
            for name in order:
                rec = self.records.get(name)
                if rec is None:
                    continue
                if rec.fault is not None:
                    self._mark_faulty(rec)
                elif rec.state == STALE and rec.in_service:
                    if self._script_only(name):
                        self._parse_script(rec)
                    else:
                        self._load(name)
                # else not in service: imported when first needed
        finally:
            self._timer.arm(0)
        for name in order:
            rec = self.records.get(name)
            if rec is None or rec.state == STALE:
                continue  # not imported (an importer may have loaded it above)
            entry = {"name": name, "path": rec.path, "ok": rec.state in (OK, SOURCE)}
            if name in self._timer.timed_out:
                entry["timedOut"] = True  # the Go side keeps it out of service
            if rec.state == BROKEN:
                entry["diagnostic"] = rec.diagnostic
            results.append(entry)
        # The static import graph of every module imported so far: the Go
        # side decides with it which contexts an edit reaches.
        graph = {name: sorted(rec.imports) for name, rec in self.records.items() if rec.state != STALE}
        return {"modules": results, "reloaded": [r["name"] for r in results], "graph": graph}

    def _mark_faulty(self, rec):
        rec.state = BROKEN
        rec.module = None
        rec.diagnostic = rec.fault
        sys.modules.pop(rec.name, None)


    def _set_scripts(self, scripts):
        if not isinstance(scripts, list) or not all(isinstance(n, str) and _NAME.match(n) for n in scripts):
            raise ModuleError("compile: scripts must be a list of dotted module names")
        self.scripts = frozenset(scripts)
        for rec in self.records.values():
            if rec.state == SOURCE and rec.name not in self.scripts:
                rec.state = STALE  # now needed as a module: the compile loads it

    def _script_only(self, name):
        """Whether name is compiled as a script's text only: a script no
        other loaded or loading project module imports."""
        if name not in self.scripts:
            return False
        for rec in self.records.values():
            if name in rec.imports and rec.name not in self.scripts and rec.state in (OK, STALE):
                return False
        return True

    def _parse_script(self, rec):
        """Parse a script's text (SOURCE), or mark it broken on a syntax error."""
        try:
            self._parse(rec)
        except SyntaxError as exc:
            self._mark_broken(rec, exc)
            return rec
        rec.imports = self._imports_of(rec)
        rec.state = SOURCE
        rec.diagnostic = None
        rec.module = None
        return rec

    def script(self, name):
        """The record of project module name with its current text parsed,
        for running its top level as a script (not imported, unless
        something else imported it), or None when it is not a project
        module. A syntax error leaves the record BROKEN with its diagnostic."""
        rec = self._record(name)
        if rec is None:
            return None
        if rec.state == OK:
            try:
                self._parse(rec)
            except SyntaxError as exc:
                self._mark_broken(rec, exc)
            return rec
        return self._parse_script(rec)

    def is_script_code(self, obj):
        """The module name of a script whose text defined function obj, else None."""
        code = getattr(obj, "__code__", None)
        rec = self.by_filename.get(code.co_filename) if code is not None else None
        if rec is None or rec.state != SOURCE:
            return None
        return rec.name

    def _graph(self):
        graph = {}
        for name, rec in self.records.items():
            graph[name] = rec.imports
        return graph

    def _imports_of_text(self, rec):
        """Static imports of rec's current text (previous edges on a syntax error)."""
        try:
            self._parse(rec)
        except SyntaxError:
            return rec.imports
        return self._imports_of(rec)

    def _imports_of(self, rec):
        found = set()
        parent = rec.name.rpartition(".")[0]
        if parent and self.is_project(parent):
            found.add(parent)
        for top in self._top(rec):
            for level, module, names, is_from in top.imports:
                base = _resolve(rec, level, module)
                if base is None:
                    continue
                parts = base.split(".")
                for i in range(1, len(parts) + 1):
                    candidate = ".".join(parts[:i])
                    if candidate != rec.name and self.is_project(candidate):
                        found.add(candidate)
                if is_from and names:
                    for item, _alias in names:
                        candidate = base + "." + item
                        if self.is_project(candidate):
                            found.add(candidate)
        found.discard(rec.name)
        return frozenset(found)

    def _parse(self, rec):
        """Parse rec's current text into rec.source (incrementally if possible)."""
        source_text = self._read(rec)
        previous = rec.source
        if previous is not None and previous.text == source_text:
            return previous
        self._generation += 1
        try:
            src = text.parse(rec.name, rec.path, rec.filename, source_text, self._generation, previous)
        except SyntaxError as exc:
            exc.filename = rec.filename
            lines = text.split_lines(source_text)
            _register_linecache(rec.filename, lines)
            raise
        rec.source = src
        rec.top = None
        self.by_filename[rec.filename] = rec
        _register_linecache(rec.filename, src.lines)
        return src

    def _load(self, name):
        """Import name through the finder; record the outcome on its record."""
        rec = self.records[name]
        try:
            importlib.import_module(name)
        except KeyboardInterrupt:
            if rec.state != OK:
                rec.state = STALE
            raise
        except BaseException as exc:  # the outcome is recorded, not raised
            if rec.state != BROKEN:
                self._mark_broken(rec, exc)
        return rec

    def _mark_broken(self, rec, exc):
        rec.state = BROKEN
        rec.module = None
        sys.modules.pop(rec.name, None)
        if isinstance(exc, SyntaxError) and os.path.realpath(exc.filename or "") == os.path.realpath(rec.filename):
            rec.diagnostic = self.diagnostics.for_syntax_error(exc, rec.path)
            return
        failed = getattr(exc, "_ripple_module", None)
        message = None
        inner = self.records.get(failed) if failed is not None and failed != rec.name else None
        if inner is not None and inner.diagnostic and inner.diagnostic.get("path"):
            # PROTOCOL.md 5.1: an imported module's failure is reported at
            # its own file and range, the import chain as the stack.
            d = inner.diagnostic
            rec.diagnostic = {
                "kind": "Error",
                "message": "cannot import %s: %s" % (failed, d.get("message", "")),
                "path": d["path"],
                "stack": self.diagnostics.stack(exc.__traceback__),
            }
            if d.get("location"):
                rec.diagnostic["location"] = d["location"]
            return
        if failed is not None and failed != rec.name:
            message = "cannot import %s: %s" % (failed, values.exception_message(exc))
        location = None
        stack = self.diagnostics.stack(exc.__traceback__)
        for frame in reversed(stack):
            if frame["path"] == rec.path:
                location = frame["location"]
                break
        rec.diagnostic = self.diagnostics.for_exception(exc, location=location, path=rec.path, message=message)
        if not rec.diagnostic.get("location"):
            rec.diagnostic.pop("location", None)

    def _forget(self, name):
        self._unload(name)
        rec = self.records.pop(name, None)
        if rec is not None:
            self.by_filename.pop(rec.filename, None)
            linecache.cache.pop(rec.filename, None)
        self._versions = None

    def _unload(self, name):
        module = sys.modules.pop(name, None)
        parent_name, _, child = name.rpartition(".")
        if parent_name:
            parent = sys.modules.get(parent_name)
            if parent is not None and module is not None and getattr(parent, child, None) is module:
                try:
                    delattr(parent, child)
                except AttributeError:
                    pass
        rec = self.records.get(name)
        if rec is not None:
            rec.module = None

    # -- use by execution -----------------------------------------------------

    def ensure(self, name):
        """The record of project module name, loaded if it was stale or never loaded.

        Returns None when name is not a project module.
        """
        rec = self.records.get(name)
        if rec is None:
            if self.locate(name) is None:
                return None
            rec = self._record(name)
        rec.in_service = True
        if rec.state in (STALE, SOURCE) and rec.fault is None:
            self._versions = None
            self._load(name)
        elif rec.fault is not None and rec.state != BROKEN:
            self._mark_faulty(rec)
        return rec

    def compile_module(self, rec, namespace):
        """Code of a module's top level, with long functions compiled lazily.

        A module-level function with more than LAZY_MIN statements is
        compiled as a stub with the same name, signature, decorators and
        line, whose body fetches the real code on its first call (compiled
        then, swapped into the function so later calls are direct) and calls
        it with the same arguments. Execution contexts never call the
        function they run (they run its statements), so an edit of a long
        ``main`` costs a compile of the stub, not of the whole body.
        """
        src = rec.source
        flags = analysis.future_flags(src.tree)
        body = []
        stubs = []
        for node, top in zip(src.tree.body, self._top(rec)):
            if isinstance(node, ast.FunctionDef) and len(node.body) > LAZY_MIN and not top.generator:
                token = next(self._lazy_tokens)
                self._lazy[token] = _LazyDef(node, src.filename, flags)
                body.append(_stub(node, token))
                stubs.append(token)
            else:
                body.append(node)
        if not stubs:
            return compile(src.tree, src.filename, "exec", flags=flags, dont_inherit=True), stubs
        namespace[LAZY_HOOK] = self._resolve_lazy
        tree = ast.Module(body=body, type_ignores=[])
        code = compile(tree, src.filename, "exec", flags=flags, dont_inherit=True)
        for token in stubs:
            entry = self._lazy[token]
            for const in code.co_consts:
                if isinstance(const, types.CodeType) and const.co_name == entry.node.name and const.co_firstlineno == entry.node.lineno:
                    entry.stub_code = const
        return code, stubs

    def _resolve_lazy(self, token):
        """The real function behind a stub (called by the stub, see compile_module)."""
        entry = self._lazy.get(token)
        if entry is None:
            raise RuntimeError("ripple: this function's code was discarded with its module; reload the module")
        namespace = sys._getframe(1).f_globals
        node = entry.node
        if entry.real_code is None:
            module_code = compile(
                ast.Module(body=[node], type_ignores=[]), entry.filename, "exec", flags=entry.flags, dont_inherit=True
            )
            for const in module_code.co_consts:
                if isinstance(const, types.CodeType) and const.co_name == node.name:
                    entry.real_code = const
            # Later calls skip the stub: swap the real code into the function.
            for func in _functions_with_code(namespace, entry.stub_code):
                try:
                    func.__code__ = entry.real_code
                except (TypeError, ValueError):
                    pass
        return types.FunctionType(entry.real_code, namespace, node.name)

    def attach_lazy(self, tokens, namespace):
        """Tie each stub's bookkeeping to its function object's lifetime."""
        for token in tokens:
            entry = self._lazy.get(token)
            if entry is None:
                continue
            for func in _functions_with_code(namespace, entry.stub_code):
                weakref.finalize(func, self._lazy.pop, token, None)

    def source_for_filename(self, filename):
        rec = self.by_filename.get(filename)
        return rec.source if rec is not None else None

    def module_of_object(self, obj):
        """Project module name that defines function/class obj, or None."""
        code = getattr(obj, "__code__", None)
        filename = code.co_filename if code is not None else None
        rec = self.by_filename.get(filename) if filename else None
        if rec is None:
            name = getattr(obj, "__module__", None)
            rec = self.records.get(name) if isinstance(name, str) else None
        if rec is None or rec.state != OK:
            return None
        return rec.name

    def status(self):
        return {name: (OK if rec.state in (OK, SOURCE) else BROKEN) for name, rec in sorted(self.records.items())}

    # -- versions ----------------------------------------------------------------

    def versions(self, name):
        """{global name: version} of a loaded module (empty if unknown)."""
        if self._versions is None or name not in self._versions:
            self._compute_versions(name)
        return self._versions.get(name, {})

    def module_hash(self, name):
        if self._versions is None or name not in self._versions:
            self._compute_versions(name)
        return self._module_hash.get(name, UNBOUND_VERSION)

    def global_version(self, module, name):
        v = self.versions(module).get(name)
        if v is not None:
            return v
        return BUILTIN_VERSION if name in _BUILTINS else UNBOUND_VERSION

    def _top(self, rec):
        """Per top-level statement facts of rec.source."""
        if rec.top is not None:
            return rec.top
        src = rec.source
        out = []
        for node in src.tree.body:
            seg = src.segment(node)
            top = self._top_cache.get(seg)
            if top is None:
                top = self._analyze_top(src, node)
                if len(self._top_cache) > 50000:
                    self._top_cache.clear()
                self._top_cache[seg] = top
            out.append(top)
        rec.top = out
        return out

    def _analyze_top(self, src, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(node.body) > 4:
            # Built from the body statements' cached analysis so an edit
            # inside a long function costs one statement, not the function.
            header = copy.copy(node)
            header.body = [ast.Pass()]
            head = analysis.analyze(header)
            reads = set(head.uses)
            binds_inside = set()
            keys = [head.key]
            raw_imports = list(head.imports)
            generator = False
            memo = self._node_memo
            if len(memo) > 200000:
                memo.clear()
            for stmt in node.body:
                hit = memo.get(id(stmt))
                if hit is not None and hit[0] is stmt:
                    info = hit[1]
                else:
                    info = self.analyzer.info(src.segment(stmt), stmt)
                    memo[id(stmt)] = (stmt, info)
                generator = generator or info.yields
                reads |= info.uses
                binds_inside |= info.defines
                keys.append(info.key)
                raw_imports.extend(info.imports)
            if not isinstance(node, ast.ClassDef):
                reads -= binds_inside | set(analysis.parameter_names(node.args))
            own = _hash("\0".join(keys))
            binds = head.binds
        else:
            info = analysis.analyze(node)
            reads = set(info.uses)
            generator = False
            own = _hash(info.key)
            # A module-level mutation (CONFIG.append(1)) is part of the
            # mutated global's version too.
            binds = info.defines
            raw_imports = info.imports
        imports = []
        star = []
        for level, module, names, is_from in raw_imports:
            if is_from:
                if any(name == "*" for name, _ in names):
                    star.append((level, module))
                names = [(n, a) for n, a in names if n != "*"]
            imports.append((level, module, names, is_from))
        return _TopStmt(frozenset(binds), frozenset(reads), own, imports, star, generator)

    def _compute_versions(self, root):
        """Versions of every module-level name of module root and of the
        modules it reaches through imports (see module doc).

        A name's version depends only on what it reaches, so the versions of
        root's closure computed alone equal those of a computation over every
        module: computing them per requested module keeps a kernel that loads
        hundreds of modules one by one (a test suite) from recomputing all of
        them at every load (it was quadratic). Results are kept until the
        next change of any module (self._versions = None)."""
        if self._versions is None:
            self._versions, self._module_hash = {}, {}
        recs = {}
        tops = {}
        bound = {}  # module -> {name: [top indices]}, for modules met so far

        def bound_of(mod):
            """The binding table of an ok module, None for any other name."""
            table = bound.get(mod)
            if table is not None or mod in recs:
                return table
            rec = self.records.get(mod)
            if rec is None or rec.state != OK or rec.source is None:
                return None
            recs[mod] = rec
            stmts = tops[mod] = self._top(rec)
            table = {}
            for i, top in enumerate(stmts):
                for b in top.binds:
                    table.setdefault(b, []).append(i)
            bound[mod] = table
            return table

        if bound_of(root) is None:
            self._versions[root] = {}
            return
        # Nodes: (module, name) and (module, "*") for a whole module.
        own = {}
        edges = {}
        todo = [root]
        built = set()
        while todo:
            mod = todo.pop()
            if mod in built or mod in self._versions:
                continue
            built.add(mod)
            stmts = tops[mod]
            table = bound[mod]
            rec = recs[mod]
            star_names = {}
            for top in stmts:
                for level, target in top.star:
                    full = _resolve(rec, level, target)
                    names = bound_of(full) if full is not None else None
                    if names is not None:
                        for n in names:
                            if not n.startswith("_"):
                                star_names.setdefault(n, []).append((full, n))
            for gname, indices in table.items():
                node = (mod, gname)
                parts = []
                deps = set()
                for i in indices:
                    top = stmts[i]
                    parts.append(top.own)
                    for r in top.reads:
                        if r in table:
                            deps.add((mod, r))
                    for level, module, names, is_from in top.imports:
                        base = _resolve(rec, level, module)
                        if base is None:
                            continue
                        if not is_from:
                            asname = names[0][1] if names else None
                            if (asname or base.split(".")[0]) != gname:
                                continue
                            pieces = base.split(".")
                            for k in range(1, len(pieces) + 1):
                                cand = ".".join(pieces[:k])
                                if bound_of(cand) is not None:
                                    deps.add((cand, "*"))
                        else:
                            for item, asname in names or ():
                                if (asname or item) != gname:
                                    continue
                                base_names = bound_of(base)
                                if base_names is not None and item in base_names:
                                    deps.add((base, item))
                                elif bound_of(base + "." + item) is not None:
                                    deps.add((base + "." + item, "*"))
                for src_node in star_names.get(gname, ()):
                    deps.add(src_node)
                own[node] = "|".join(parts)
                edges[node] = deps
            for gname, srcs in star_names.items():
                if gname not in table:
                    own[(mod, gname)] = "star"
                    edges[(mod, gname)] = set(srcs)
            star = (mod, "*")
            own[star] = "module"
            edges[star] = {(mod, n) for n in table} | {(mod, n) for n in star_names}
            for gname in list(table) + list(star_names):
                for dep_mod, _ in edges.get((mod, gname), ()):
                    if dep_mod not in built:
                        todo.append(dep_mod)
        # Modules computed before (reached, not rebuilt) enter as fixed
        # versions: a node of theirs is hashed by its known version.
        known = {}
        for deps in edges.values():
            for dep in deps:
                if dep not in own and dep[0] in self._versions:
                    v = self._module_hash.get(dep[0]) if dep[1] == "*" else self._versions[dep[0]].get(dep[1])
                    if v is not None:
                        known[dep] = v
        result = _hash_graph(own, edges, known)
        for mod in built:
            self._versions.setdefault(mod, {})
        for (mod, gname), v in result.items():
            if mod not in built:
                continue
            if gname == "*":
                self._module_hash[mod] = v
            else:
                self._versions[mod][gname] = v


def _resolve(rec, level, module):
    """Absolute name of a (possibly relative) import in rec, or None."""
    if not level:
        return module or None
    package = rec.name if rec.is_package else rec.name.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    if module:
        return base + "." + module if base else module
    return base or None


def _hash(s):
    return _blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def _hash_graph(own, edges, known=None):
    """Version of every node of own: its own text plus its dependencies'
    versions (known gives those of dependencies outside own; another
    dependency outside own does not count).

    Strongly connected components (mutual recursion, import cycles) are
    hashed together: a change anywhere in a cycle changes all its members.
    """
    known = known or {}
    index = {}
    low = {}
    on_stack = set()
    stack = []
    result = {}
    counter = [0]
    for start in own:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for dep in it:
                if dep not in own:
                    continue
                if dep not in index:
                    index[dep] = low[dep] = counter[0]
                    counter[0] += 1
                    stack.append(dep)
                    on_stack.add(dep)
                    work.append((dep, iter(sorted(edges.get(dep, ())))))
                    advanced = True
                    break
                if dep in on_stack:
                    low[node] = min(low[node], index[dep])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    members.append(m)
                    if m == node:
                        break
                members.sort()
                member_set = set(members)
                parts = []
                for m in members:
                    parts.append("%s:%s=%s" % (m[0], m[1], own[m]))
                    for dep in sorted(edges.get(m, ())):
                        if dep in member_set:
                            continue
                        v = result.get(dep) if dep in own else known.get(dep)
                        if v is not None:
                            parts.append("%s:%s@%s" % (dep[0], dep[1], v))
                group = _hash("\n".join(parts))
                for m in members:
                    result[m] = group if len(members) == 1 else _hash(group + m[0] + ":" + m[1])
    return result


def _topological(names, graph):
    """names ordered so that a module comes after the modules it imports."""
    order = []
    seen = set()
    for start in sorted(names):
        if start in seen:
            continue
        seen.add(start)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        while work:
            node, it = work[-1]
            advanced = False
            for dep in it:
                if dep in names and dep not in seen:
                    seen.add(dep)
                    work.append((dep, iter(sorted(graph.get(dep, ())))))
                    advanced = True
                    break
            if not advanced:
                work.pop()
                order.append(node)
    return order


def _module_entry(entry):
    if not isinstance(entry, dict):
        raise ModuleError("compile: each module must be an object {name, path, source}, got %r" % (type(entry).__name__,))
    name = entry.get("name")
    path = entry.get("path")
    source = entry.get("source")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ModuleError("compile: module name %r is not a dotted module name" % (name,))
    if not isinstance(path, str) or not path.endswith(".py") or path.startswith("/") or "\\" in path:
        raise ModuleError("compile: module %s: path %r is not a relative POSIX path to a .py file" % (name, path))
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ModuleError("compile: module %s: path %r must stay inside the project root" % (name, path))
    expected = name.split(".")
    if parts[-1] == "__init__.py":
        got = parts[:-1]
    else:
        got = parts[:-1] + [parts[-1][:-3]]
    if got != expected:
        raise ModuleError("compile: module %s does not match its path %r" % (name, path))
    if not isinstance(source, str):
        raise ModuleError("compile: module %s: source must be a string" % name)
    return name, path, source


def _register_linecache(filename, lines):
    body = [line + "\n" for line in lines]
    linecache.cache[filename] = (sum(len(x) for x in body), None, body, filename)


# The finder and the loader implement the import protocol directly rather
# than subclassing importlib.abc, whose import (importlib.resources,
# tempfile, ...) costs a kernel start about 10 ms.
class _ProjectFinder:
    """Serves project modules from the table (see the module doc)."""

    def __init__(self, table):
        self.table = table

    def find_spec(self, fullname, path=None, target=None):
        table = self.table
        rec = table.records.get(fullname)
        if rec is not None and rec.state == BROKEN:
            diag = rec.diagnostic or {}
            exc = ImportError(
                "project module %s is broken: %s" % (fullname, diag.get("message", "it failed to load")),
                name=fullname,
            )
            exc._ripple_module = fullname
            raise exc
        where = table.locate(fullname)
        if where is None:
            return None
        path_rel, filename, is_package = where
        locations = [os.path.dirname(filename)] if is_package else None
        return importlib.util.spec_from_file_location(
            fullname, filename, loader=table._loader, submodule_search_locations=locations
        )

    def invalidate_caches(self):
        pass


class ProjectLoader:
    """Loads a project module from the table's text (see the module doc)."""

    def __init__(self, table):
        self.table = table

    def create_module(self, spec):
        return None

    def get_source(self, fullname):
        rec = self.table.records.get(fullname)
        return rec.source.text if rec is not None and rec.source is not None else None

    def exec_module(self, module):
        table = self.table
        name = module.__name__
        rec = table._record(name)
        if rec is None:
            raise ImportError("no project module named %s" % name, name=name)
        if rec.fault is not None:
            table._mark_faulty(rec)
            exc = ImportError("project module %s is broken: %s" % (name, rec.fault.get("message", "")), name=name)
            exc._ripple_module = name
            raise exc
        rec.in_service = True
        rec.state = STALE
        rec.module = None
        table._versions = None
        table.kernel.emit_progress({"type": "load", "module": name, "phase": "start"})
        try:
            src = table._parse(rec)
            rec.imports = table._imports_of(rec)
            code, lazy = table.compile_module(rec, module.__dict__)
            module.__file__ = rec.filename
            with table.kernel.user_code(), table._timer.running(name):
                exec(code, module.__dict__)
            table.attach_lazy(lazy, module.__dict__)
        except KeyboardInterrupt:
            rec.state = STALE
            table.kernel.emit_progress({"type": "load", "module": name, "phase": "end"})
            raise
        except BaseException as exc:
            table._mark_broken(rec, exc)
            if getattr(exc, "_ripple_module", None) is None:
                try:
                    exc._ripple_module = name
                except Exception:
                    pass
            table.kernel.emit_progress({"type": "load", "module": name, "phase": "end"})
            raise
        table.kernel.emit_progress({"type": "load", "module": name, "phase": "end"})
        rec.state = OK
        rec.diagnostic = None
        rec.module = module
