"""The wire format of kernel/PROTOCOL.md: frames, their JSON payloads, the
cap on a result, and how an exception is described to the Go side.

A frame is a header line ``KIND ID SIZE\\n`` followed by SIZE payload bytes;
payloads are UTF-8 JSON objects (``WireObject``) except for `out`/`err`,
which carry raw output bytes. Nothing here holds state or touches the
socket: kernel.py and capture.py write what this module encodes.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Optional, Set, Tuple, Union

from .api import WireObject

if TYPE_CHECKING:
    import traceback  # imported when an error is described, not at start

Payload = Union[bytes, bytearray, memoryview]

PROTOCOL_VERSION = 1
RESULT_CAP = 64 * 1024  # bytes of a `res` payload, PROTOCOL.md "Frames"
OUT_FRAME_MAX = 1 << 20  # largest `out`/`err` payload
HEADER_MAX = 64  # longest header line, newline included
SMALL_FRAME = 16 * 1024  # below this, header and payload go in one send

# The directory holding the kernel's own files (the install directory, and
# this package inside it): their frames are hidden from user tracebacks.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
INSTALL_DIR = os.path.dirname(PACKAGE_DIR)


class ProtocolError(Exception):
    """The Go side sent something that is not a valid frame."""


class MethodNotFound(Exception):
    """A request named a method this kernel does not have."""


class InvalidParams(Exception):
    """A request's params do not fit its method."""


class ResultTooLarge(Exception):
    """A result did not fit in RESULT_CAP even with its strings cut."""


# ---------------------------------------------------------------- frames


def frame_head(kind: bytes, rid: int, payload: Payload) -> bytes:
    """The header line of a frame."""
    return b"%s %d %d\n" % (kind, rid, len(payload))


def read_frame(rfile: BinaryIO) -> Optional[Tuple[bytes, int, bytes]]:
    """Read one frame; returns (kind, id, payload) or None at EOF."""
    line = rfile.readline(HEADER_MAX + 1)
    if not line:
        return None
    if len(line) > HEADER_MAX or line[-1:] != b"\n":
        raise ProtocolError("header line %r is longer than %d bytes or cut" % (line[:HEADER_MAX], HEADER_MAX))
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2][:-1].isdigit():
        raise ProtocolError("malformed header line %r" % line)
    size = int(parts[2])
    payload = rfile.read(size) if size else b""
    if len(payload) != size:
        return None
    return parts[0], int(parts[1]), payload


# ---------------------------------------------------------------- JSON


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_ASCII_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))
# Skips json.loads' encoding sniffing; typeshed does not declare scan_once.
_scan_once: Callable[[str, int], Tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads(payload: bytes) -> object:
    """Decode a request payload: UTF-8 JSON, nothing after the value."""
    text = payload.decode("utf-8").lstrip()
    try:
        value, end = _scan_once(text, 0)
    except StopIteration as e:
        raise ValueError("invalid JSON at character %d" % e.value) from None
    if end != len(text) and text[end:].strip():
        raise ValueError("extra data after the JSON value at character %d" % end)
    return value


def _finite(obj: object) -> object:
    """A copy of obj with NaN and infinities replaced by strings (JSON has none)."""
    if isinstance(obj, float):
        if obj != obj:
            return "NaN"
        if obj in (float("inf"), float("-inf")):
            return "Infinity" if obj > 0 else "-Infinity"
        return obj
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def dumps(obj: object) -> bytes:
    """Encode obj as UTF-8 JSON bytes; NaN/inf become strings, lone
    surrogates are escaped so the result is always valid JSON."""
    try:
        text = _ENCODER.encode(obj)
    except ValueError:  # NaN or inf somewhere
        obj = _finite(obj)
        text = _ENCODER.encode(obj)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: \u-escape everything
        return _ASCII_ENCODER.encode(obj).encode("ascii")


def _cut(text: str, limit: int) -> str:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    head = data[:limit].decode("utf-8", "ignore")
    cut = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return "%s[ripple: %d bytes cut]" % (head, cut)


def _cut_strings(obj: object, limit: int) -> object:
    if isinstance(obj, str):
        return _cut(obj, limit)
    if isinstance(obj, dict):
        return {k: _cut_strings(v, limit) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_cut_strings(v, limit) for v in obj]
    return obj


def capped(result: WireObject) -> bytes:
    """Encode a `res` payload, cutting long strings to stay within RESULT_CAP."""
    data = dumps(result)
    if len(data) <= RESULT_CAP:
        return data
    for limit in (16384, 4096, 1024, 256, 64):
        small = dumps(_cut_strings(result, limit))
        if len(small) <= RESULT_CAP:
            return small
    message = "result of %d bytes does not fit in the %d-byte cap" % (len(data), RESULT_CAP)
    return dumps({"status": "err", "error": {"type": "ResultTooLarge", "message": message, "traceback": ""}})


# ---------------------------------------------------------------- errors


def _type_name(exc: BaseException) -> str:
    t = type(exc)
    if t.__module__ in ("builtins", "__main__", None):
        return t.__qualname__
    return "%s.%s" % (t.__module__, t.__qualname__)


def message(exc: BaseException) -> str:
    """str(exc), or a stand-in when that fails."""
    try:
        return str(exc)
    except Exception:
        return "<unprintable %s>" % type(exc).__name__


def _is_kernel_file(filename: str) -> bool:
    d = os.path.dirname(filename)
    return d == INSTALL_DIR or d == PACKAGE_DIR


def _trim(te: Optional[traceback.TracebackException], seen: Set[int], syntax: bool = False) -> None:
    """Drop the kernel's own frames from a TracebackException chain, unless
    only kernel frames are left (then the kernel itself failed: keep them).
    A SyntaxError's location is in its message, not in a frame: its kernel
    frames always go."""
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    import traceback

    user = [f for f in te.stack if not _is_kernel_file(f.filename)]
    if user or syntax:
        te.stack = traceback.StackSummary.from_list(user)
    _trim(te.__cause__, seen)
    _trim(te.__context__, seen)


def describe(exc: BaseException) -> WireObject:
    """{type, message, traceback} of an exception, trimmed to user code."""
    if isinstance(exc, (InvalidParams, MethodNotFound, ResultTooLarge)):
        # The kernel's own request errors: the message says it all.
        return {"type": type(exc).__name__, "message": message(exc), "traceback": ""}
    try:
        import traceback

        te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        _trim(te, set(), isinstance(exc, SyntaxError))
        text = "".join(te.format())
    except Exception as e:  # never fail to report a failure
        text = "<traceback unavailable: %s>" % message(e)
    return {"type": _type_name(exc), "message": message(exc), "traceback": text}
