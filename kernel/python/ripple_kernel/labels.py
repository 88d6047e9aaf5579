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
kernel's own functions (analysis.label_base and labels,
run.script_labels); nothing
of the module runs.
"""

import ast
import json
import sys

from . import analysis, run


class _Info:
    __slots__ = ("label",)

    def __init__(self, label):
        self.label = label


class _Stmt:
    __slots__ = ("info", "node")

    def __init__(self, node, analysis):
        self.node = node
        self.info = _Info(analysis.label_base(node))


def function_ids(analysis, module, qualname, node):
    """The expression ids of the statements of def node, in order."""
    labels = analysis.labels([_Info(analysis.label_base(s)) for s in node.body])
    return ["%s:%s/%s" % (module, qualname, label) for label in labels]


def _defs(body, prefix, out, analysis, module):
    last = {}
    for child in body:
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            last[child.name] = child  # the last definition wins, as at run time
    for name, node in last.items():
        qualname = prefix + name
        if not isinstance(node, ast.ClassDef):
            out[qualname] = function_ids(analysis, module, qualname, node)
        _defs(node.body, qualname + ".", out, analysis, module)


def main():
    req = json.load(sys.stdin)
    module, source = req["module"], req["source"]
    try:
        tree = ast.parse(source, module)
    except (SyntaxError, ValueError) as e:
        json.dump({"error": "%s: %s" % (type(e).__name__, e)}, sys.stdout)
        return
    out = {}
    _defs(tree.body, "", out, analysis, module)
    script = run.script_labels([_Stmt(s, analysis) for s in tree.body])
    out[run.SCRIPT] = ["%s:%s/%s" % (module, run.SCRIPT, label) for label in script]
    json.dump({"functions": out}, sys.stdout)
