"""The import hooks of project modules: a finder first on ``sys.meta_path``
that serves them from the module table (modules.py), and their loader.

``import pkg.mod``, ``from pkg import mod`` and relative imports all load
the table's text. Every load goes through ProjectLoader.exec_module: it
parses (reusing the previous tree where an edit allows), registers the
text with linecache so tracebacks show the running text, runs the top
level inside ``kernel.user_code()`` under the compile timeout, and records
the outcome on the module's record: ``ok``, or ``broken`` with a
Diagnostic. A broken module is not served (importing it raises ImportError
naming it) until a compile fixes it. A load cut short by an interrupt
leaves the module ``stale``: it is loaded again when next needed.

The finder and the loader implement the import protocol directly rather
than subclassing importlib.abc, whose import (importlib.resources,
tempfile, ...) costs a kernel start about 10 ms.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import types
from typing import TYPE_CHECKING, Optional, Sequence, cast

from .records import BROKEN, OK, STALE

if TYPE_CHECKING:
    import importlib.abc

    from .modules import ModuleTable


def tag_module(exc: BaseException, name: str) -> None:
    """Mark exc as raised by the import of project module name (the
    importers' diagnostics name it), unless an inner import marked it."""
    if getattr(exc, "_ripple_module", None) is None:
        try:
            setattr(exc, "_ripple_module", name)
        except Exception:
            pass


def _broken(name: str, message: str) -> ImportError:
    exc = ImportError("project module %s is broken: %s" % (name, message), name=name)
    setattr(exc, "_ripple_module", name)
    return exc


class ProjectFinder:
    """Serves project modules from the table (see the module doc)."""

    def __init__(self, table: ModuleTable) -> None:
        self.table = table
        self.loader = ProjectLoader(table)

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        table = self.table
        rec = table.records.get(fullname)
        if rec is not None and rec.state == BROKEN:
            diag = rec.diagnostic or {}
            raise _broken(fullname, diag.get("message", "it failed to load"))
        where = table.locate(fullname)
        if where is None:
            return None
        path_rel, filename, is_package = where
        locations = [os.path.dirname(filename)] if is_package else None
        return importlib.util.spec_from_file_location(
            fullname, filename, loader=cast("importlib.abc.Loader", self.loader), submodule_search_locations=locations
        )

    def invalidate_caches(self) -> None:
        pass


class ProjectLoader:
    """Loads a project module from the table's text (see the module doc)."""

    def __init__(self, table: ModuleTable) -> None:
        self.table = table

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def get_source(self, fullname: str) -> Optional[str]:
        rec = self.table.records.get(fullname)
        return rec.source.text if rec is not None and rec.source is not None else None

    def exec_module(self, module: types.ModuleType) -> None:
        table = self.table
        name = module.__name__
        rec = table.record(name)
        if rec is None:
            raise ImportError("no project module named %s" % name, name=name)
        if rec.fault is not None:
            table.mark_faulty(rec)
            raise _broken(name, rec.fault.get("message", ""))
        rec.in_service = True
        rec.state = STALE
        rec.module = None
        table.globals.invalidate()
        emit = table.kernel.emit_progress
        emit({"type": "load", "module": name, "phase": "start"})
        try:
            table.parse(rec)
            rec.imports = table.imports_of(rec)
            code, lazy = table.compile_module(rec, module.__dict__)
            module.__file__ = rec.filename
            with table.kernel.user_code(), table.timer.running(name):
                exec(code, module.__dict__)
            table.lazy.attach(lazy, module.__dict__)
        except KeyboardInterrupt:
            rec.state = STALE
            emit({"type": "load", "module": name, "phase": "end"})
            raise
        except BaseException as exc:
            table.mark_broken(rec, exc)
            tag_module(exc, name)
            emit({"type": "load", "module": name, "phase": "end"})
            raise
        emit({"type": "load", "module": name, "phase": "end"})
        rec.state = OK
        rec.diagnostic = None
        rec.module = module
