"""What the kernel knows of one project module: its record and its states,
and the checks of module names and paths a compile request gives.

A record is owned by the ModuleTable (modules.py) and changed only by it,
its loader (importer.py) and nothing else; the run reads it.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, FrozenSet, List, Optional, Tuple

from .api import WireObject

if TYPE_CHECKING:
    from .text import Source
    from .versions import TopStmt

# The states of a record:
# OK: imported, rec.module is the live module;
# BROKEN: its import failed (rec.diagnostic says why) or it is faulty;
# STALE: not imported since its text changed (or never): loaded when needed;
# SOURCE: a script's module (PROTOCOL.md 7.1, compile's ``scripts``): its
#   text is parsed, its top level is not run as an import; it runs as a
#   frame's statements instead. Loaded like a STALE module when something
#   imports it.
OK, BROKEN, STALE = "ok", "broken", "stale"
SOURCE = "source"

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


class ModuleError(ValueError):
    """A compile request names a module or path that cannot be a project module."""


@dataclass(eq=False)
class ModuleRecord:
    """The kernel's knowledge of one project module."""

    name: str
    path: str  # POSIX path relative to the root
    filename: str  # absolute
    is_package: bool
    source: Optional[Source] = None  # the text last parsed
    state: str = STALE
    diagnostic: Optional[WireObject] = None
    module: Optional[types.ModuleType] = None  # the live module object when state == OK
    imports: FrozenSet[str] = frozenset()  # project modules this one imports (static)
    top: Optional[List[TopStmt]] = None  # cached module-level analysis of self.source
    # in_service: the module was imported at least once (or a compile's
    # `load` asked for it); a compile reloads only such modules, the
    # others are imported when first needed (PROTOCOL.md 5.1: a module
    # no context needs is not imported).
    in_service: bool = False
    # fault: the diagnostic the Go side sent for a module whose import
    # hung or killed a kernel (compile's `faulty`): it is not imported
    # until its text changes; importing it raises ImportError.
    fault: Optional[WireObject] = field(default=None)


def resolve(rec: ModuleRecord, level: int, module: str) -> Optional[str]:
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


def module_entry(entry: object) -> Tuple[str, str, str]:
    """(name, path, source) of one module of a compile request, checked."""
    if not isinstance(entry, dict):
        raise ModuleError("compile: each module must be an object {name, path, source}, got %r" % (type(entry).__name__,))
    name = entry.get("name")
    path = entry.get("path")
    source = entry.get("source")
    if not isinstance(name, str) or not NAME.match(name):
        raise ModuleError("compile: module name %r is not a dotted module name" % (name,))
    # A notebook (.ipynb) is a module too: its source is the Python of its
    # code cells, derived by the engine (Go package notebook).
    if not isinstance(path, str) or not path.endswith((".py", ".ipynb")) or path.startswith("/") or "\\" in path:
        raise ModuleError("compile: module %s: path %r is not a relative POSIX path to a .py or .ipynb file" % (name, path))
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ModuleError("compile: module %s: path %r must stay inside the project root" % (name, path))
    expected = name.split(".")
    if parts[-1] == "__init__.py":
        got = parts[:-1]
    else:
        got = parts[:-1] + [parts[-1].rpartition(".")[0]]
    if got != expected:
        raise ModuleError("compile: module %s does not match its path %r" % (name, path))
    if not isinstance(source, str):
        raise ModuleError("compile: module %s: source must be a string" % name)
    return name, path, source
