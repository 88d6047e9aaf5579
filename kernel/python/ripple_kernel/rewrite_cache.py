"""A cache of pytest's assertion rewriting that does not depend on the
test tree being writable.

pytest rewrites the asserts of every test module and conftest.py it
imports (an AST pass that is most of collection on assert-heavy suites:
sympy's logic and sets tests spend 8 of their 10 s of collection there)
and keeps the result in a pyc beside the source, in __pycache__. It
cannot when Python must not write bytecode (PYTHONDONTWRITEBYTECODE, -B:
common in containers and CI images) or the tree is read-only (a system
site-packages, a Nix store, a mounted checkout): then every pytest
process, and so every kernel of a ripple run, rewrites every module again.

install() wraps pytest's _rewrite_test, which its import hook calls only
when its own pyc is missing or stale, with a cache in a directory of
ripple's own (RIPPLE_REWRITE_CACHE, default $XDG_CACHE_HOME/ripple/
pytest-rewrite or ~/.cache/...; "off" turns it off). So pytest's own pyc,
where it can write one, still comes first and is untouched, and what runs
is always pytest's rewritten code.

An entry is keyed by the source file's path (one entry per file, replaced
when the file changes) and holds that path and a digest of everything the
rewritten code depends on: the source's bytes, its path (the code's
filename), pytest's version, the interpreter's bytecode magic and the
enable_assertion_pass_hook ini option. An entry whose digest differs is
rewritten and replaced; one that cannot be read is treated as missing.
Writes go through a temporary file and a rename, so kernels that rewrite
the same module at once (several kernels of a run, several runs) each
leave a whole entry. At most once a day (a stamp file's time) a kernel
that installs the cache removes the entries whose source file is gone
(suites in temporary directories) or that nothing wrote for 30 days.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
import time
from types import CodeType
from typing import TYPE_CHECKING, Optional, Tuple, cast

if TYPE_CHECKING:
    import pathlib

_HEADER = b"ripple-rewrite-2\n"
_DIGEST_SIZE = 32
_PRUNE_EVERY = 24 * 3600
_KEEP_FOR = 30 * 24 * 3600


def cache_dir() -> str:
    """The cache's directory, or "" when it is turned off."""
    d = os.environ.get("RIPPLE_REWRITE_CACHE", "")
    if d == "off":
        return ""
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):
        return ""
    return os.path.join(base, "ripple", "pytest-rewrite")


def install() -> str:
    """Wrap pytest's _rewrite_test with the cache, once per process.
    Returns the cache's directory, or "" when it is off or this pytest has
    no _rewrite_test of the shape it knows (then nothing changes)."""
    directory = cache_dir()
    if not directory:
        return ""
    try:
        import pytest
        from _pytest.assertion import rewrite
    except ImportError:
        return ""
    current = getattr(rewrite, "_rewrite_test", None)
    if current is None:
        return ""
    cached = getattr(current, "_ripple_cache", None)
    if cached is not None:
        return str(cached)
    original = current
    tag = ("%s\0%s\0" % (pytest.__version__, sys.implementation.cache_tag)).encode() + importlib.util.MAGIC_NUMBER

    def _rewrite_test(fn: pathlib.Path, config: pytest.Config) -> Tuple[os.stat_result, CodeType]:
        try:
            before = os.stat(fn)
            source = fn.read_bytes()
            hook = bool(config.getini("enable_assertion_pass_hook"))
        except (OSError, ValueError, AttributeError):
            return original(fn, config)
        path = str(fn)
        digest = hashlib.blake2b(b"%s\0%s\0%d\0%s" % (tag, path.encode("utf-8", "surrogateescape"), hook, source),
                                 digest_size=_DIGEST_SIZE).digest()
        entry = os.path.join(directory, hashlib.blake2b(path.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest())
        co = _read(entry, path, digest)
        if co is not None:
            try:
                return os.stat(fn), co
            except OSError:
                return original(fn, config)
        stat, co = original(fn, config)
        # pytest read the file again: store its code only when the file
        # did not change in between (its stat then and before our read).
        if (stat.st_mtime_ns, stat.st_size, stat.st_ino) == (before.st_mtime_ns, before.st_size, before.st_ino) \
                and stat.st_size == len(source):
            _write(directory, entry, path, digest, co)
        return stat, co

    _rewrite_test._ripple_cache = directory  # type: ignore[attr-defined]  # marks the wrapper: installed once
    rewrite._rewrite_test = _rewrite_test
    prune(directory)
    return directory


def _prefix(path: str, digest: bytes) -> bytes:
    return _HEADER + path.encode("utf-8", "surrogateescape") + b"\n" + digest


def _read(entry: str, path: str, digest: bytes) -> Optional[CodeType]:
    try:
        with open(entry, "rb") as f:
            data = f.read()
    except OSError:
        return None
    prefix = _prefix(path, digest)
    if not data.startswith(prefix):
        return None
    try:
        return cast(CodeType, marshal.loads(data[len(prefix):]))  # _write stores code objects
    except (EOFError, ValueError, TypeError):
        return None


def _write(directory: str, entry: str, path: str, digest: bytes, co: CodeType) -> None:
    tmp = "%s.%d.tmp" % (entry, os.getpid())
    try:
        os.makedirs(directory, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(_prefix(path, digest) + marshal.dumps(co))
        os.replace(tmp, entry)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def prune(directory: str, now: Optional[float] = None) -> Optional[int]:
    """Remove the entries whose source is gone or that are older than
    _KEEP_FOR, unless a prune ran in the last _PRUNE_EVERY seconds.
    Returns how many it removed (None: it did not run)."""
    now = time.time() if now is None else now
    stamp = os.path.join(directory, "pruned")
    try:
        if now - os.stat(stamp).st_mtime < _PRUNE_EVERY:
            return None
    except OSError:
        pass
    try:
        names = os.listdir(directory)
        with open(stamp, "wb"):
            pass
        os.utime(stamp, (now, now))
    except OSError:
        return None
    removed = 0
    for name in names:
        entry = os.path.join(directory, name)
        if name == "pruned":
            continue
        try:
            age = now - os.stat(entry).st_mtime
            if name.endswith(".tmp"):
                stale = age > 3600  # its writer died
            else:
                stale = age > _KEEP_FOR or not _source_exists(entry)
            if stale:
                os.unlink(entry)
                removed += 1
        except OSError:
            continue
    return removed


def _source_exists(entry: str) -> bool:
    """Whether the source file an entry was written for is still there
    (an entry that does not start as one is not worth keeping either)."""
    with open(entry, "rb") as f:
        head = f.readline()
        source = f.readline()[:-1]
    return head == _HEADER and os.path.exists(os.fsdecode(source))
