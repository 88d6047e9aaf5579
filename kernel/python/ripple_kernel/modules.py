"""Project modules: sources, loading and the import graph (PROTOCOL.md 5.1).

ModuleTable owns every project module of the kernel, one ModuleRecord
each (records.py):

- Sources come from ``compile`` requests; a module never sent is read from
  its file under the root (``pkg/mod.py`` or ``pkg/__init__.py``). The
  import hooks (importer.py) serve project modules from the table, so
  every import loads the table's text.
- The import graph is static (the ``ast`` of each module's imports, inside
  functions too). A compile reloads the given modules and every project
  module that imports one of them, transitively, in dependency order, each
  into a fresh module object: all of them are removed from ``sys.modules``
  before the first is loaded again, so no stale object survives. A top
  level that runs too long is cut by the compile timeout (loadtimer.py).
- Global versions (versions.py) are kept per module global; the table
  forgets them at every change. Long functions are compiled lazily
  (lazydefs.py).

Concurrency: none; the kernel serves one request at a time and every method
here runs on the main thread.
"""

from __future__ import annotations

import importlib
import importlib.util
import linecache
import os
import sys
import types
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from . import analysis, text, values
from .api import KernelAPI, WireObject
from .importer import ProjectFinder
from .lazydefs import LazyDefs
from .loadtimer import LoadTimer
from .records import BROKEN, NAME, OK, SOURCE, STALE, ModuleError, ModuleRecord, module_entry, resolve
from .versions import GlobalVersions

if TYPE_CHECKING:
    from .modstate import Watched

_EXCLUDED_TOP = frozenset(["venv", "node_modules", "__pycache__", "site-packages"])
# Where a project module is: (path relative to the root, filename, is_package).
Location = Tuple[str, str, bool]
Graph = Dict[str, FrozenSet[str]]


