"""What the engine reports about values and failures.

- ``preview(value)``: a repr cut to PREVIEW_LIMIT characters with reprlib-style
  limits, so a list of a million items costs microseconds, a dict is never
  sorted, a huge int is never converted, and a raising ``__repr__`` gives a
  placeholder instead of breaking the run. KeyboardInterrupt is let through.
- ``type_name(value)``: ``module.qualname`` of the value's type.
- ``exception_message(exc)``: ``"ZeroDivisionError: division by zero"``.
- ``encode_visualization(data)``: the JSON a visualization result travels as.
- ``mime_types(value)``: the representations beyond text/plain a value
  offers (PROTOCOL.md 7.2), from its type alone (cached per type: a dict
  lookup per statement); ``mime_bundle(value)`` renders them, the data of
  the built-in "ripple:display" visualization and of displayData.
- ``Diagnostics``: builds PROTOCOL.md Diagnostic objects from exceptions,
  keeping only frames in project files.
"""

from __future__ import annotations

import json
import os
import reprlib
import traceback
import types
from typing import TYPE_CHECKING, Any, Callable, Collection, Dict, List, Optional, Tuple

from .api import WireObject

if TYPE_CHECKING:
    from .text import Source

# A type's display facts: (kind of a known type or None, mime types): see mime_types.
_Facts = Tuple[Optional[str], Tuple[str, ...]]

PREVIEW_LIMIT = 200
VISUALIZATION_LIMIT = 1 << 20
DISPLAY_LIMIT = 8 << 20  # a mime bundle's JSON (7.2)
DISPLAY_VISUALIZATION = "ripple:display"


class _Repr(reprlib.Repr):
    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxtuple = 10
        self.maxlist = 10
        self.maxarray = 10
        self.maxdict = 10
        self.maxset = 10
        self.maxfrozenset = 10
        self.maxdeque = 10
        self.maxstring = PREVIEW_LIMIT
        self.maxlong = PREVIEW_LIMIT
        self.maxother = PREVIEW_LIMIT

    # reprlib sorts dicts and sets (O(n log n) and not what repr shows);
    # these keep iteration order and look at the first items only.
    def repr_dict(self, x: Dict[object, object], level: int) -> str:
        n = len(x)
        if n == 0:
            return "{}"
        if level <= 0:
            return "{...}"
        newlevel = level - 1
        pieces = []
        for i, (key, value) in enumerate(x.items()):
            if i >= self.maxdict:
                pieces.append("...")
                break
            pieces.append("%s: %s" % (self.repr1(key, newlevel), self.repr1(value, newlevel)))
        return "{%s}" % ", ".join(pieces)

    def _repr_unordered(self, x: Collection[object], level: int, left: str, right: str, limit: int) -> str:
        if not x:
            return repr(x)
        if level <= 0:
            return left + "..." + right
        pieces = []
        for i, item in enumerate(x):
            if i >= limit:
                pieces.append("...")
                break
            pieces.append(self.repr1(item, level - 1))
        return left + ", ".join(pieces) + right

    def repr_set(self, x: Collection[object], level: int) -> str:
        return self._repr_unordered(x, level, "{", "}", self.maxset)

    def repr_frozenset(self, x: Collection[object], level: int) -> str:
        return self._repr_unordered(x, level, "frozenset({", "})", self.maxfrozenset)

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 600:
            return "<int with %d bits>" % x.bit_length()
        return super().repr_int(x, level)

    def repr1(self, x: object, level: int) -> str:
        # Subclasses of builtins keep their own repr; reprlib would dispatch
        # on the type's name and may mis-handle them.
        try:
            return super().repr1(x, level)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return _fallback(x, exc)

    def repr_instance(self, x: object, level: int) -> str:
        try:
            s = repr(x)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return _fallback(x, exc)
        if not isinstance(s, str):
            return _fallback(x, TypeError("__repr__ returned non-string"))
        if len(s) > self.maxother:
            return s[: self.maxother - 3] + "..."
        return s


