"""IPython's machinery for notebooks run as scripts (Go package notebook).

A notebook's IPython syntax reaches the kernel rewritten, line for line,
into the calls IPython's own input transformers make:
``get_ipython().run_line_magic(name, line)``, ``run_cell_magic(name, line,
cell)``, ``system(cmd)`` and ``getoutput(cmd)``. The runner gives a
notebook's script namespace this module's ``get_ipython`` (as IPython puts
it in builtins), so that those calls, and notebook code calling
``get_ipython()`` itself, run on a real IPython shell where the interpreter
has IPython, bound to the notebook's namespace at each call.

Without IPython, ``get_ipython()`` raises IPythonMissing naming the
interpreter and what installs IPython, so the failing cell says why.

The same ``get_ipython`` serves ``ripple jupyter kernel`` (jupyter_boot.py
puts it in builtins), whose cells reach the kernel rewritten the same way
(jupyter_cells.py).

The shell is IPython's InteractiveShell made without ``instance()``: it is
not IPython's global singleton, so ``IPython.display.display`` and
``clear_output`` keep showing under the running statement (display.py),
and its history is off (nothing written under ~/.ipython). Its display
publisher shows under the running statement too. ``%matplotlib`` does
nothing: ripple's inline backend is already in use (display.py).

At the end of each cell (cell_end, called by the statement runner after a
notebook's top-level statement), the figures left open are shown under
that statement and closed, as IPython's inline backend shows them after
each cell: a notebook's plots appear without plt.show().
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import Any, Dict, Optional, Tuple

from . import display, values

# The separator the Go derivation puts before each cell (package notebook).
CELL_SEPARATOR = "# %% [cell "
# The script of ``ripple jupyter kernel``'s cells (jupyter/cells.go's
# cellsFile; its path's end): its cells end with CELL_END (jupyter_cells.py),
# so that cell_end shows their figures as well.
JUPYTER_SCRIPT = "/ripple_cells.py"
CELL_END = CELL_SEPARATOR + "end]"
# The mark of a displayData bundle that is a cell's execute_result (the Go
# side, jupyter/run.go and batch/notebooks_result.go, strips it).
RESULT_MIME = "application/vnd.ripple.execute-result"

# Whether this process is a kernel of ``ripple jupyter kernel``
# (jupyter_boot.py sets it): get_ipython().kernel is its comm machinery's.
JUPYTER_KERNEL = False

# The shell, made on first use; one per kernel process.
_SHELLS: Dict[str, Any] = {}  # Any: IPython is untyped; its shell passes through


class IPythonMissing(ModuleNotFoundError):
    """A notebook used IPython syntax in an interpreter without IPython."""


def _shell() -> Any:
    """IPython's InteractiveShell of this kernel (made on first use; the
    module doc says what it is and is not)."""
    shell = _SHELLS.get("shell")
    if shell is not None:
        return shell
    try:
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
    except ImportError as exc:
        raise IPythonMissing(
            "IPython magics, !shell lines and get_ipython() in notebooks need IPython, which %s cannot import (%s): "
            "install it (pip install ipython, or Debian's python3-ipython)" % (sys.executable, exc)
        ) from None
    config = Config()
    config.HistoryManager.enabled = False
    # Not InteractiveShell.instance(): while no shell is IPython's
    # singleton, IPython's display() and clear_output() are display.py's,
    # which show under the running statement in every kernel and send
    # Jupyter's clear_output as CLEAR_MIME; IPython.get_ipython() stays
    # None, as in a plain interpreter, so libraries do not take the kernel
    # for a terminal IPython (tqdm, matplotlib's REPL hooks). The Jupyter
    # kernel (jupyter_boot.py) needs nothing more: its pager is the Go
    # side's and its displays are display.py's.
    shell = InteractiveShell(config=config)
    # What uses the shell's own publisher (get_ipython().display_pub, a
    # magic publishing through it) shows under the running statement too.
    shell.display_pub = _publisher()
    # ripple's inline backend draws already (display.py); IPython's would
    # replace it with one that needs ipykernel's events.
    shell.register_magic_function(lambda line: None, "line", "matplotlib")
    _SHELLS["shell"] = shell
    return shell


def _publisher() -> Any:
    """A DisplayPublisher whose displays and clear_output go where ripple's
    display() sends them (display.py)."""
    from IPython.core.displaypub import DisplayPublisher

    class Publisher(DisplayPublisher):
        def publish(self, data: Dict[str, object], metadata: object = None, source: object = None,
                    *, transient: object = None, update: bool = False) -> None:
            shows = display.current()
            if shows is not None:
                shows.display_bundle(dict(data))

        def clear_output(self, wait: bool = False) -> None:
            shows = display.current()
            if shows is not None:
                shows.display_bundle({display.CLEAR_MIME: {"wait": bool(wait)}})

    return Publisher()


class NotebookShell:
    """IPython's shell seen from one namespace: each attribute read binds
    the shell's user namespace to it first, then answers the shell's own.

    A method is the shell's bound method, so ``get_ipython().system(cmd)``,
    ``getoutput``, ``run_line_magic`` and ``run_cell_magic`` are called
    straight from the caller's frame, as in IPython: their var_expand of
    ``{name}`` and ``$name`` sees the caller's locals (a !line in a
    function), once, and %time's locals are the caller's. A wrapper method
    in between would put its own frame there instead."""

    def __init__(self, shell: Any, namespace: Dict[str, Any]) -> None:
        self._shell = shell
        self._namespace = namespace

    def __getattr__(self, name: str) -> Any:
        if name == "kernel" and JUPYTER_KERNEL:
            from . import jupyter_comm

            # As ipykernel's shell has it: user code registers comm
            # targets on get_ipython().kernel.comm_manager.
            return jupyter_comm.KernelProxy()
        self._shell.user_ns = self._namespace
        return getattr(self._shell, name)


def get_ipython(namespace: Optional[Dict[str, Any]] = None) -> NotebookShell:
    """The IPython shell of the caller: bound to its globals, or namespace
    (a notebook's script namespace has it as IPython's builtin; the
    Jupyter kernel puts it in builtins, jupyter_boot.py)."""
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    return NotebookShell(_shell(), namespace)


def ends_cell(filename: str, end_line: int) -> bool:
    """Whether a statement of a notebook's script ending at end_line is the
    last of its cell: only blank lines and comments follow it up to the
    next cell's separator or the end of the script."""
    lines = linecache.getlines(filename)
    for line in lines[end_line:]:
        text = line.strip()
        if text.startswith(CELL_SEPARATOR):
            return True
        if text and not text.startswith("#"):
            return False
    return True


