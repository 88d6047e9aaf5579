"""IPython's session variables and user_expressions for ``ripple jupyter
kernel`` (jupyterCell modes ``begin``, ``finish`` and ``expressions``,
jupyter_cells.py; called by jupyter/execute.go around every cell).

- ``In`` (``_ih``), ``_i``, ``_ii``, ``_iii`` and ``_iN``: the inputs, as
  IPython's HistoryManager.store_inputs keeps them (``In`` the inputs
  IPython's transformer made, ``_i*`` the raw ones), set by ``begin``
  before the cell runs.
- ``Out`` (``_oh``), ``_``, ``__``, ``___`` and ``_N``: the results, as
  IPython's DisplayHook.update_user_ns keeps them, set by ``finish`` after
  the cell ran, from the value the cell showed as its execute_result: the
  result hook (jupyter_boot._result) records each result under its
  statement, so a result shown again from the cache (its statement did
  not run) names the same value.
- ``_dh``: the directories, the kernel's working directory.

The names live in builtins, not in the notebook's namespace: a script's
globals are made afresh for each run (runner.py), and what a statement
reads from builtins is what Python finds after the script's own names
(a cell that assigns ``_`` shadows it, as in IPython).

``expressions`` evaluates execute_request's user_expressions in the
notebook's namespace after the cell, as ipykernel's
InteractiveShell.user_expressions does: per expression its mime bundle,
or its error.
"""

from __future__ import annotations

import builtins
import os
from typing import Any, Dict, List, Optional

from . import display
from .api import WireObject
from .wire import InvalidParams


class History:
    """The inputs and results of this kernel process (one per process; a
    restart starts empty, as IPython's)."""

    def __init__(self) -> None:
        self.inputs: List[str] = [""]  # In: IPython's input_hist_parsed
        self.outputs: Dict[int, object] = {}  # Out
        self.raw = ["", "", "", ""]  # _iii, _ii, _i, _i00 (the current raw input)
        self.unders: List[object] = ["", "", ""]  # _, __, ___
        # statement id -> the value its result hook last showed: a result
        # shown again from the cache (jupyter/run.go's replay) is the same
        # value. Keeps the values alive, as Out does.
        self.results: Dict[str, object] = {}

    def install(self) -> None:
        """The names, as IPython's shell starts with them."""
        self._set({"In": self.inputs, "_ih": self.inputs, "Out": self.outputs, "_oh": self.outputs,
                   "_dh": [os.getcwd()], "_": "", "__": "", "___": "", "_i": "", "_ii": "", "_iii": ""})

    @staticmethod
    def _set(names: Dict[str, object]) -> None:
        for name, value in names.items():
            setattr(builtins, name, value)

    def begin(self, count: int, raw: str, parsed: str) -> None:
        """Cell count's input (store_inputs)."""
        raw, parsed = raw.rstrip("\n"), parsed.rstrip("\n")
        # Called for the cells that store history, the ones that count:
        # In[count] is this cell's.
        self.inputs.append(parsed)
        self.raw = self.raw[1:] + [raw]
        iii, ii, i, _ = self.raw
        self._set({"_i": i, "_ii": ii, "_iii": iii, "_i%d" % count: raw})

    def record(self, value: object) -> None:
        """The result hook showed value (jupyter_boot._result)."""
        shows = display.current()
        expression = getattr(shows, "expression", None)
        if expression is not None:
            self.results[str(expression)] = value

    def finish(self, count: int, expression: Optional[str]) -> None:
        """Cell count ended showing the result of statement expression
        (None: no result)."""
        if not expression or expression not in self.results:
            return
        value = self.results[expression]
        if value is self.outputs:
            return  # IPython does not put Out into itself
        if len(self.outputs) >= CACHE_SIZE:
            self._cull()
        self.unders = [value] + self.unders[:2]
        self.outputs[count] = value
        self._set({"_": self.unders[0], "__": self.unders[1], "___": self.unders[2], "_%d" % count: value})


    def _cull(self) -> None:
        """Drop the oldest fifth of Out (and their _N), as IPython's
        DisplayHook.cull_cache does when Out is full."""
        for n in sorted(self.outputs)[:max(int(len(self.outputs) * 0.2), 2)]:
            del self.outputs[n]
            if hasattr(builtins, "_%d" % n):
                delattr(builtins, "_%d" % n)


# IPython's DisplayHook.cache_size: Out keeps the last results up to it.
CACHE_SIZE = 1000

HISTORY = History()


def begin(params: WireObject) -> WireObject:
    count, raw, parsed = params.get("count"), params.get("code"), params.get("parsed", params.get("code"))
    if type(count) is not int or type(raw) is not str or type(parsed) is not str:
        raise InvalidParams("jupyterCell begin: count must be an int, code and parsed strings, got %r" % (params,))
    HISTORY.begin(count, raw, parsed)
    return {}


def finish(params: WireObject) -> WireObject:
    count, expression = params.get("count"), params.get("expression")
    if type(count) is not int or (expression is not None and type(expression) is not str):
        raise InvalidParams("jupyterCell finish: count must be an int and expression a string, got %r" % (params,))
    HISTORY.finish(count, expression)
    return {}


def expressions(params: WireObject) -> WireObject:
    """{context, expressions: {name: code}} -> {name: result} as ipykernel
    answers user_expressions."""
    exprs, context = params.get("expressions"), params.get("context")
    if not isinstance(exprs, dict) or type(context) is not str:
        raise InvalidParams("jupyterCell expressions: expressions must be an object and context a string, got %r" % (params,))
    namespace = _namespace(context)
    out: Dict[str, object] = {}
    for name, code in exprs.items():
        out[str(name)] = _evaluate(code, namespace)
    return out


def _namespace(context: str) -> Dict[str, Any]:
    """The notebook's names: its script frame's, over its globals."""
    from . import engine

    found = engine.context_namespaces(context)
    ns: Dict[str, Any] = {"__builtins__": builtins}
    if found is not None:
        local, globs = found
        ns.update(globs)
        ns.update(local)
    return ns


def _evaluate(code: object, namespace: Dict[str, Any]) -> WireObject:
    from . import notebook

    try:
        if type(code) is not str:
            raise TypeError("a user expression must be a string, got %s" % type(code).__name__)
        value = eval(code, dict(namespace))  # "<string>" in a SyntaxError, as IPython's
        return {"status": "ok", "data": notebook.formatted(value), "metadata": {}}
    except Exception as e:  # what the expression raised is its answer
        name = type(e).__name__
        return {"status": "error", "ename": name, "evalue": str(e), "traceback": ["%s: %s\n" % (name, e)]}
