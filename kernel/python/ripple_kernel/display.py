"""Displays of user code: ``ripple.display``, IPython's ``display()`` and
matplotlib's ``plt.show()`` shown under the running statement
(PROTOCOL.md 7.2, 7.3).

- ``ripple`` is served by DisplayFinder, last on ``sys.meta_path``, when
  nothing else on sys.path provides it (a project's or an installed
  ``ripple`` wins);
- IPython's ``display()``, when user code imports IPython (if installed),
  is patched right after its module runs (IPythonHook, first on
  ``sys.meta_path``);
- matplotlib's backend is ripple_kernel.mpl_backend: install() sets
  ``MPLBACKEND=module://ripple_kernel.mpl_backend`` unless the user's
  environment has one (matplotlib imports what follows ``module://`` with
  importlib, and the package's own loader serves it).

The engine (an Engine, a Shows here) is what the displays go to; the
backend finds it through current().
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import TYPE_CHECKING, Any, Dict, Optional, Protocol, Sequence, cast

if TYPE_CHECKING:
    import importlib.abc  # not at run time: its import costs a kernel start ~10 ms

BACKEND = "module://ripple_kernel.mpl_backend"
_IPYTHON_DISPLAY = "IPython.core.display_functions"


class Shows(Protocol):
    """What displays are sent to (the Engine)."""

    def display(self, *objs: object, mimes: Optional[Sequence[str]] = None) -> None:
        """displayData of each object, attributed to the running statement."""

    def display_bundle(self, bundle: Dict[str, object]) -> None:
        """displayData of a ready mime bundle."""


def install(shows: Shows) -> Optional[str]:
    """Install the display finders for shows (replacing earlier ones); answer
    the MPLBACKEND value set (None when the user's environment has one),
    which uninstall takes back."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, (DisplayFinder, IPythonHook))]
    sys.meta_path.append(DisplayFinder(shows))
    sys.meta_path.insert(0, IPythonHook(shows))
    sys.modules.pop("ripple", None)
    if "MPLBACKEND" in os.environ:
        return None  # the user's choice
    os.environ["MPLBACKEND"] = BACKEND
    return BACKEND


def uninstall(backend: Optional[str]) -> None:
    """Remove the display finders, and MPLBACKEND when install set it to backend."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, (DisplayFinder, IPythonHook))]
    if backend is not None and os.environ.get("MPLBACKEND") == backend:
        del os.environ["MPLBACKEND"]


def current() -> Optional[Shows]:
    """What displays go to in this kernel (None once the engine is closed)."""
    for finder in sys.meta_path:
        if isinstance(finder, DisplayFinder):
            return finder.shows
    return None


class DisplayFinder:
    """Serves the module ``ripple`` (``ripple.display(obj)``); see the module doc."""

    def __init__(self, shows: Shows) -> None:
        self.shows = shows

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname == "ripple":
            return importlib.util.spec_from_loader("ripple", cast("importlib.abc.Loader", self))
        return None

    def invalidate_caches(self) -> None:
        pass

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        shows = self.shows

        def display(*objs: object) -> None:
            """Show each object under the running statement (its mime bundle)."""
            shows.display(*objs)

        setattr(module, "display", display)
        module.__doc__ = "ripple's helpers for code running in a ripple kernel."


# IPython's clear_output() without an initialised shell: a displayData
# whose bundle is only this mime type, {"wait": bool}; ripple jupyter kernel
# sends it as Jupyter's clear_output (other clients may ignore it).
CLEAR_MIME = "application/vnd.ripple.clear-output+json"


def _clear_output(original: Any, shows: Shows) -> Any:
    def clear_output(wait: bool = False) -> None:
        from IPython.core.interactiveshell import InteractiveShell

        if InteractiveShell.initialized():
            original(wait)
            return
        shows.display_bundle({CLEAR_MIME: {"wait": bool(wait)}})

    clear_output.__doc__ = original.__doc__
    return clear_output


class IPythonHook:
    """When user code imports IPython (if installed), its display() is
    made to show objects under the running statement, as in a notebook
    (IPython's own, without an initialised shell, prints their repr). The
    module is patched right after it runs, before IPython.display and
    IPython.core.display import the function from it."""

    def __init__(self, shows: Shows) -> None:
        self.shows = shows

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[types.ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
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
        spec.loader = _PatchingLoader(spec.loader, self.shows)  # type: ignore[assignment]  # a loader by protocol
        return spec

    def invalidate_caches(self) -> None:
        pass


class _PatchingLoader:
    """IPython's loader of display_functions, with display() replaced after it runs."""

    def __init__(self, loader: Any, shows: Shows) -> None:
        self.loader = loader  # any importlib loader: attributes pass through
        self.shows = shows

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        module: Optional[types.ModuleType] = self.loader.create_module(spec)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        original = getattr(module, "display")
        shows = self.shows

        def display(*objs: object, include: object = None, exclude: object = None, metadata: object = None,
                    transient: object = None, display_id: object = None, raw: bool = False, clear: bool = False,
                    **kwargs: object) -> object:
            from IPython.core.interactiveshell import InteractiveShell

            if InteractiveShell.initialized():
                return original(*objs, include=include, exclude=exclude, metadata=metadata, transient=transient,
                                display_id=display_id, raw=raw, clear=clear, **kwargs)
            if raw:
                for bundle in objs:
                    shows.display_bundle(dict(bundle))  # type: ignore[call-overload]  # raw: mime bundles
                return None
            shows.display(*objs)
            return None

        display.__doc__ = original.__doc__
        setattr(display, "__wrapped__", original)
        setattr(module, "display", display)
        original_clear = getattr(module, "clear_output", None)
        if original_clear is not None:
            setattr(module, "clear_output", _clear_output(original_clear, shows))

    def __getattr__(self, name: str) -> object:
        return getattr(self.loader, name)
