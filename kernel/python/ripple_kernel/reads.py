"""What a statement read from outside the frame: the files it opened for
reading, and the interpreter it ran on (issue 26: nothing restored is
stale).

Files: the process's audit hook (effects.py) appends the path of every
``open`` event that only reads to GUARD.reads while a user statement runs
(the engine starts the list when a statement starts: Engine.set_expression).
When the statement ends, ``snapshot`` turns the paths into a Reads: for
each regular file, (absolute path, size, mtime_ns, a blake2b digest of its
contents when it is at most HASH_LIMIT bytes); a file that did not exist
is kept with size -1 (it appearing makes the value stale). Left out:
bytecode caches, the project's .py files (modules: their versions are in
the keys already), and files under the interpreter's prefixes and the other
sys.path entries (the installed packages: the interpreter identity below
covers them); the project's own modules are imported through the engine's
loader, which opens no file.

A cached or journalled value whose Reads are not ``current`` is not used:
the journal does not restore it (journal.py), and a run drops it from the
frame's cache before it starts (Engine._context), so it runs again and
its dependents with it. A file is current when its size and mtime_ns are
as recorded, or when its size is and its digest is (a file written again
with the same bytes).

Not seen: files opened with os.open (directory walks use it), reads by C
code that opens files itself (numpy.fromfile and
pandas.read_csv given a path use Python's open, but C extensions such as
h5py, netCDF4, sqlite3 on an existing database, pyarrow's native file
system and memory maps opened by C code do not), reads through a file
descriptor opened before the statement, reads by subprocesses, and what
comes over the network. Those values stay cached as before.

The interpreter identity (``identity``): sys.executable, sys.version,
sys.prefix and the names of the distributions installed on sys.path (their
*.dist-info and *.egg-info entries, which carry name and version), hashed.
Computed once per kernel, from directory listings only (no metadata is
parsed): it is part of every journal row's key.

Per frame, the Reads of each cached statement live in a side table keyed
by the frame and the entry's stamp (``record``, ``of``): an entry replaced
by a new run has a new stamp, so what the table holds for the old one is
never used.
"""

from __future__ import annotations

import hashlib
import os
import sys
import weakref
from typing import TYPE_CHECKING, Dict, Iterable, List, MutableMapping, Optional, Sequence, Set, Tuple

if TYPE_CHECKING:
    from .frame import Frame

# One file a statement read: (absolute path, size or -1 when absent,
# mtime_ns, digest or "").
FileRead = Tuple[str, int, int, str]
Reads = Tuple[FileRead, ...]

HASH_LIMIT = 1 << 20  # files up to this size get a content digest
MAX_FILES = 256  # files kept per statement (the first ones it opened)

_IDENTITY: List[str] = []
# Frame -> expression id -> (entry stamp, Reads).
_TABLE: MutableMapping[Frame, Dict[str, Tuple[int, Reads]]] = weakref.WeakKeyDictionary()


