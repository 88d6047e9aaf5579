"""What a kernel of ``ripple jupyter kernel`` adds at start (the module is
preloaded: kernel.Config.Preload, from jupyter/session.go).

- The working directory: the notebook's (RIPPLE_JUPYTER_CWD), as
  ipykernel's, and that directory on sys.path right after the project
  root (the root is ripple's state directory of the notebook, holding the
  cells' script).
- ``__ripple_result__(value)`` in builtins: value, for the cells an
  earlier ripple wrapped in it (cells now leave their last expression as
  written: notebook.cell_end shows it, and so the wrapped one).
- IPython's ``In``, ``Out``, ``_``, ... (jupyter_shell.py) and the comm
  package's comms (jupyter_comm.py).
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
from typing import Any, Dict, Optional

from . import notebook


class StdinNotImplementedError(RuntimeError):
    """input() in a request whose frontend does not allow stdin."""


def _result(value: object) -> object:
    """The result hook of the cells an earlier ripple wrote (a restart of
    its state directory): the statement's value, which the statement
    runner shows as the cell's result, as it shows a cell's last
    expression now left as written (notebook.cell_end)."""
    return value


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
    notebook.JUPYTER_KERNEL = True
    # IPython's In, Out, _ and friends (jupyter_shell.py), and the comm
    # package's comms when it is importable (jupyter_comm.py).
    from . import jupyter_comm, jupyter_shell

    jupyter_shell.HISTORY.install()
    jupyter_comm.install()


install()