def result_mimes(value: object) -> Optional[Tuple[str, ...]]:
    """The rich types of value's execute_result, as ipykernel's inline
    backend formats matplotlib's objects: a Figure as PNG only, others
    (Axes, a list of lines) by their repr; None: all of them."""
    items: Any = value if type(value) in (list, tuple) else (value,)
    if not items or not all(type(v).__module__.startswith("matplotlib.") for v in items):
        return None
    figure = sys.modules.get("matplotlib.figure")
    return ("image/png",) if figure is not None and isinstance(value, figure.Figure) else ()


def show_result(value: object) -> None:
    """Show value as the cell's execute_result: a displayData bundle marked
    RESULT_MIME (the Go side strips the mark), all the rich types the
    value offers (text/html of a DataFrame, image/png, ...)."""
    shows = display.current()
    if value is None or shows is None:
        return
    bundle = formatted(value, result_mimes(value))
    bundle[RESULT_MIME] = True
    shows.display_bundle(bundle)


def formatted(value: object, mimes: Optional[Tuple[str, ...]] = None) -> Dict[str, object]:
    """value's mime bundle as IPython's display formatter gives it: its
    text/plain is IPython's pretty printer's where IPython is importable
    (a long list on several lines, ``<module.Class at 0x...>`` for an
    object with the default repr), as ipykernel shows it."""
    bundle = values.mime_bundle(value, mimes)
    try:
        from IPython.lib.pretty import pretty
    except ImportError:
        return bundle
    try:
        # IPython's PlainTextFormatter shows up to 1000 items of a sequence.
        bundle["text/plain"] = pretty(value, max_seq_length=1000)[:100000]
    except Exception:
        pass  # its repr, as values.mime_bundle made it
    return bundle


def cell_end(filename: str, end_line: int, value: object = None) -> None:
    """At a notebook's statement ending at end_line (the runner calls it
    after each top-level one), when it ends its cell: show value, the
    statement's value when it is an expression, as the cell's
    execute_result unless a ";" silences it (a matplotlib Figure there is
    shown as IPython's displayhook shows it in a notebook run as a script:
    its PNG, the text/plain being the statement's value), then the figures
    left open (the module doc)."""
    if not ends_cell(filename, end_line):
        return
    jupyter = filename.endswith(JUPYTER_SCRIPT)
    # A notebook's value is its statement's value on the page and in
    # ripple watch; `ripple run --notebooks` asks for it as the cell's
    # execute_result too (batch/notebooks.go).
    results = jupyter or os.environ.get("RIPPLE_NOTEBOOK_RESULTS") == "1"
    lines = linecache.getlines(filename)
    silenced = 0 < end_line <= len(lines) and lines[end_line - 1].split("#")[0].rstrip().endswith(";")
    figure = sys.modules.get("matplotlib.figure")
    is_figure = figure is not None and isinstance(value, figure.Figure)
    if value is not None and not silenced and results and (jupyter or not is_figure):
        if jupyter:
            from . import jupyter_shell

            jupyter_shell.HISTORY.record(value)
        show_result(value)
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    shows = display.current()
    if shows is not None and is_figure and not silenced and not jupyter:
        bundle = values.mime_bundle(value, ("image/png",))
        bundle.pop("text/plain", None)  # the statement's value is the text, as in an execute_result
        shows.display_bundle(bundle)
        pyplot.close(value)  # shown: not again with the open ones
    backend = getattr(pyplot, "get_backend", lambda: "")()
    if display.BACKEND.endswith(str(backend)) and getattr(pyplot, "get_fignums", list)():
        pyplot.show()
