"""Output that belongs to a value (PROTOCOL.md 8.3): a statement's
stdout/stderr text and its displayData bundles, kept with its cached value
(here, in memory; in the value journal, journal.py) and sent again, marked
replayed, to clients that did not see them.

Collecting: the engine starts a Collector's statement when a statement
starts (Engine.set_expression) and takes its items when it ends. The
kernel's output frames reach ``chunk`` (Kernel.tee_output: the pump thread
and the main thread, under the connection's send lock), displays reach
``display`` (the main thread). Items, in order: ("stdout"|"stderr", text)
and ("display", data), at most CAP bytes per statement; beyond it the
rest is dropped and a last ("stderr", note) says how much.

Keeping: per frame, the items of each cached statement, keyed by the
entry's stamp as reads.py keeps files (``record``, ``of``). Replaying:
statements the journal restored in a request (``restored``) whose entry is
still that one at the end of the request get one "replay" progress event,
in statement order (Engine._replay).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import TYPE_CHECKING, Callable, Dict, List, MutableMapping, Optional, Tuple

if TYPE_CHECKING:
    from .frame import Frame
    from .wire import Payload

Item = Tuple[str, object]  # (stream or "display", text or the displayData's data)
Items = Tuple[Item, ...]

CAP = 1 << 20  # bytes kept per statement

_TABLE: MutableMapping[Frame, Dict[str, Tuple[int, Items]]] = weakref.WeakKeyDictionary()


class Collector:
    """The items of the statement running now (the module doc)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # chunk comes from the pump thread too
        self.expression: Optional[str] = None  # guarded by lock: the statement collected, None: none
        self.items: List[Item] = []  # guarded by lock
        self.size = 0  # guarded by lock: bytes in items
        self.cut = 0  # guarded by lock: bytes dropped beyond CAP
        # A child that user code forks has the pump thread's lock as it was
        # at the fork (perhaps held): it starts with a new one, collecting nothing.
        # (Weakly: a registration cannot be undone, engines of tests come and go.)
        forked = weakref.WeakMethod(self._forked)
        os.register_at_fork(after_in_child=lambda: _call(forked()))

    def _forked(self) -> None:
        self.lock = threading.Lock()
        self.expression, self.items, self.size, self.cut = None, [], 0, 0

    def start(self, expression_id: str) -> None:
        with self.lock:
            self.expression, self.items, self.size, self.cut = expression_id, [], 0, 0

    def take(self) -> Items:
        """End the statement; its items."""
        with self.lock:
            items, cut = self.items, self.cut
            self.expression, self.items, self.size, self.cut = None, [], 0, 0
        # Text decoded only now: a chunk may end inside a UTF-8 sequence.
        out = [(k, bytes(v).decode("utf-8", "replace") if isinstance(v, bytearray) else v) for k, v in items]
        if cut:
            out.append(("stderr", "\n[ripple: %d bytes of this statement's output not kept]\n" % cut))
        return tuple(out)

    def _room(self, size: int) -> bool:
        if self.size + size > CAP:
            self.cut += size
            return False
        self.size += size
        return True

    def chunk(self, kind: bytes, expression_id: Optional[str], data: Payload) -> None:
        """An output frame (kind b"out" or b"err") sent for expression_id."""
        if self.expression is None or expression_id != self.expression:
            return
        with self.lock:
            if expression_id == self.expression:
                if not self._room(len(data)):
                    return
                stream = "stdout" if kind == b"out" else "stderr"
                items = self.items
                last = items[-1][1] if items and items[-1][0] == stream else None
                if isinstance(last, bytearray):
                    last += data
                else:
                    items.append((stream, bytearray(data)))

    def display(self, expression_id: Optional[str], data: object, size: int) -> None:
        if self.expression is None or expression_id != self.expression:
            return
        with self.lock:
            if self._room(size):
                self.items.append(("display", data))


def _call(fn: Optional[Callable[[], None]]) -> None:
    if fn is not None:
        fn()


def record(frame: Frame, expression_id: str, stamp: int, items: Items) -> None:
    """Keep the items of the frame's entry (expression_id, stamp)."""
    table = _TABLE.get(frame)
    if table is None:
        if not items:
            return
        table = _TABLE[frame] = {}
    if items:
        table[expression_id] = (stamp, items)
    else:
        table.pop(expression_id, None)


def table(frame: Frame) -> Optional[Dict[str, Tuple[int, Items]]]:
    """The frame's table, for of_table (one lookup for many entries)."""
    return _TABLE.get(frame)


def of_table(table: Optional[Dict[str, Tuple[int, Items]]], expression_id: str, stamp: int) -> Items:
    """The items of an entry (expression_id, stamp) in a frame's table; () if none."""
    got = table.get(expression_id) if table is not None else None
    if got is None or got[0] != stamp:
        return ()
    return got[1]


def of(frame: Frame, expression_id: str, stamp: int) -> Items:
    """The items of the frame's entry (expression_id, stamp); () if none."""
    return of_table(_TABLE.get(frame), expression_id, stamp)


def size_of(data: object) -> int:
    """About the bytes of a displayData's data (its strings), for CAP."""
    if isinstance(data, str):
        return len(data)
    if isinstance(data, dict):
        return sum(size_of(v) for v in data.values())
    return 16