def _fallback(x: object, exc: BaseException) -> str:
    return "<%s object (repr raised %s)>" % (_safe_type_name(x), type(exc).__name__)


_REPR = _Repr()


def preview(value: object) -> str:
    """A short, never-raising repr of value (KeyboardInterrupt excepted)."""
    try:
        s = _REPR.repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        s = _fallback(value, exc)
    if len(s) > PREVIEW_LIMIT:
        s = s[: PREVIEW_LIMIT - 3] + "..."
    return s


def _safe_type_name(value: object) -> str:
    try:
        return type(value).__name__
    except Exception:
        return "object"


def type_name(value: object) -> str:
    t = type(value)
    try:
        module = t.__module__
        qualname = t.__qualname__
    except Exception:
        return "builtins.object"
    if not isinstance(module, str):
        module = "builtins"
    if not isinstance(qualname, str):
        qualname = getattr(t, "__name__", "object")
    return "%s.%s" % (module, qualname)


def exception_message(exc: BaseException) -> str:
    """``Type: message`` as the last line of a traceback shows it."""
    t = type(exc)
    name = t.__qualname__
    module = t.__module__
    if module not in ("builtins", "__main__", None):
        name = "%s.%s" % (module, name)
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        text = "<exception str() failed>"
    if isinstance(exc, SyntaxError) and exc.msg:
        text = exc.msg
    return "%s: %s" % (name, text) if text else name


def encode_visualization(result: object, limit: int = VISUALIZATION_LIMIT) -> Tuple[object, Optional[str]]:
    """(data, error): data is JSON-safe; non-JSON results become their str.

    NaN and infinities are not JSON, so a result holding them is sent as its
    str too. error is a message when the encoded result exceeds the limit.
    """
    try:
        encoded = json.dumps(result, allow_nan=False)
        data = result
    except (TypeError, ValueError, RecursionError):
        data = str(result)
        encoded = json.dumps(data)
    if len(encoded) > limit:
        return None, "visualization result is %d bytes of JSON, over the %d byte limit" % (
            len(encoded),
            limit,
        )
    if data is result:
        # Re-decode so later mutation of the user's object cannot change
        # what is sent, and so tuples and the like become plain JSON.
        data = json.loads(encoded)
    return data, None


# IPython's display protocol: method -> mime type, in IPython's order.
_REPR_METHODS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_json_", "application/json"),
    ("_repr_latex_", "text/latex"),
)
_BINARY = frozenset(["image/png", "image/jpeg"])
# Types known by their class (module, qualname) anywhere in the MRO, so
# neither matplotlib nor pandas is imported to recognise them.
_KNOWN: Dict[Tuple[object, object], str] = {
    ("matplotlib.figure", "Figure"): "figure",
    ("matplotlib.axes._base", "_AxesBase"): "axes",
    ("pandas.core.frame", "DataFrame"): "frame",
    ("pandas.core.series", "Series"): "series",
}
_KIND_MIMES = {
    "figure": ("image/png", "image/svg+xml"),
    "axes": ("image/png", "image/svg+xml"),
    "frame": ("text/html",),
    "series": ("text/html",),
}
_TYPE_MIMES: Dict[type, _Facts] = {}  # see mime_types


def _type_facts(t: type) -> _Facts:
    facts = _TYPE_MIMES.get(t)
    if facts is not None:
        return facts
    kind = None
    try:
        for c in t.__mro__:
            kind = _KNOWN.get((getattr(c, "__module__", None), getattr(c, "__qualname__", None)))
            if kind is not None:
                break
    except Exception:
        pass
    if kind is not None:
        mimes = _KIND_MIMES[kind]
    else:
        # Looked up on the type: an instance's __getattr__ (a mock, a
        # proxy) would claim every method and run code.
        found = []
        for method, mime in _REPR_METHODS:
            try:
                if callable(getattr(t, method, None)):
                    found.append(mime)
            except Exception:
                pass
        mimes = tuple(found)
    if len(_TYPE_MIMES) > 4096:
        _TYPE_MIMES.clear()
    facts = _TYPE_MIMES[t] = (kind, mimes)
    return facts