def _digest(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def _excluded() -> Tuple[str, ...]:
    """Directories whose files are the interpreter's (identity covers them)."""
    dirs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    root = os.getcwd()  # the project root (kernel.become_script)
    for p in sys.path:
        # (A sys.path entry above the project, PYTHONPATH=~, is not the
        # interpreter's.)
        if p and os.path.isabs(p) and p != root and not root.startswith(os.path.join(p, "")):
            dirs.add(p)
    return tuple(sorted({os.path.join(d, "") for d in dirs if d and d != os.sep}))


def _stat(path: str) -> Optional[FileRead]:
    try:
        st = os.stat(path)
    except OSError:
        return (path, -1, 0, "")
    import stat

    if not stat.S_ISREG(st.st_mode):
        return None  # a pipe, a device, /proc: not a file's contents
    digest = ""
    if st.st_size <= HASH_LIMIT:
        try:
            digest = _digest(path)
        except OSError:
            pass
    return (path, st.st_size, st.st_mtime_ns, digest)


def snapshot(paths: Sequence[object]) -> Reads:
    """The Reads of the paths a statement opened (the module doc)."""
    seen = set()
    out: List[FileRead] = []
    skip: Optional[Tuple[str, ...]] = None
    root = os.path.join(os.getcwd(), "")  # the project root (kernel.become_script)
    for p in paths:
        if isinstance(p, int):
            continue  # an open file descriptor: its open was seen before
        try:
            path = os.fsdecode(os.fspath(p))  # type: ignore[call-overload]  # what the hook saw: str, bytes or PathLike
        except (TypeError, ValueError):
            continue
        path = os.path.abspath(path)
        if path in seen or "__pycache__" in path or path.endswith(".pyc"):
            continue
        if path.endswith(".py") and path.startswith(root):
            continue  # a project module (imported: its version is in the key)
        seen.add(path)
        if skip is None:
            skip = _excluded()
        if path.startswith(skip):
            continue
        r = _stat(path)
        if r is not None:
            out.append(r)
            if len(out) >= MAX_FILES:
                break
    return tuple(out)


def current(reads: Iterable[FileRead]) -> bool:
    """Whether every file is as it was read (the module doc)."""
    for path, size, mtime, digest in reads:
        try:
            st = os.stat(path)
        except OSError:
            if size == -1:
                continue
            return False
        if size == -1 or st.st_size != size:
            return False
        if st.st_mtime_ns == mtime:
            continue
        if not digest:
            return False
        try:
            if _digest(path) != digest:
                return False
        except OSError:
            return False
    return True


def record(frame: Frame, expression_id: str, stamp: int, reads: Reads) -> None:
    """Keep the Reads of the frame's entry (expression_id, stamp)."""
    table = _TABLE.get(frame)
    if table is None:
        if not reads:
            return
        table = _TABLE[frame] = {}
    if reads:
        table[expression_id] = (stamp, reads)
    else:
        table.pop(expression_id, None)


def table(frame: Frame) -> Optional[Dict[str, Tuple[int, Reads]]]:
    """The frame's table, for of_table (one lookup for many entries)."""
    return _TABLE.get(frame)


def of_table(table: Optional[Dict[str, Tuple[int, Reads]]], expression_id: str, stamp: int) -> Reads:
    """The Reads of an entry (expression_id, stamp) in a frame's table; () if none."""
    got = table.get(expression_id) if table is not None else None
    if got is None or got[0] != stamp:
        return ()
    return got[1]


def of(frame: Frame, expression_id: str, stamp: int) -> Reads:
    """The Reads of the frame's entry (expression_id, stamp); () if none."""
    return of_table(_TABLE.get(frame), expression_id, stamp)


def stale(frame: Frame) -> List[str]:
    """The ids of the frame's cached entries whose files changed."""
    table = _TABLE.get(frame)
    if not table:
        return []
    out = []
    for expression_id, (stamp, rs) in list(table.items()):
        e = frame.cache.get(expression_id)
        if e is None or e.stamp != stamp:
            del table[expression_id]  # replaced or gone: forget
            continue
        if not current(rs):
            out.append(expression_id)
    return out


def paths(frame: Frame) -> List[str]:
    """The files the frame's cached entries read."""
    table = _TABLE.get(frame)
    if not table:
        return []
    out: Set[str] = set()
    for expression_id, (stamp, rs) in table.items():
        e = frame.cache.get(expression_id)
        if e is not None and e.stamp == stamp:
            out.update(r[0] for r in rs)
    return sorted(out)


def identity() -> str:
    """The interpreter identity's hash (the module doc); once per kernel."""
    if _IDENTITY:
        return _IDENTITY[0]
    parts = [sys.executable, sys.version, sys.prefix]
    dists = set()
    for d in sys.path:
        if not d or not os.path.isdir(d):
            continue
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            if n.endswith((".dist-info", ".egg-info")):
                dists.add(n)
    parts.extend(sorted(dists))
    h = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    _IDENTITY.append(h)
    return h
