"""The expression ids of a module's functions, read from its source alone.

The engine asks this (one short process per module version, run by the
kernels' interpreter, so the same ast and the same label rules as the
kernel's) to answer a call naming an expression id the same way whether or
not the frame has run yet (PROTOCOL.md 7.6: an unknown id is 2008).

stdin: {"module": name, "source": text}
stdout: {"functions": {qualname: [expression id]}} or {"error": message}

A qualname is what the kernel's find_function finds (``f``, ``C.m``, the
last definition of a name winning at each level) plus ``__main__``, the
module's top level as a script (PROTOCOL.md 7.1). Labels come from the
kernel's own functions (analysis.label_base, labelling.py's numbering, the
one a run's plans use); nothing of the module runs.
"""

from __future__ import annotations

import ast
import json
import sys
from types import ModuleType
from typing import Dict, List, Sequence, Union

from . import analysis
from .labelling import SCRIPT, number_labels, script_base


def function_ids(analysis: ModuleType, module: str, qualname: str,
                 node: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> List[str]:
    """The expression ids of the statements of def node, in order."""
    labels = number_labels(analysis.label_base(s) for s in node.body)
    return ["%s:%s/%s" % (module, qualname, label) for label in labels]


def _defs(body: Sequence[ast.stmt], prefix: str, out: Dict[str, List[str]], analysis: ModuleType, module: str) -> None:
    last: Dict[str, Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]] = {}
    for child in body:
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            last[child.name] = child  # the last definition wins, as at run time
    for name, node in last.items():
        qualname = prefix + name
        if not isinstance(node, ast.ClassDef):
            out[qualname] = function_ids(analysis, module, qualname, node)
        _defs(node.body, qualname + ".", out, analysis, module)


def main() -> None:
    req = json.load(sys.stdin)
    module, source = req["module"], req["source"]
    try:
        tree = ast.parse(source, module)
    except (SyntaxError, ValueError) as e:
        json.dump({"error": "%s: %s" % (type(e).__name__, e)}, sys.stdout)
        return
    out: Dict[str, List[str]] = {}
    _defs(tree.body, "", out, analysis, module)
    script = number_labels(script_base(s, analysis.label_base(s)) for s in tree.body)
    out[SCRIPT] = ["%s:%s/%s" % (module, SCRIPT, label) for label in script]
    json.dump({"functions": out}, sys.stdout)
