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

The shell is IPython's InteractiveShell made without ``instance()``: it is
not IPython's global singleton, so ``IPython.display.display`` keeps
showing under the running statement (display.py), and its history is off
(nothing written under ~/.ipython). ``%matplotlib`` does nothing: ripple's
inline backend is already in use (display.py).

At the end of each cell (cell_end, called by the statement runner after a
notebook's top-level statement), the figures left open are shown under
that statement and closed, as IPython's inline backend shows them after
each cell: a notebook's plots appear without plt.show().
"""

from __future__ import annotations

import linecache
import sys
from typing import Any, Dict, Optional

from . import display, values

# The separator the Go derivation puts before each cell (package notebook).
CELL_SEPARATOR = "# %% [cell "
# The script of ``ripple jupyter kernel``'s cells (jupyter/cells.go's
# cellsFile; its path's end): its cells end with CELL_END (jupyter_cells.py),
# so that cell_end shows their figures as well.
JUPYTER_SCRIPT = "/ripple_cells.py"
CELL_END = CELL_SEPARATOR + "end]"

# The shell, made on first use; one per kernel process.
_SHELLS: Dict[str, Any] = {}  # Any: IPython is untyped; its shell passes through


class IPythonMissing(ModuleNotFoundError):
    """A notebook used IPython syntax in an interpreter without IPython."""


def _shell() -> Any:
    """IPython's InteractiveShell of this kernel (made on first use)."""
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
    shell = InteractiveShell(config=config)
    _SHELLS["shell"] = shell
    return shell


class NotebookShell:
    """IPython's shell seen from one notebook namespace: each call binds the
    shell's user namespace to it first."""

    def __init__(self, shell: Any, namespace: Dict[str, Any]) -> None:
        self._shell = shell
        self._namespace = namespace

    def _bind(self) -> None:
        self._shell.user_ns = self._namespace

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1) -> Any:
        """IPython's run_line_magic in the notebook's namespace."""
        if magic_name == "matplotlib":
            return None  # ripple's inline backend shows figures already
        self._bind()
        return self._shell.run_line_magic(magic_name, line, _stack_depth=_stack_depth + 1)

    def run_cell_magic(self, magic_name: str, line: str, cell: str) -> Any:
        """IPython's run_cell_magic in the notebook's namespace."""
        self._bind()
        return self._shell.run_cell_magic(magic_name, line, cell)

    def system(self, cmd: str) -> None:
        """``!cmd``: IPython's system, {name} and $name expanded from the caller."""
        self._bind()
        self._shell.system(self._shell.var_expand(cmd, depth=1))

    def getoutput(self, cmd: str) -> Any:
        """``x = !cmd``: the command's output lines (IPython's SList)."""
        self._bind()
        return self._shell.getoutput(self._shell.var_expand(cmd, depth=1))

    def __getattr__(self, name: str) -> Any:
        self._bind()
        return getattr(self._shell, name)


def get_ipython(namespace: Optional[Dict[str, Any]] = None) -> NotebookShell:
    """The IPython shell of the calling notebook (its globals, or namespace)."""
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


def cell_end(filename: str, end_line: int, value: object = None) -> None:
    """Show the cell's figures when a notebook's statement ending at
    end_line ends its cell (the module doc). value is the statement's value
    when it is an expression: a matplotlib Figure there is shown as
    IPython's displayhook shows it (its PNG; the text/plain is the
    statement's value), unless a ";" silences it."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or not ends_cell(filename, end_line):
        return
    shows = display.current()
    figure = sys.modules.get("matplotlib.figure")
    lines = linecache.getlines(filename)
    silenced = 0 < end_line <= len(lines) and lines[end_line - 1].split("#")[0].rstrip().endswith(";")
    if shows is not None and figure is not None and isinstance(value, figure.Figure) and not silenced:
        bundle = values.mime_bundle(value, ("image/png",))
        bundle.pop("text/plain", None)  # the statement's value is the text, as in an execute_result
        shows.display_bundle(bundle)
        pyplot.close(value)  # shown: not again with the open ones
    backend = getattr(pyplot, "get_backend", lambda: "")()
    if display.BACKEND.endswith(str(backend)) and getattr(pyplot, "get_fignums", list)():
        pyplot.show()
