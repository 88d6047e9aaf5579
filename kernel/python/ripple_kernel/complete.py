"""Completion and inspection: the kernel methods ``complete`` and
``inspect`` (kernel/PROTOCOL.md "Methods"), what the web page's editor,
``ripple lsp`` and a Jupyter frontend ask while the user types.

The namespace is a context's top frame (its locals, then its module's
globals; engine.context_namespaces) or, without a context or for one that
has not run on this kernel, the kernel's ``__main__``. Jedi (``jedi.Interpreter``,
Debian's python3-jedi) answers when importable; else ``rlcompleter`` on
the namespace. Keys of a dict or a DataFrame's columns complete inside
``x["`` either way (jedi does not know a DataFrame's columns).

Offsets in requests and answers count Unicode code points, as Python's
``str`` does, so no conversion is needed here; the Go side converts for
clients that count UTF-16 units.

Nothing here calls user code on purpose except what a namespace lookup
does: attribute access on plain dotted names (properties run, as they do
in IPython), ``dir()`` and ``repr()``-free docstrings. Expressions with
calls or subscripts are never evaluated.
"""

from __future__ import annotations

import builtins
import inspect as pyinspect
import keyword
import re
import rlcompleter
from typing import Any, Callable, Dict, List, Optional, Tuple

from .api import WireObject
from .wire import InvalidParams

Namespaces = Tuple[Dict[str, Any], Dict[str, Any]]  # (locals, globals)
# (context id or None) -> namespaces; None: the context has not run here.
Resolver = Callable[[Optional[str]], Optional[Namespaces]]

MAX_MATCHES = 1000  # matches answered; the rest are cut
MAX_SIGNATURES = 40  # matches whose signature is looked up (jedi's is slow)
DOC_LIMIT = 20000  # characters of a docstring or source in an inspection

_NAME_TAIL = re.compile(r"[A-Za-z_][\w.]*$|\.?$", re.UNICODE)
_KEY_TAIL = re.compile(r"([A-Za-z_][\w.]*)\[\s*([\"'])([^\"'\\]*)$", re.UNICODE)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$", re.UNICODE)


def methods(resolve: Resolver) -> Dict[str, Callable[[WireObject], object]]:
    """The transport methods complete and inspect, on namespaces resolve
    finds (kernel.py registers them)."""

    def complete(params: WireObject) -> WireObject:
        code, cursor, ns = _request(params, "complete", resolve)
        return completions(code, cursor, ns)

    def inspect(params: WireObject) -> WireObject:
        code, cursor, ns = _request(params, "inspect", resolve)
        level = params.get("detailLevel", 0)
        if level not in (0, 1) or type(level) is not int:
            raise InvalidParams("inspect: detailLevel must be 0 or 1, got %r" % (level,))
        return inspection(code, cursor, level, ns)

    return {"complete": complete, "inspect": inspect}


def _request(params: WireObject, method: str, resolve: Resolver) -> Tuple[str, int, Namespaces]:
    code = params.get("code")
    if type(code) is not str:
        raise InvalidParams("%s: code must be a string, got %s" % (method, type(code).__name__))
    cursor = params.get("cursor", len(code))
    if type(cursor) is not int or not 0 <= cursor <= len(code):
        raise InvalidParams("%s: cursor must be an integer from 0 to %d (the code's length in code points), got %r"
                            % (method, len(code), cursor))
    context = params.get("contextId")
    if context is not None and type(context) is not str:
        raise InvalidParams("%s: contextId must be a string, got %s" % (method, type(context).__name__))
    # A context that has not run on this kernel yet (the page asks while
    # its first run is queued) completes in __main__: builtins and imports
    # of the code still complete.
    ns = resolve(context) or resolve(None)
    assert ns is not None  # None always resolves (__main__)
    return code, cursor, ns


def _jedi() -> Any:
    """The jedi module, or None."""
    try:
        import jedi
    except Exception:
        return None
    return jedi


