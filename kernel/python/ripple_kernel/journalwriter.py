"""The value journal's writer thread (journal.py's module doc: the main
thread pickles, this thread writes the rows, with a connection of its own,
so that a commit or a WAL checkpoint never holds up a request)."""

from __future__ import annotations

import queue
import signal
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Optional, Tuple, Union

if TYPE_CHECKING:
    from .journal import Journal

# An item of the writer's queue (see Writer).
WriterItem = Union[None, threading.Event, Tuple[object, ...]]


class Writer:
    """The journal's writer thread and its queue (the module doc). Items:
    ("row", key, keys, data, size), ("touch", key), ("reopen",),
    ("released", key, frame key, data) and ("gc", keys no entry names)
    for released values (overwritten.py), a threading.Event (set
    when everything before it is done), None (stop)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.queue: queue.SimpleQueue[WriterItem] = queue.SimpleQueue()
        self.thread: Optional[threading.Thread] = None

    def put(self, item: WriterItem) -> None:
        if self.thread is None:
            # No signal for this thread: SIGINT and the kernel's other
            # signals stay the main thread's (the kernel's output pump does the same).
            old = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            try:
                self.thread = threading.Thread(target=self._run, name="ripple-journal", daemon=True)
                self.thread.start()
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
        self.queue.put(item)

    def flush(self, timeout: float) -> None:
        """Wait (up to timeout seconds) until the queued items are written."""
        if self.thread is None:
            return
        done = threading.Event()
        self.queue.put(done)
        done.wait(timeout)

    def stop(self, timeout: float) -> None:
        if self.thread is None:
            return
        self.queue.put(None)
        self.thread.join(timeout)
        self.thread = None

    def _run(self) -> None:
        j = self.journal
        db: Optional[sqlite3.Connection] = None
        while True:
            item = self.queue.get()
            if item is None:
                break
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                if item[0] == "reopen":
                    # The file was moved aside: the next item opens the new one.
                    if db is not None:
                        db.close()
                    db = None
                    continue
                if db is None:
                    db = sqlite3.connect(j.path, timeout=5.0, isolation_level=None, check_same_thread=False)
                    db.execute("PRAGMA synchronous=NORMAL")
                if item[0] == "row":
                    _, key, keys, data, size = item
                    assert isinstance(key, str)
                    with db:
                        db.execute("BEGIN IMMEDIATE")
                        db.execute(
                            "INSERT OR REPLACE INTO frames(key, keys, data, size, used) VALUES(?, ?, ?, ?, ?)",
                            (key, keys, data, size, time.time()),
                        )
                        j._evict(db, key)
                elif item[0] == "released":
                    _, key, frame, data = item
                    assert isinstance(data, bytes)
                    db.execute("INSERT OR REPLACE INTO released(key, frame, data, size) VALUES(?, ?, ?, ?)",
                               (key, frame, data, len(data)))
                elif item[0] == "gc":
                    dead = item[1]
                    assert isinstance(dead, frozenset)
                    db.executemany("DELETE FROM released WHERE key=?", [(k,) for k in dead])
                else:
                    db.execute("UPDATE frames SET used=? WHERE key=?", (time.time(), item[1]))
            except Exception as exc:
                j.log("value journal: not written: %s: %s" % (type(exc).__name__, exc))
        if db is not None:
            db.close()
