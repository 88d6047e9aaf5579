"""Jupyter cells as script statements: the kernel method ``jupyterCell``
(kernel/PROTOCOL.md "Methods"), which ``ripple jupyter kernel`` calls
before it puts a cell into the notebook's script (jupyter/session.go).

- mode ``run``: the cell as plain Python: IPython's own transformer
  (``IPython.core.inputtransformer2``) turns ``%magic``, ``%%cell magic``,
  ``!shell`` and ``x?`` lines into calls of ``get_ipython()`` when IPython
  is importable, else such a cell is refused naming the missing package;
  a cell with statements ends with notebook.CELL_END, after which the
  statement runner shows the cell's last expression as its execute_result
  (unless a ``;`` ends it) and the figures left open, as ipykernel's
  displayhook and inline backend do (notebook.cell_end): the user's lines
  stay as written, so a warning or a traceback quotes them. ``parsed`` is
  the transformed cell (IPython's ``In``). A cell that does not parse
  answers the SyntaxError as Jupyter shows it.
- mode ``isComplete``: ``complete``, ``incomplete`` (with the next
  line's indent) or ``invalid``, by IPython's check when importable, else
  by ``codeop``.
- modes ``begin``, ``finish``, ``expressions``: IPython's ``In``/``Out``
  variables and user_expressions (jupyter_shell.py); ``comm`` and
  ``commInfo``: the frontend's comm messages and comm_info_request
  (jupyter_comm.py).
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Optional, Tuple

from . import jupyter_shell, notebook
from .api import WireObject
from .wire import InvalidParams

# A line IPython's transformer would change: a magic, a shell escape, help,
# or an assignment of a magic's or a shell escape's output (``x = !ls``).
_IPYTHON_SYNTAX = re.compile(r"^\s*(%|!|\?)|\?\s*$|^\s*[\w.]+(\s*,\s*[\w.]+)*\s*=\s*[%!]", re.MULTILINE)


def cell(params: WireObject) -> WireObject:
    """The method: {code, mode?, count?, raw?} -> {source, parsed} | {error}
    | {status, indent}; count (and raw, the cell as typed when code lost
    lines the Go side answers) sets IPython's In for cell count; the other
    modes (the module doc) take their own params."""
    mode = params.get("mode", "run")
    if mode in _SESSION_MODES:
        return _SESSION_MODES[mode](params)
    code = params.get("code")
    if type(code) is not str:
        raise InvalidParams("jupyterCell: code must be a string, got %s" % type(code).__name__)
    if mode == "isComplete":
        status, indent = is_complete(code)
        return {"status": status, "indent": indent}
    if mode != "run":
        raise InvalidParams('jupyterCell: mode must be one of %s, got %r' % (", ".join(_MODES), mode))
    count, raw = params.get("count"), params.get("raw", code)
    if count is not None and (type(count) is not int or type(raw) is not str):
        raise InvalidParams("jupyterCell: count must be an int and raw a string, got %r, %r" % (count, raw))
    answer = _run(code)
    if count is not None:
        # A cell that counts: In and _i* as IPython stores them before it
        # runs (a cell that does not parse too).
        jupyter_shell.HISTORY.begin(count, raw, str(answer.get("parsed", code)))
    return answer


def _run(code: str) -> WireObject:
    try:
        source = transform(code)
    except _NoIPython as e:
        return {"error": {"ename": "ModuleNotFoundError", "evalue": str(e), "traceback": ["ModuleNotFoundError: " + str(e)]}}
    try:
        tree = ast.parse(source, "<cell>")
    except SyntaxError as e:
        return {"error": _syntax_error(e)}
    parsed = source
    if tree.body:
        # The cell's end, where its value and open figures are shown
        # (notebook.cell_end).
        source += ("" if source.endswith("\n") else "\n") + notebook.CELL_END + "\n"
    return {"source": source, "parsed": parsed}


def _comm(params: WireObject) -> WireObject:
    from . import jupyter_comm

    return jupyter_comm.handle(params)


def _comm_info(params: WireObject) -> WireObject:
    from . import jupyter_comm

    return jupyter_comm.info(params)


_SESSION_MODES: Dict[str, Callable[[WireObject], WireObject]] = {
    "begin": jupyter_shell.begin, "finish": jupyter_shell.finish, "expressions": jupyter_shell.expressions,
    "comm": _comm, "commInfo": _comm_info}
_MODES = ["run", "isComplete"] + sorted(_SESSION_MODES)


class _NoIPython(Exception):
    pass


def transform(code: str) -> str:
    """code with IPython's syntax turned into Python (unchanged when it has
    none)."""
    if not _IPYTHON_SYNTAX.search(code):
        return code
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        raise _NoIPython("this cell uses IPython syntax (%magic, !shell or ?help): the kernel's Python needs IPython "
                         "(Debian: apt install python3-ipython; else pip install ipython)") from None
    out: str = TransformerManager().transform_cell(code)
    return out


def _syntax_error(e: SyntaxError) -> WireObject:
    lines = ['  File "<cell>", line %s' % (e.lineno,)]
    if e.text:
        lines.append("    " + e.text.rstrip("\n"))
        if e.offset:
            lines.append("    " + " " * (max(e.offset, 1) - 1) + "^")
    lines.append("%s: %s" % (type(e).__name__, e.msg))
    return {"ename": type(e).__name__, "evalue": e.msg or str(e), "traceback": lines}


def is_complete(code: str) -> Tuple[str, str]:
    """(status, indent) as is_complete_reply has them."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return _codeop_complete(code)
    status, indent = TransformerManager().check_complete(code)
    return status, " " * (indent or 0)


def _codeop_complete(code: str) -> Tuple[str, str]:
    import codeop

    try:
        compiled: Optional[object] = codeop.compile_command(code, "<cell>", "exec")
    except (SyntaxError, OverflowError, ValueError):
        return "invalid", ""
    last = code.rstrip("\n").split("\n")[-1]
    indent = len(last) - len(last.lstrip())
    if compiled is None:
        if last.rstrip().endswith(":"):
            indent += 4
        return "incomplete", " " * indent
    if indent and not code.endswith("\n"):
        # A block compiles, but a console's block ends with an empty line
        # (IPython's rule too): the user may be typing its next line.
        return "incomplete", " " * indent
    return "complete", ""