def _line_column(code: str, cursor: int) -> Tuple[int, int]:
    """jedi's (1-based line, column in code points) of an offset."""
    before = code[:cursor]
    line = before.count("\n") + 1
    return line, cursor - (before.rfind("\n") + 1)


# ---------------------------------------------------------------- complete


def completions(code: str, cursor: int, ns: Namespaces) -> WireObject:
    """{matches: [{text, type, signature?}], cursorStart, cursorEnd}."""
    keys = _key_completions(code, cursor, ns)
    if keys is not None:
        return keys
    jedi = _jedi()
    if jedi is not None:
        try:
            return _jedi_completions(jedi, code, cursor, ns)
        except Exception:
            pass  # jedi fails on some code (and versions): rlcompleter still answers
    return _rl_completions(code, cursor, ns)


def _jedi_completions(jedi: Any, code: str, cursor: int, ns: Namespaces) -> WireObject:
    line, column = _line_column(code, cursor)
    found = jedi.Interpreter(code, [ns[0], ns[1]]).complete(line, column)[:MAX_MATCHES]
    # Every match replaces one span, from the longest prefix jedi saw
    # (jedi completes one name, so the prefixes are normally equal).
    start = min([cursor - c.get_completion_prefix_length() for c in found] or [cursor])
    matches: List[WireObject] = []
    for i, c in enumerate(found):
        match: WireObject = {"text": code[start:cursor] + c.complete, "type": c.type}
        if i < MAX_SIGNATURES and c.type in ("function", "class"):
            try:
                sigs = c.get_signatures()
                if sigs:
                    match["signature"] = sigs[0].to_string()
            except Exception:
                pass
        matches.append(match)
    return {"matches": matches, "cursorStart": start, "cursorEnd": cursor}


def _rl_completions(code: str, cursor: int, ns: Namespaces) -> WireObject:
    head = code[:cursor]
    m = _NAME_TAIL.search(head)
    text = m.group(0) if m else ""
    start = cursor - len(text)
    merged = dict(ns[1])
    merged.update(ns[0])
    completer = rlcompleter.Completer(merged)
    matches: List[WireObject] = []
    seen = set()
    state = 0
    while len(matches) < MAX_MATCHES:
        try:
            item = completer.complete(text, state) if text else None
        except Exception:
            item = None
        if item is None:
            break
        state += 1
        kind = "instance"
        if item.endswith("("):
            item, kind = item[:-1], "function"
        elif item.endswith(("  ", " ")) or item.rstrip(" :") in keyword.kwlist:
            item, kind = item.rstrip(" :"), "keyword"
        if item in seen:
            continue
        seen.add(item)
        value = _lookup(item, ns)
        if kind != "keyword" and value is not _MISSING:
            kind = _kind(value)
        matches.append({"text": item, "type": kind})
    return {"matches": matches, "cursorStart": start, "cursorEnd": cursor}


def _key_completions(code: str, cursor: int, ns: Namespaces) -> Optional[WireObject]:
    """Inside `name["pre`: the string keys of a dict or the columns of a
    DataFrame-like object (one with .columns) that start with pre."""
    m = _KEY_TAIL.search(code[:cursor])
    if m is None:
        return None
    obj = _lookup(m.group(1), ns)
    if obj is _MISSING:
        return None
    try:
        keys = list(obj.columns) if hasattr(obj, "columns") and not isinstance(obj, dict) else list(obj.keys())
    except Exception:
        return None
    quote, prefix = m.group(2), m.group(3)
    closing = quote + "]" if not code[cursor:cursor + 1] == quote else ""
    matches: List[WireObject] = [{"text": k + closing, "type": "key"} for k in keys
                                 if isinstance(k, str) and k.startswith(prefix)][:MAX_MATCHES]
    if not matches:
        return None
    return {"matches": matches, "cursorStart": cursor - len(prefix), "cursorEnd": cursor}


_MISSING = object()


