"""The label numbering that makes expression ids (PROTOCOL.md 5.2, 7.1).

An expression id is ``module:qualname/label``; a statement's label is its
base (``x``, ``a,b``, ``return``: analysis.label_base) numbered among the
statements of the same base (``x``, ``x#2``...), or ``#k`` for the k-th
statement without one. A script's top level (7.1) also labels def, class
and import statements by the names they bind (script_base).

Written once, here: the kernel's plans (plan.py, scriptplan.py), the
engine's id listing (labels.py) and analysis.labels all number through
number_labels, so the ids the Go side is told about and the ids a run
reports cannot drift apart.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Optional

SCRIPT = "__main__"  # the qualname of a module's top level run as a script (7.1)


def number_labels(bases: Iterable[Optional[str]]) -> List[str]:
    """The labels of a body's statements, given their label bases in order
    (None: a statement without one)."""
    counts: Dict[str, int] = {}
    other = 0
    out = []
    for base in bases:
        if base is None:
            other += 1
            out.append("#%d" % other)
        else:
            n = counts.get(base, 0) + 1
            counts[base] = n
            out.append(base if n == 1 else "%s#%d" % (base, n))
    return out


def script_base(node: ast.stmt, base: Optional[str]) -> Optional[str]:
    """The label base of a script's top-level statement: base (its 5.2
    base), or for a def, class or import statement the names it binds."""
    if base is None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            base = node.name
        elif isinstance(node, ast.Import):
            base = ",".join(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ",".join(a.asname or a.name for a in node.names if a.name != "*") or None
    return base
