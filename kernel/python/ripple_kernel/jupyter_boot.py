"""What a kernel of ``ripple jupyter kernel`` adds at start (the module is
preloaded: kernel.Config.Preload, from jupyter/session.go).

- The working directory: the notebook's (RIPPLE_JUPYTER_CWD), as
  ipykernel's, and that directory on sys.path right after the project
  root (the root is ripple's state directory of the notebook, holding the
  cells' script).
- ``__ripple_result__(value)`` in builtins: the cell's last expression,
  shown as Jupyter's execute_result (a displayData bundle the Go side
  recognises by RESULT_MIME, which it strips); None shows nothing, as in
  IPython.
- ``input()`` and ``getpass.getpass()`` ask the frontend: a line of JSON
  to the Go side's stdin socket (RIPPLE_JUPYTER_STDIN), which sends
  Jupyter's input_request and answers with the input_reply's value.
- ``get_ipython()`` in builtins: notebook.get_ipython, IPython's shell
  (one per kernel, not IPython's singleton, its displays shown as
  ripple's) bound to the caller's namespace (the notebook's script
  frame), for the calls IPython's transformer makes of %magics and
  !shell lines (jupyter_cells.py); IPythonMissing names the interpreter
  when IPython is absent.
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import sys
from typing import Any, Dict, Optional, Tuple

from . import notebook

RESULT_MIME = "application/vnd.ripple.execute-result"


class StdinNotImplementedError(RuntimeError):
    """input() in a request whose frontend does not allow stdin."""


def _result(value: object) -> object:
    """The cell's last expression: its mime bundle as the execute_result."""
    if value is None:
        return None
    from . import display, values

    shows = display.current()
    if shows is not None:
        bundle = values.mime_bundle(value, _result_mimes(value))
        bundle[RESULT_MIME] = True
        shows.display_bundle(bundle)
    return value


def _result_mimes(value: object) -> Optional[Tuple[str, ...]]:
    """The rich types of value's execute_result, as ipykernel's inline
    backend formats matplotlib's objects: a Figure as PNG only, others
    (Axes, a list of lines) by their repr; None: all of them."""
    items: Any = value if type(value) in (list, tuple) else (value,)
    if not items or not all(type(v).__module__.startswith("matplotlib.") for v in items):
        return None
    figure = sys.modules.get("matplotlib.figure")
    return ("image/png",) if figure is not None and isinstance(value, figure.Figure) else ()


def _ask(prompt: object, password: bool) -> str:
    path = os.environ.get("RIPPLE_JUPYTER_STDIN", "")
    if not path:
        raise StdinNotImplementedError("input() needs a frontend: this kernel has no stdin channel")
    sys.stdout.flush()
    sys.stderr.flush()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall(json.dumps({"prompt": str(prompt), "password": password}).encode("utf-8") + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    answer: Dict[str, Any] = json.loads(buf.decode("utf-8") or "{}")
    if "error" in answer:
        raise StdinNotImplementedError(str(answer["error"]))
    return str(answer.get("value", ""))


def _input(prompt: object = "") -> str:
    return _ask(prompt, False)


def _getpass(prompt: str = "Password: ", stream: Optional[object] = None) -> str:
    return _ask(prompt, True)


def install() -> None:
    cwd = os.environ.get("RIPPLE_JUPYTER_CWD", "")
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)
        if cwd not in sys.path:
            sys.path.insert(1, cwd)
    setattr(builtins, "__ripple_result__", _result)
    builtins.input = _input
    import getpass

    getpass.getpass = _getpass
    # IPython's shell for the calls IPython's transformer makes of
    # %magics and !shell lines, as for notebooks run as scripts.
    setattr(builtins, "get_ipython", notebook.get_ipython)


install()