def _lookup(dotted: str, ns: Namespaces) -> Any:
    """The object a dotted name names in the namespaces, or _MISSING.
    Only names and attributes: nothing is called."""
    if not _DOTTED.match(dotted):
        return _MISSING
    head, *rest = dotted.split(".")
    for space in (ns[0], ns[1], vars(builtins)):
        if head in space:
            obj = space[head]
            break
    else:
        return _MISSING
    for attr in rest:
        try:
            obj = getattr(obj, attr)
        except Exception:
            return _MISSING
    return obj


def _kind(value: object) -> str:
    if pyinspect.isclass(value):
        return "class"
    if pyinspect.ismodule(value):
        return "module"
    if callable(value):
        return "function"
    return "instance"


# ---------------------------------------------------------------- inspect


def _target(code: str, cursor: int) -> Tuple[str, int]:
    """The dotted name under or before the cursor, else the callee of the
    call the cursor is in (`print(x, ` asks about print); its end."""
    end = cursor
    while end < len(code) and (code[end].isalnum() or code[end] == "_"):
        end += 1
    m = re.search(r"[A-Za-z_][\w.]*$", code[:end])
    if m and m.group(0).rstrip("."):
        return m.group(0).rstrip("."), end
    depth = 0
    for k in range(cursor - 1, -1, -1):
        ch = code[k]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                if ch != "(":
                    return "", cursor
                m = re.search(r"[A-Za-z_][\w.]*$", code[:k])
                return (m.group(0), k) if m else ("", cursor)
            depth -= 1
    return "", cursor


def inspection(code: str, cursor: int, level: int, ns: Namespaces) -> WireObject:
    """{found, name?, signature?, doc?, text}: what a hover or Jupyter's
    inspect shows of the name at the cursor."""
    name, end = _target(code, cursor)
    obj = _lookup(name, ns) if name else _MISSING
    if obj is _MISSING:
        return _jedi_inspection(code, end, name) or {"found": False, "text": ""}
    info: WireObject = {"found": True, "name": name}
    sig = _signature(obj)
    if sig is not None:
        info["signature"] = name.rsplit(".", 1)[-1] + sig
    doc = pyinspect.getdoc(obj)
    if doc:
        info["doc"] = doc[:DOC_LIMIT]
    lines: List[str] = []
    if sig is not None:
        lines.append("Signature: %s" % info["signature"])
    if not (callable(obj) or pyinspect.ismodule(obj)):
        lines.append("Value: %s" % _short_repr(obj))
    lines.append("Type: %s" % type(obj).__name__)
    source = _source(obj) if level == 1 else None
    if source:
        lines.append("Source:\n%s" % source[:DOC_LIMIT])
    elif doc:
        lines.append("Docstring:\n%s" % info["doc"])
    where = _file(obj)
    if where:
        lines.append("File: %s" % where)
    info["text"] = "\n".join(lines)
    return info


def _jedi_inspection(code: str, cursor: int, name: str) -> Optional[WireObject]:
    """Inspection of a name the namespace does not hold yet (a function
    defined in the code not run yet): jedi's inference of the code."""
    jedi = _jedi()
    if jedi is None or not name:
        return None
    try:
        line, column = _line_column(code, cursor)
        found = jedi.Interpreter(code, [{}]).infer(line, column)
        if not found:
            return None
        d = found[0]
        doc = d.docstring() or ""
        info: WireObject = {"found": True, "name": name, "text": ("Type: %s\n" % d.type) + (doc[:DOC_LIMIT])}
        if doc:
            info["doc"] = doc[:DOC_LIMIT]
        return info
    except Exception:
        return None


def _signature(obj: object) -> Optional[str]:
    if not callable(obj):
        return None
    try:
        return str(pyinspect.signature(obj))
    except (TypeError, ValueError):
        return None


def _source(obj: object) -> Optional[str]:
    try:
        return pyinspect.getsource(obj)  # type: ignore[arg-type]
    except Exception:
        return None


def _file(obj: object) -> Optional[str]:
    try:
        return pyinspect.getsourcefile(obj)  # type: ignore[arg-type]
    except Exception:
        return None


def _short_repr(obj: object) -> str:
    import reprlib

    try:
        return reprlib.repr(obj)
    except Exception as e:
        return "<repr failed: %s>" % type(e).__name__


