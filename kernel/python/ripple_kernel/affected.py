"""Does an edit of a module invalidate the statements running in it?

The engine asks this (a short process, run by the kernels' interpreter)
when an edit changes a module holding the code of a frame of a running
context (DESIGN.md "Edit a file"): the running statement is interrupted
only when the change may invalidate it; otherwise the run stops at its
next statement boundary. Conservative: whatever it cannot tell is
"affected".

stdin: {"module": name, "old": source the kernel runs, "new": source now,
        "frames": [{"qualname": q, "ids": [expression id]}]}
  ids are the statements of that frame that may be running (the suspended
  call of a lower frame, the pending statements of the top one).
stdout: {"affected": bool, "why": text}

A statement is affected when, in the new source: its function is gone or
its header (parameters, decorators) changed; it or an earlier statement of
its body changed (an earlier one may define what it reads); or a changed
top-level statement of the module (a def, class member, assignment,
import, ...) binds or mentions a name the statement can reach: the names
and attribute names it mentions, closed over the top-level statements
binding them. Labels are the kernel's own (labels.py).
"""

from __future__ import annotations

import ast
import json
import sys
from typing import Dict, List, Optional, Set, Tuple, Union

from . import analysis
from . import labels as ripple_labels
from .api import WireObject

_Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
# A top-level statement or class member: (its dump, the node compared (a
# class's header), the whole node).
_Entry = Tuple[str, ast.AST, ast.AST]


def _idents(node: ast.AST) -> Set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.keyword) and n.arg:
            out.add(n.arg)
    return out


def _binds(node: ast.AST) -> Set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
    return out


def _find(tree: ast.Module, qualname: str) -> Optional[_Function]:
    node: ast.AST = tree
    for part in qualname.split("."):
        found = None
        for child in getattr(node, "body", []):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child.name == part:
                found = child
        if found is None:
            return None
        node = found
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _header(fn: _Function) -> str:
    return ast.dump(fn.args) + "|" + "|".join(ast.dump(d) for d in fn.decorator_list) + "|" + (ast.dump(fn.returns) if fn.returns else "")


def _entries(tree: ast.Module, frames: Set[str]) -> List[_Entry]:
    """Top-level statements, class members one by one, as (key, node);
    the defs of the frames' functions are left out (compared apart)."""
    out: List[_Entry] = []

    def walk(body: List[ast.stmt], prefix: str) -> None:
        for node in body:
            q = prefix + node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else None
            if q is not None and q in frames and not isinstance(node, ast.ClassDef):
                continue
            if isinstance(node, ast.ClassDef):
                head = ast.ClassDef(name=node.name, bases=node.bases, keywords=node.keywords, body=[], decorator_list=node.decorator_list)
                out.append((ast.dump(head), head, node))
                walk(node.body, prefix + node.name + ".")
            else:
                out.append((ast.dump(node), node, node))

    walk(tree.body, "")
    return out


def affected(module: str, old: str, new: str, frames: List[WireObject]) -> Tuple[bool, str]:
    try:
        t_old, t_new = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return True, "a version does not parse"
    reach = set()
    quals = {f["qualname"] for f in frames}
    for f in frames:
        q = f["qualname"]
        if q == "__main__":
            return True, "a script frame"
        fo, fn = _find(t_old, q), _find(t_new, q)
        if fo is None or fn is None:
            return True, "%s not found" % q
        if _header(fo) != _header(fn):
            return True, "the header of %s changed" % q
        ids_o = ripple_labels.function_ids(analysis, module, q, fo)
        ids_n = ripple_labels.function_ids(analysis, module, q, fn)
        for sid in f["ids"]:
            if sid not in ids_o or sid not in ids_n:
                return True, "%s is not in both versions" % sid
            i, j = ids_o.index(sid), ids_n.index(sid)
            if i != j or [ast.dump(s) for s in fo.body[: i + 1]] != [ast.dump(s) for s in fn.body[: j + 1]]:
                return True, "%s or a statement before it changed" % sid
            reach |= _idents(fo.body[i])
        reach.add(q.split(".")[0])
    e_old, e_new = _entries(t_old, quals), _entries(t_new, quals)
    k_old: Dict[str, int] = {}
    for k, _, _ in e_old:
        k_old[k] = k_old.get(k, 0) + 1
    k_new: Dict[str, int] = {}
    for k, _, _ in e_new:
        k_new[k] = k_new.get(k, 0) + 1
    changed = [(head, full) for k, head, full in e_old if k_old[k] != k_new.get(k, 0)]
    changed += [(head, full) for k, head, full in e_new if k_new[k] != k_old.get(k, 0)]
    if not changed:
        return False, "nothing the statements reach changed"
    # Close reach over every entry (old or new) binding a reached name.
    everything = e_old + e_new
    grew = True
    while grew:
        grew = False
        for _, head, full in everything:
            if _binds(head) & reach:
                more = _idents(head) - reach
                if more:
                    reach |= more
                    grew = True
    for head, full in changed:
        names = _binds(head) | _idents(head)
        if names & reach:
            return True, "a change mentions %s" % ", ".join(sorted(names & reach))
    return False, "no change reaches the statements"


def main() -> None:
    req = json.load(sys.stdin)
    hit, why = affected(req["module"], req["old"], req["new"], req["frames"])
    json.dump({"affected": hit, "why": why}, sys.stdout)

