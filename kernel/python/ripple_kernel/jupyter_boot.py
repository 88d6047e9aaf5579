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
- ``get_ipython()`` in builtins, when IPython is importable: one
  InteractiveShell (no history database) whose magics and ``system`` run
  in the namespace of the statement that calls them (the notebook's
  script frame), for the calls IPython's transformer makes of %magics,
  !shell lines and ?help (jupyter_cells.py).
"""

from __future__ import annotations

import builtins
import json
import os
import socket
import sys
from typing import Any, Dict, Optional

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
        bundle = values.mime_bundle(value)
        bundle[RESULT_MIME] = True
        shows.display_bundle(bundle)
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


class _Shell:
    """get_ipython(): IPython's InteractiveShell, made on first use, whose
    user namespace is the calling statement's globals."""

    _shell: Optional[Any] = None

    def _get(self) -> Any:
        if _Shell._shell is None:
            from IPython.core.interactiveshell import InteractiveShell
            from traitlets.config import Config

            cfg = Config()
            cfg.HistoryManager.enabled = False
            shell = InteractiveShell.instance(config=cfg)
            shell.display_pub = _publisher()
            _Shell._shell = shell
        shell = _Shell._shell
        caller = sys._getframe(2)
        shell.user_ns = caller.f_globals
        return shell

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> object:
        if name == "matplotlib":
            # ripple's inline backend draws already (display.py); IPython's
            # would replace it with one that needs ipykernel's events.
            return None
        return self._get().run_line_magic(name, line, _stack_depth=_stack_depth + 1)

    def run_cell_magic(self, name: str, line: str, cell: str) -> object:
        return self._get().run_cell_magic(name, line, cell)

    def system(self, cmd: str) -> object:
        return self._get().system(cmd)

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> object:
        return self._get().getoutput(cmd, split=split, depth=depth + 1)

    def __getattr__(self, name: str) -> object:
        return getattr(self._get(), name)


def _publisher() -> Any:
    """A DisplayPublisher for the shell get_ipython() makes: its displays
    and clear_output go where ripple's display() sends them (display.py)."""
    from IPython.core.displaypub import DisplayPublisher

    from . import display

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
    shell = _Shell()
    setattr(builtins, "get_ipython", lambda: shell)


install()