def mime_types(value: object) -> Tuple[str, ...]:
    """The mime types value offers beyond text/plain (a tuple, often
    empty), without rendering anything. An object that has only
    _repr_mimebundle_ declares nothing here: what it offers is known only
    by calling it (mime_bundle does). A small tuple or list holding a
    figure (``fig, ax = plt.subplots()``) offers the figure's."""
    mimes = _type_facts(type(value))[1]
    if not mimes and type(value) in (tuple, list):
        fig = _held_figure(value)
        if fig is not None:
            return _KIND_MIMES["figure"]
    return mimes


_HELD_MAX = 8  # items of a tuple or list looked at for a figure


def _held_figure(value: Any) -> Optional[Any]:
    """The figure a small tuple or list holds (a Figure, or the figure of
    the first Axes), or None."""
    if len(value) > _HELD_MAX:
        return None
    for item in value:
        kind = _type_facts(type(item))[0]
        if kind == "figure":
            return item
        if kind == "axes":
            return item.figure
    return None


def _figure_bytes(fig: Any, fmt: str) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, bbox_inches="tight")
    return buf.getvalue()


def _encode_mime(mime: str, data: object) -> object:
    if isinstance(data, (bytes, bytearray, memoryview)):
        if mime in _BINARY:
            import base64

            return base64.b64encode(bytes(data)).decode("ascii")
        return bytes(data).decode("utf-8", "replace")
    return data


def mime_bundle(value: Any, mimes: Optional[Collection[str]] = None) -> Dict[str, object]:
    """{mime: data} of value: text/plain (its repr) and what it offers
    (7.2); binary types base64-encoded. mimes, when given, limits the rich
    types rendered. Raises ValueError when the bundle's JSON is over
    DISPLAY_LIMIT; exceptions of the value's own methods propagate."""
    try:
        plain = repr(value)
    except Exception as exc:
        plain = _fallback(value, exc)
    bundle: Dict[str, object] = {"text/plain": plain[:100000]}
    kind = _type_facts(type(value))[0]

    def want(mime: str) -> bool:
        return mimes is None or mime in mimes

    held = _held_figure(value) if kind is None and type(value) in (tuple, list) else None
    if held is not None:
        for mime, fmt in (("image/png", "png"), ("image/svg+xml", "svg")):
            if want(mime):
                bundle[mime] = _encode_mime(mime, _figure_bytes(held, fmt))
    elif kind in ("figure", "axes"):
        fig = value if kind == "figure" else value.figure
        for mime, fmt in (("image/png", "png"), ("image/svg+xml", "svg")):
            if want(mime):
                bundle[mime] = _encode_mime(mime, _figure_bytes(fig, fmt))
    elif kind == "frame" and want("text/html"):
        bundle["text/html"] = value._repr_html_() or value.to_html(max_rows=60)
    elif kind == "series" and want("text/html"):
        bundle["text/html"] = value.to_frame()._repr_html_() or value.to_frame().to_html(max_rows=60)
    else:
        method = getattr(type(value), "_repr_mimebundle_", None)
        if callable(method):
            got = value._repr_mimebundle_(include=None, exclude=None)
            if isinstance(got, tuple):
                got = got[0] if got else None
            if isinstance(got, dict):
                for mime, data in got.items():
                    if isinstance(mime, str) and want(mime) and data is not None:
                        bundle[mime] = _encode_mime(mime, data)
        for method, mime in _REPR_METHODS:
            if mime in bundle or not want(mime) or not callable(getattr(type(value), method, None)):
                continue
            data = getattr(value, method)()
            if isinstance(data, tuple):  # (data, metadata), as IPython allows
                data = data[0] if data else None
            if data is not None:
                bundle[mime] = _encode_mime(mime, data)
    size = len(json.dumps(bundle))
    if size > DISPLAY_LIMIT:
        raise ValueError("the display bundle is %d bytes of JSON, over the %d byte limit" % (size, DISPLAY_LIMIT))
    return bundle


