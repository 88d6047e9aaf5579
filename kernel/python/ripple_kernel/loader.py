"""The one loader of the kernel's own package, with a code cache.

The kernel's directory is never on ``sys.path`` (user code must not see
ripple's modules), so ``ripple_kernel`` is imported through a finder of its
own on ``sys.meta_path`` that serves exactly that package from the install
directory. Its loader keeps each module's compiled code in the install
directory's ``__pycache__``: Python's own bytecode cache is often off where
ripple runs (``PYTHONDONTWRITEBYTECODE``, and it must stay off for the
user's project), while the install directory is ripple's and named after
its files' content, so caching there costs nothing and saves ~25 ms of
every kernel start. A cache entry is keyed by the source's length and CRC
as a guard against a damaged or foreign file.

The bootstrap (kernel/kernel.go) executes this file's text once, before
the package exists, and calls ``install(directory)``; everything else
imports normally (``from ripple_kernel import engine``).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import marshal
import os
import sys
import types
import zlib
from typing import Optional, Sequence

PACKAGE = "ripple_kernel"


class _CachingLoader(importlib.machinery.SourceFileLoader):
    """SourceFileLoader whose code comes from ripple's marshal cache."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        with open(path, "rb") as f:
            src = f.read()
        stamp = b"%d:%d:" % (len(src), zlib.crc32(src))
        base = os.path.splitext(os.path.basename(path))[0]
        cache = os.path.join(
            os.path.dirname(path), "__pycache__", "%s.%s.ripple" % (base, sys.implementation.cache_tag)
        )
        try:
            with open(cache, "rb") as f:
                data = f.read()
            if data.startswith(stamp):
                code = marshal.loads(data[len(stamp):])
                if isinstance(code, types.CodeType):
                    return code
        except (OSError, ValueError, EOFError, TypeError):
            pass
        code = compile(src, path, "exec", dont_inherit=True)
        try:
            os.makedirs(os.path.dirname(cache), exist_ok=True)
            tmp = "%s.%d.tmp" % (cache, os.getpid())
            with open(tmp, "wb") as f:
                f.write(stamp + marshal.dumps(code))
            os.replace(tmp, cache)
        except OSError:
            pass  # a read-only install: compile every time
        return code


class PackageFinder:
    """Finds ``ripple_kernel`` and its modules in one directory, and
    nothing else. A finder of sys.meta_path needs only find_spec: not
    subclassing importlib.abc.MetaPathFinder spares every kernel start
    that module's import (importlib.resources, pathlib...: ~10 ms)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def find_spec(
        self,
        fullname: str,
        path: Optional[Sequence[str]] = None,
        target: Optional[types.ModuleType] = None,
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != PACKAGE and not fullname.startswith(PACKAGE + "."):
            return None
        parts = fullname.split(".")
        base = os.path.join(self.directory, *parts)
        if os.path.isdir(base):
            init = os.path.join(base, "__init__.py")
            return importlib.util.spec_from_file_location(
                fullname, init, loader=_CachingLoader(fullname, init), submodule_search_locations=[base]
            )
        if os.path.isfile(base + ".py"):
            return importlib.util.spec_from_file_location(
                fullname, base + ".py", loader=_CachingLoader(fullname, base + ".py")
            )
        return None


def install(directory: str) -> None:
    """Serve ``ripple_kernel`` from directory (the one holding the package
    folder). Idempotent: a finder for the same directory is not added
    twice."""
    for finder in sys.meta_path:
        if isinstance(finder, PackageFinder) or type(finder).__name__ == "PackageFinder":
            if getattr(finder, "directory", None) == directory:
                return
    sys.meta_path.insert(0, PackageFinder(directory))


def uninstall() -> None:
    """Take the package's finder off ``sys.meta_path``: a kernel that runs
    pytest is a plain interpreter, and pytest's plugins and the user's
    tests must not meet ripple's import machinery. Modules already imported
    stay; one of the package imported later comes through Python's own path
    finder (the package's ``__path__``), without the code cache."""
    sys.meta_path[:] = [f for f in sys.meta_path if not _is_ours(f)]


def _is_ours(finder: object) -> bool:
    # The bootstrap runs this file's text outside the package, so its
    # PackageFinder is another class of the same name.
    t = type(finder)
    return t.__name__ == "PackageFinder" and t.__module__ in (__name__, "ripple_kernel_bootstrap")

