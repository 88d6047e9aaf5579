"""The params of the engine's requests (PROTOCOL.md 7), checked.

Each parser takes the JSON params as they came from the Go side and
answers a dataclass, or raises ValueError naming the field at fault (the
kernel answers it as invalid params). Nothing here runs user code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

from .api import WireObject

# A context to drop: (contextId, generation or None for any generation).
Drop = Tuple[str, Optional[int]]
# The key of a stack item: equal keys name the same frame.
ItemKey = Tuple[str, ...]


@dataclass
class CompileRequest:
    """compile's params (PROTOCOL.md 5.1)."""

    modules: List[Any]  # [{name, path, source}], checked by the module table
    removed: List[Any]  # module names, checked by the module table
    scripts: Optional[List[Any]]  # module names run as scripts, None: unchanged
    load: List[str]
    faulty: WireObject  # {module: diagnostic}
    timeout: float
    lazy: bool


@dataclass
class ExecuteRequest:
    """execute's params (PROTOCOL.md 7)."""

    context_id: str
    generation: int
    drops: Sequence[Drop]
    stack: List[WireObject]  # checked stack items, bottom first
    invalidate: Union[None, str, List[str]]  # None, "all" or expression ids
    wanted: Optional[List[str]]
    visualizations: List[WireObject]
    stop_at_skip: bool
    finalize: bool
    run_once: bool
    hold: bool = False  # effects "hold": an automatic run refuses external effects (8.2)


def params_object(params: object, what: str) -> WireObject:
    """params as a JSON object ({} for null)."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise ValueError("%s must be an object, got %s" % (what, type(params).__name__))
    return params


def compile_request(raw: object) -> CompileRequest:
    params = params_object(raw, "compile params")
    mods = params.get("modules") or []
    removed = params.get("removed") or []
    if not isinstance(mods, list):
        raise ValueError("compile: modules must be a list")
    if not isinstance(removed, list):
        raise ValueError("compile: removed must be a list of module names")
    load = params.get("load") or []
    faulty = params.get("faulty") or {}
    timeout = params.get("timeout") or 0
    if not isinstance(load, list) or not all(isinstance(m, str) for m in load):
        raise ValueError("compile: load must be a list of module names")
    if not isinstance(faulty, dict):
        raise ValueError("compile: faulty must be an object {module: diagnostic}")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError("compile: timeout must be a number of seconds >= 0")
    return CompileRequest(mods, removed, params.get("scripts"), load, faulty, timeout, bool(params.get("lazy")))


def drops(raw: object, field: str) -> List[Drop]:
    """The contexts to drop of a list of {contextId, generation}; field
    names it in errors ("dropContext: contexts", "execute: drop")."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError("%s must be a list of {contextId, generation}" % field)
    out = []
    for i, d in enumerate(raw):
        if not isinstance(d, dict) or not isinstance(d.get("contextId"), str):
            raise ValueError("%s[%d] must be an object with a string contextId" % (field, i))
        generation = d.get("generation")
        if generation is not None and (type(generation) is not int):
            raise ValueError("%s[%d].generation must be an integer" % (field, i))
        out.append((d["contextId"], generation))
    return out


def item_key(item: WireObject) -> ItemKey:
    """The key of a checked stack item."""
    if item["type"] == "ExplicitCall":
        return ("ExplicitCall", item["module"], item.get("definedOnType") or "", item["name"])
    return ("LocalCall", item["expressionId"])


def execute_request(raw: object) -> ExecuteRequest:
    params = params_object(raw, "execute params")
    context_id = params.get("contextId")
    if not isinstance(context_id, str) or not context_id:
        raise ValueError("execute: contextId must be a non-empty string")
    generation = params.get("generation", 0)
    if type(generation) is not int:
        raise ValueError("execute: generation must be an integer")
    dropped = drops(params.get("drop"), "execute: drop")
    stack = _stack(params.get("stack"))
    invalidate = params.get("invalidate")
    if invalidate is not None and invalidate != "all":
        if not isinstance(invalidate, list) or not all(isinstance(i, str) for i in invalidate):
            raise ValueError('execute: invalidate must be null, "all" or a list of expression ids')
    wanted = params.get("wanted")
    if wanted is not None and (not isinstance(wanted, list) or not all(isinstance(i, str) for i in wanted)):
        raise ValueError("execute: wanted must be null or a list of expression ids")
    visualizations = _visualizations(params.get("visualizations") or [])
    flags = [params.get(name, False) for name in ("stopAtSkip", "finalize", "runOnce")]
    for name, flag in zip(("stopAtSkip", "finalize", "runOnce"), flags):
        if type(flag) is not bool:
            raise ValueError("execute: %s must be a boolean" % name)
    effects = params.get("effects", "allow")
    if effects not in ("hold", "allow"):
        raise ValueError('execute: effects must be "hold" or "allow", got %r' % (effects,))
    stop_at_skip, finalize, run_once = flags
    return ExecuteRequest(context_id, generation, dropped, stack, invalidate, wanted, visualizations, stop_at_skip,
                          finalize, run_once, effects == "hold")


def _stack(stack: object) -> List[WireObject]:
    if not isinstance(stack, list) or not stack:
        raise ValueError("execute: stack must be a non-empty list of stack items")
    for depth, item in enumerate(stack):
        if not isinstance(item, dict):
            raise ValueError("execute: stack item %d must be an object" % depth)
        kind = item.get("type")
        if kind == "ExplicitCall":
            _explicit_call(depth, item)
        elif kind == "LocalCall":
            if depth == 0:
                raise ValueError("execute: stack item 0 must be an ExplicitCall, not a LocalCall")
            if not isinstance(item.get("expressionId"), str):
                raise ValueError("execute: stack item %d: LocalCall needs a string expressionId" % depth)
        else:
            raise ValueError("execute: stack item %d has unknown type %r" % (depth, kind))
    return stack


def _explicit_call(depth: int, item: WireObject) -> None:
    if depth != 0:
        raise ValueError("execute: stack item %d: ExplicitCall is only allowed at the bottom" % depth)
    for field in ("module", "name"):
        if not isinstance(item.get(field), str) or not item.get(field):
            raise ValueError("execute: stack item %d: ExplicitCall needs a string %s" % (depth, field))
    if item.get("definedOnType") is not None and not isinstance(item.get("definedOnType"), str):
        raise ValueError("execute: stack item %d: definedOnType must be a string" % depth)
    args = item.get("positionalArgumentsExpressions") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("execute: stack item %d: positionalArgumentsExpressions must be a list of strings" % depth)
    this = item.get("thisArgumentExpression")
    if this is not None and not isinstance(this, str):
        raise ValueError("execute: stack item %d: thisArgumentExpression must be a string" % depth)


def _visualizations(visualizations: object) -> List[WireObject]:
    if not isinstance(visualizations, list):
        raise ValueError("execute: visualizations must be a list")
    for i, vis in enumerate(visualizations):
        if not isinstance(vis, dict):
            raise ValueError("execute: visualization %d must be an object" % i)
        for field in ("visualizationId", "expressionId", "expression"):
            if not isinstance(vis.get(field), str):
                raise ValueError("execute: visualization %d needs a string %s" % (i, field))
        args = vis.get("positionalArgumentsExpressions") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(
                "execute: visualization %s: positionalArgumentsExpressions must be a list of strings"
                % vis["visualizationId"]
            )
    return visualizations