class Diagnostics:
    """Builds Diagnostic objects for failures in project code.

    sources: callable(filename) -> text.Source or None, for the
    modules the engine knows; other project files fall back to linecache.
    """

    def __init__(self, root: str, sources: Callable[[str], Optional[Source]], engine_dir: str) -> None:
        self.root = os.path.realpath(root)
        self.sources = sources
        self.engine_dir = os.path.realpath(engine_dir)

    def relative(self, filename: Optional[str]) -> Optional[str]:
        """Project-relative POSIX path of filename, or None outside the root."""
        if not filename or filename.startswith("<"):
            return None
        real = os.path.realpath(filename)
        if real.startswith(self.engine_dir + os.sep):
            return None
        if real != self.root and real.startswith(self.root + os.sep):
            return os.path.relpath(real, self.root).replace(os.sep, "/")
        return None

    def stack(self, tb: Optional[types.TracebackType],
              frame_names: Optional[Dict[str, str]] = None) -> List[WireObject]:
        """Frames of tb in project files, innermost last."""
        out = []
        frame_names = frame_names or {}
        for summary in traceback.extract_tb(tb):
            path = self.relative(summary.filename)
            if path is None:
                continue
            name = summary.name
            if name == "<module>" and summary.filename in frame_names:
                name = frame_names[summary.filename]
            out.append({"functionName": name, "path": path, "location": self._location(summary)})
        return out

    def _location(self, summary: traceback.FrameSummary) -> Optional[WireObject]:
        source = self.sources(summary.filename)
        colno = getattr(summary, "colno", None)
        if source is None:
            if summary.lineno is None:
                return None
            line = summary.line or ""
            return {
                "start": {"line": summary.lineno - 1, "character": 0},
                "end": {"line": summary.lineno - 1, "character": len(line)},
            }
        return source.line_range(
            summary.lineno,
            colno,
            getattr(summary, "end_lineno", None),
            getattr(summary, "end_colno", None),
        )

    def for_exception(self, exc: BaseException, location: Optional[WireObject] = None, path: Optional[str] = None,
                      expression_id: Optional[str] = None, frame_names: Optional[Dict[str, str]] = None,
                      message: Optional[str] = None) -> WireObject:
        stack = self.stack(exc.__traceback__, frame_names)
        if location is None and stack:
            location = stack[-1]["location"]
            path = path or stack[-1]["path"]
        diag: WireObject = {"kind": "Error", "message": message or exception_message(exc), "stack": stack}
        if path is not None:
            diag["path"] = path
        if location is not None:
            diag["location"] = location
        if expression_id is not None:
            diag["expressionId"] = expression_id
        return diag

    def for_syntax_error(self, exc: SyntaxError, path: str) -> WireObject:
        """A Diagnostic for a SyntaxError raised while parsing path."""
        diag: WireObject = {"kind": "Error", "message": exception_message(exc), "stack": [], "path": path}
        lineno = exc.lineno
        if lineno:
            # SyntaxError offsets are 1-based character offsets into the line.
            start = max((exc.offset or 1) - 1, 0)
            end_line = getattr(exc, "end_lineno", None) or lineno
            end = getattr(exc, "end_offset", None)
            end = max(end - 1, start) if end and end > 0 and end_line >= lineno else start
            if end_line == lineno and end <= start:
                end = start + 1
            diag["location"] = {
                "start": {"line": lineno - 1, "character": start},
                "end": {"line": end_line - 1, "character": end},
            }
        return diag