class ModuleTable:
    """The project modules of one kernel; see the module doc."""

    def __init__(self, root: str, kernel: KernelAPI, analyzer: analysis.Analyzer,
                 diagnostics: values.Diagnostics) -> None:
        self.root = os.path.realpath(root)
        self.kernel = kernel
        self.analyzer = analyzer
        self.diagnostics = diagnostics
        self.given: Dict[str, Tuple[str, str]] = {}  # name -> (path, text) sent by compile
        self.records: Dict[str, ModuleRecord] = {}
        self.by_filename: Dict[str, ModuleRecord] = {}
        self._generation = 0  # counts parses: a Source's generation
        self.globals = GlobalVersions(self.records, analyzer)
        # The versions the run asks for per statement: bound here, no call between.
        self.versions = self.globals.versions
        self.module_hash = self.globals.module_hash
        self.global_version = self.globals.global_version
        self.lazy = LazyDefs()
        # What other modules derive from the table and keep per table:
        # modstate's watched globals (generation, watched) and mutation's
        # read-only callees. Kept here so that they die with the table: a
        # weak map keyed by the table would keep it alive, since its values
        # reach the table back through the modules' loaders.
        self.watched_globals: Optional[Tuple[int, Watched]] = None
        self.readonly_callees: Dict[types.CodeType, bool] = {}
        # Modules some context runs as a script and none as functions
        # (compile's ``scripts``): compiled to SOURCE, not imported.
        self.scripts: FrozenSet[str] = frozenset()
        self.timer = LoadTimer(kernel)
        self._finder = ProjectFinder(self)
        sys.meta_path.insert(0, self._finder)

    def close(self) -> None:
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

    def locate(self, name: str) -> Optional[Location]:
        """(path, filename, is_package) of project module name, or None."""
        given = self.given.get(name)
        if given is not None:
            path = given[0]
            return path, os.path.join(self.root, *path.split("/")), path.endswith("__init__.py")
        if not NAME.match(name):
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

    def is_project(self, name: str) -> bool:
        return name in self.records or self.locate(name) is not None

    def record(self, name: str) -> Optional[ModuleRecord]:
        """The record of project module name (made on first need), or None."""
        rec = self.records.get(name)
        if rec is None:
            where = self.locate(name)
            if where is None:
                return None
            path, filename, is_package = where
            rec = ModuleRecord(name, path, filename, is_package)
            self.records[name] = rec
        return rec

    def _read(self, rec: ModuleRecord) -> str:
        given = self.given.get(rec.name)
        if given is not None:
            return given[1]
        with open(rec.filename, "rb") as f:
            raw = f.read()
        return importlib.util.decode_source(raw)

    # -- compile -----------------------------------------------------------

    def compile(self, modules: Sequence[object], removed: Sequence[object], scripts: Optional[object] = None,
                load: Iterable[str] = (), faulty: Optional[WireObject] = None, timeout: float = 0,
                lazy: bool = False) -> WireObject:
        """Install sources and reload; the result of the compile method.

        lazy: only modules in service (imported before) and those named by
        load are imported, the others when first needed; otherwise every
        given module is imported too. Modules in faulty ({name:
        diagnostic}) are broken with that diagnostic and never imported;
        timeout (seconds, 0 = none) bounds each outermost module load (see
        LoadTimer).
        """
        if scripts is not None:
            self._set_scripts(scripts)
        faulty = faulty or {}
        if not lazy:
            load = list(load) + [module_entry(e)[0] for e in modules]
        changed = self._install(modules)
        gone = self._removed(removed)
        graph = self._graph()
        for name in changed:
            rec = self.record(name)
            assert rec is not None  # given: located by its path
            rec.imports = self._imports_of_text(rec)
            graph[name] = rec.imports
        for name in load:
            rec = self.record(name)
            if rec is not None and not rec.in_service:
                rec.in_service = True
                changed.append(name)
        changed += self._apply_faults(faulty)
        todo = set(changed) | set(gone)
        todo |= {name for name, rec in self.records.items() if rec.state == STALE and rec.in_service}
        affected = _importers(todo, graph)
        for name in gone:
            self._forget(name)
            affected.discard(name)
        order = _topological(affected, graph)
        for name in order:
            self._unload(name)
            rec = self.record(name)
            if rec is not None:
                rec.state = STALE
        self.globals.invalidate()
        self._reload(order, timeout)
        results = self._results(order)
        # The static import graph of every module imported so far: the Go
        # side decides with it which contexts an edit reaches.
        imported = {name: sorted(rec.imports) for name, rec in self.records.items() if rec.state != STALE}
        return {"modules": results, "reloaded": [r["name"] for r in results], "graph": imported}

    def _install(self, modules: Sequence[object]) -> List[str]:
        """Take the sources of a compile; the names of the modules given."""
        changed = []
        for entry in modules:
            name, path, source = module_entry(entry)
            self.given[name] = (path, source)
            rec = self.records.get(name)
            if rec is not None and rec.path != path:
                self._forget(name)
            changed.append(name)
        return changed

    def _removed(self, removed: Sequence[object]) -> List[str]:
        """Drop the sources of removed modules; the names of those known."""
        gone = []
        for name in removed:
            if not isinstance(name, str) or not NAME.match(name):
                raise ModuleError("removed module name %r is not a dotted module name" % (name,))
            self.given.pop(name, None)
            if name in self.records:
                gone.append(name)
        return gone

    def _apply_faults(self, faulty: WireObject) -> List[str]:
        """Set the faults a compile gives; the names whose fault changed."""
        changed = []
        for name, rec in self.records.items():
            fault = faulty.get(name)
            if fault != rec.fault:
                rec.fault = fault
                changed.append(name)
        for name in faulty:
            if name not in self.records:
                new = self.record(name)
                if new is not None:
                    new.fault = faulty[name]
        return changed

    def _reload(self, order: List[str], timeout: float) -> None:
        """Load the modules of order that are in service, under the timeout."""
        self.timer.arm(timeout)
        self.timer.timed_out = set()
        try:
            for name in order:
                rec = self.records.get(name)
                if rec is None:
                    continue
                if rec.fault is not None:
                    self.mark_faulty(rec)
                elif rec.state == STALE and rec.in_service:
                    if self._script_only(name):
                        self._parse_script(rec)
                    else:
                        self._load(name)
                # else not in service: imported when first needed
        finally:
            self.timer.arm(0)

    def _results(self, order: List[str]) -> List[WireObject]:
        """The compile's result entry of each module of order it loaded."""
        results = []
        for name in order:
            rec = self.records.get(name)
            if rec is None or rec.state == STALE:
                continue  # not imported (an importer may have loaded it above)
            entry: WireObject = {"name": name, "path": rec.path, "ok": rec.state in (OK, SOURCE)}
            if name in self.timer.timed_out:
                entry["timedOut"] = True  # the Go side keeps it out of service
            if rec.state == BROKEN:
                entry["diagnostic"] = rec.diagnostic
            results.append(entry)
        return results

    def mark_faulty(self, rec: ModuleRecord) -> None:
        rec.state = BROKEN
        rec.module = None
        rec.diagnostic = rec.fault
        sys.modules.pop(rec.name, None)

    # -- scripts ------------------------------------------------------------------

    def _set_scripts(self, scripts: object) -> None:
        if not isinstance(scripts, list) or not all(isinstance(n, str) and NAME.match(n) for n in scripts):
            raise ModuleError("compile: scripts must be a list of dotted module names")
        self.scripts = frozenset(scripts)
        for rec in self.records.values():
            if rec.state == SOURCE and rec.name not in self.scripts:
                # No longer run as a script: a module again, imported when
                # first needed (an importer, a load of the compile), not by
                # this compile. Loading it here ran a script's whole top
                # level inside an edit's compile (output discarded, effects
                # not held), and the edit waited for all of it.
                rec.state = STALE
                rec.in_service = False

    def _script_only(self, name: str) -> bool:
        """Whether name is compiled as a script's text only: a script no
        other loaded or loading project module imports."""
        if name not in self.scripts:
            return False
        for rec in self.records.values():
            if name in rec.imports and rec.name not in self.scripts and rec.state in (OK, STALE):
                return False
        return True

    def _parse_script(self, rec: ModuleRecord) -> ModuleRecord:
        """Parse a script's text (SOURCE), or mark it broken on a syntax error."""
        try:
            self.parse(rec)
        except SyntaxError as exc:
            self.mark_broken(rec, exc)
            return rec
        rec.imports = self.imports_of(rec)
        rec.state = SOURCE
        rec.diagnostic = None
        rec.module = None
        return rec

    def script(self, name: str) -> Optional[ModuleRecord]:
        """The record of project module name with its current text parsed,
        for running its top level as a script (not imported, unless
        something else imported it), or None when it is not a project
        module. A syntax error leaves the record BROKEN with its diagnostic."""
        rec = self.record(name)
        if rec is None:
            return None
        if rec.state == OK:
            try:
                self.parse(rec)
            except SyntaxError as exc:
                self.mark_broken(rec, exc)
            return rec
        return self._parse_script(rec)

    def is_script_code(self, obj: object) -> Optional[str]:
        """The module name of a script whose text defined function obj, else None."""
        code = getattr(obj, "__code__", None)
        rec = self.by_filename.get(code.co_filename) if code is not None else None
        if rec is None or rec.state != SOURCE:
            return None
        return rec.name

    # -- the import graph -----------------------------------------------------------

    def _graph(self) -> Graph:
        graph = {}
        for name, rec in self.records.items():
            graph[name] = rec.imports
        return graph

    def _imports_of_text(self, rec: ModuleRecord) -> FrozenSet[str]:
        """Static imports of rec's current text (previous edges on a syntax error)."""
        try:
            self.parse(rec)
        except SyntaxError:
            return rec.imports
        return self.imports_of(rec)

    def imports_of(self, rec: ModuleRecord) -> FrozenSet[str]:
        """The project modules rec's parsed text imports (its package too)."""
        found = set()
        parent = rec.name.rpartition(".")[0]
        if parent and self.is_project(parent):
            found.add(parent)
        for top in self.globals.top(rec):
            for level, module, names, is_from in top.imports:
                base = resolve(rec, level, module)
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

    # -- loading --------------------------------------------------------------------

    def parse(self, rec: ModuleRecord) -> text.Source:
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

    def compile_module(self, rec: ModuleRecord, namespace: Dict[str, object]) -> Tuple[types.CodeType, List[int]]:
        """Code of a module's top level, with long functions compiled
        lazily (lazydefs.py), and the tokens of those."""
        assert rec.source is not None
        generators = [top.generator for top in self.globals.top(rec)]
        return self.lazy.compile_module(rec.source, generators, namespace)

    def _load(self, name: str) -> ModuleRecord:
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
                self.mark_broken(rec, exc)
        return rec

    def mark_broken(self, rec: ModuleRecord, exc: BaseException) -> None:
        """rec is BROKEN by exc, with the diagnostic of its failure."""
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
        diagnostic = self.diagnostics.for_exception(exc, location=location, path=rec.path, message=message)
        if not diagnostic.get("location"):
            diagnostic.pop("location", None)
        rec.diagnostic = diagnostic

    def _forget(self, name: str) -> None:
        self._unload(name)
        rec = self.records.pop(name, None)
        if rec is not None:
            self.by_filename.pop(rec.filename, None)
            linecache.cache.pop(rec.filename, None)
        self.globals.invalidate()

    def _unload(self, name: str) -> None:
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

    def ensure(self, name: str) -> Optional[ModuleRecord]:
        """The record of project module name, loaded if it was stale or never loaded.

        Returns None when name is not a project module.
        """
        rec = self.records.get(name)
        if rec is None:
            if self.locate(name) is None:
                return None
            rec = self.record(name)
            assert rec is not None
        rec.in_service = True
        if rec.state in (STALE, SOURCE) and rec.fault is None:
            self.globals.invalidate()
            self._load(name)
        elif rec.fault is not None and rec.state != BROKEN:
            self.mark_faulty(rec)
        return rec

    def source_for_filename(self, filename: str) -> Optional[text.Source]:
        rec = self.by_filename.get(filename)
        return rec.source if rec is not None else None

    def module_of_object(self, obj: object) -> Optional[str]:
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

    def status(self) -> Dict[str, str]:
        return {name: (OK if rec.state in (OK, SOURCE) else BROKEN) for name, rec in sorted(self.records.items())}


def _importers(names: Set[str], graph: Graph) -> Set[str]:
    """names and every module that imports one of them, transitively."""
    reverse: Dict[str, Set[str]] = {}
    for name, deps in graph.items():
        for dep in deps:
            reverse.setdefault(dep, set()).add(name)
    affected: Set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in affected:
            continue
        affected.add(name)
        stack.extend(reverse.get(name, ()))
    return affected


def _topological(names: Set[str], graph: Graph) -> List[str]:
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


def _register_linecache(filename: str, lines: List[str]) -> None:
    body = [line + "\n" for line in lines]
    linecache.cache[filename] = (sum(len(x) for x in body), None, body, filename)
