"""External effects of user statements, seen through Python's audit hooks
(../shared/PROTOCOL.md 8.2): the one place that lists the audit events
ripple treats as effects and what it allows.

An automatic run (typing caused it; execute's ``effects: "hold"``) must
not change the world outside the process: an effect is refused before it
happens by raising HeldEffect (a PermissionError) from the audit hook, and
the statement that tried is reported held. Every run, automatic or not,
records the effects each statement made (``effects`` on its Value).

Effects (held in hold mode, recorded always), the events of EVENTS:
- on a path outside the temp dir (tempfile.gettempdir()) and the user's
  cache dir ($XDG_CACHE_HOME, else ~/.cache), both resolved with realpath,
  or inside the project (its files are the user's even in a project that
  lies in the temp dir, /tmp/demo):
  opening a file to write, append, create or truncate (``open``, also
  os.open's flags), removing, renaming, linking, truncating, mkdir (of a
  path that does not exist yet), chmod/chown/utime/xattrs,
  shutil.rmtree/move/copy*/make_archive/unpack_archive, creating a new
  sqlite3 database file;
- anywhere: starting a process (subprocess.Popen, os.system, os.exec*,
  os.spawn*, os.posix_spawn, os.fork, os.forkpty, pty.spawn, os.startfile),
  opening a browser (webbrowser.open), and socket.connect / sendto /
  sendmsg to an IPv4 or IPv6 address that is not loopback (AF_UNIX and
  other families are local: allowed).
Not effects: reads (open for reading, os.open O_RDONLY; the paths open()
reads are collected in GUARD.reads for reads.py, which keys values by the
files they read), Python's bytecode
caches (a path with a ``__pycache__`` component, or under
sys.pycache_prefix), /dev/null, a file
descriptor already open, and anything the kernel itself does: the hook
looks at events only while GUARD.mode is set, which the engine does around
the exec of a user statement and nothing else (journal writes, pipes, the
code cache run with it off).

What the hook cannot see: writes by C code with its own fopen/open (C
extensions, sqlite3's writes to a database that already exists, a
subprocess's own effects once it was allowed), and effects through
ctypes. Those are neither held nor recorded.

Threads: the events of the kernel's main thread count, and those of the
threads a user statement starts (marked at Thread.start, transitively);
the kernel's own helper threads (output pump, journal writer) never.

One hook per process, installed once (install(); audit hooks cannot be
removed): it costs an attribute check for every audit event while no user
statement runs, and a dict lookup while one runs.
"""

from __future__ import annotations

import errno
import os
import socket
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

# GUARD.mode: what the hook does with the events it sees.
OFF = 0  # the kernel's own code runs: nothing
RECORD = 1  # a user statement of an explicit run: effects are recorded
HOLD = 2  # a user statement of an automatic run: effects are refused (and recorded)

MAX_EFFECTS = 10  # effects recorded per statement
ARG_LIMIT = 200  # characters of one argument's repr
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_FLAG_NAMES = [(getattr(os, n), n) for n in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_EXCL", "O_TRUNC", "O_APPEND")]
_ALWAYS_ALLOWED = frozenset(["/dev/null"])
# Modes of an "open" event that only read (None: os.open's, whose flags say).
_READ_MODES = frozenset([None, "r", "rb", "rt", "br", "tr", "U", "rU", "Ur", "rbU"])

# An event's check: None (not an effect) or the arguments to show.
Check = Callable[["Guard", Tuple[Any, ...]], Optional[Sequence[str]]]


class HeldEffect(PermissionError):
    """The refusal of an effect in an automatic run: a PermissionError, so
    code that tolerates an unwritable disk carries on."""


class Held:
    """The first effect a statement tried and was refused."""

    __slots__ = ("event", "args", "call")

    def __init__(self, event: str, args: List[str], call: str) -> None:
        self.event = event  # the audit event, "open", "shutil.rmtree"
        self.args = args  # the arguments shown, short reprs
        self.call = call  # the effect written as a call: "open('a.txt', 'w')"

    def payload(self) -> Dict[str, object]:
        """The held statement's Pending payload (8.2)."""
        return {"type": "Pending", "message": "held: " + self.call,
                "reason": {"kind": "held", "event": self.event, "args": list(self.args)}}


class Guard:
    """The state the audit hook reads: one per process (GUARD).

    The engine sets mode around a user statement's exec, and reads effects
    and held after it; it clears them before. Everything else is the
    hook's: the kernel's main thread writes mode, any thread may append."""

    __slots__ = ("mode", "effects", "held", "reads", "roots", "project", "dirs", "main", "busy", "installed")

    def __init__(self) -> None:
        self.mode = OFF
        self.effects: Optional[List[str]] = None  # the running statement's effects, as calls
        self.held: Optional[Held] = None  # the first effect it was refused
        # The paths the running statement opened for reading (reads.py),
        # None when nobody collects them; the engine sets and takes it.
        self.reads: Optional[List[object]] = None
        self.roots: Tuple[str, ...] = ()  # realpaths where files may change (refresh_roots)
        # The project root's realpath ("" unknown): its files are the
        # user's even when it lies in the temp or cache dir (a project in
        # /tmp/demo), so changes under it are effects all the same.
        self.project = ""
        # Directory -> its realpath, for the writes of a file-heavy
        # statement; emptied by every event but "open" (one may move or
        # link a directory) and when it grows large.
        self.dirs: Dict[str, str] = {}
        self.main = threading.get_ident()  # the thread user statements run on
        self.busy: Set[int] = set()  # threads whose event the hook is classifying (it never looks at its own)
        self.installed = False

    def refresh_roots(self) -> None:
        """The temp and cache dirs as they are now (user code may have
        changed TMPDIR or tempfile.tempdir): called with mode OFF, since
        gettempdir() may write a probe file the first time."""
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        roots = []
        # sys.pycache_prefix (PYTHONPYCACHEPREFIX) holds bytecode caches too.
        for root in (tempfile.gettempdir(), cache, getattr(sys, "pycache_prefix", None) or ""):
            if os.path.isabs(root):
                real = os.path.realpath(root)
                if real != os.sep:
                    roots.append(real)
        self.roots = tuple(roots)
        self.dirs.clear()

    def real_dir(self, path: str) -> str:
        """os.path.realpath of directory path (dirs)."""
        real = self.dirs.get(path)
        if real is None:
            if len(self.dirs) >= 256:
                self.dirs.clear()
            real = self.dirs[path] = os.path.realpath(path)
        return real

    def subject(self, ident: int) -> bool:
        """Whether the events of thread ident (the current one) count: the
        main thread's, and those of threads a user statement started."""
        return ident == self.main or bool(getattr(threading.current_thread(), "_ripple_effects", False))

    def see(self, event: str, args: Tuple[Any, ...], check: Check) -> None:
        """An event of EVENTS while a user statement runs: record it when it
        is an effect; in hold mode refuse it."""
        ident = threading.get_ident()
        if ident in self.busy or not self.subject(ident):
            return
        self.busy.add(ident)
        if event != "open":
            self.dirs.clear()
        try:
            shown = check(self, args)
        except Exception:
            shown = None  # an argument the checks do not understand: not refused
        finally:
            self.busy.discard(ident)
        if shown is None:
            return
        call = "%s(%s)" % (event, ", ".join(shown))
        effects = self.effects
        if effects is None:
            effects = self.effects = []
        if len(effects) < MAX_EFFECTS and (not effects or effects[-1] != call):
            effects.append(call)
        if self.mode == HOLD:
            if self.held is None:
                self.held = Held(event, list(shown), call)
            raise HeldEffect(errno.EPERM, "held by ripple (a run caused by typing makes no external effects; "
                                          "run the statement to allow it): " + call)


GUARD = Guard()

# The key of an object in the engine's own bookkeeping (Frame.mutlog, the
# walks of objects.py, the plans' node memos): constant for the object's
# life and unique among live objects, as id() is (object.__hash__ is its
# address, rotated), but not audited. id() raises the audit event
# "builtins.id", so with the hook installed each call costs a call of it
# (~0.3 us): a thousand per keystroke, in a long function.
object_key = object.__hash__

# -- arguments as they are shown -------------------------------------------------


def _short(text: str) -> str:
    return text if len(text) <= ARG_LIMIT else text[:ARG_LIMIT - 3] + "..."


def _arg(value: object) -> str:
    """A short repr; a path-like or bytes as the str it names."""
    if isinstance(value, (bytes, os.PathLike)):
        try:
            value = os.fsdecode(os.fspath(value))
        except (TypeError, ValueError):
            pass
    return _short(repr(value))


def _mode(value: object) -> str:
    return oct(value) if isinstance(value, int) else _arg(value)


def _flags(flags: int) -> str:
    names = ["os." + name for bit, name in _FLAG_NAMES if flags & bit]
    return "|".join(names) if names else "os.O_RDONLY"


# -- where a path is -----------------------------------------------------------------


def _fd_dir(fd: int) -> Optional[str]:
    """The directory an open dir_fd names, where the system says it
    (Linux's /proc, macOS's F_GETPATH); None elsewhere."""
    try:
        return os.readlink("/proc/self/fd/%d" % fd)
    except OSError:
        pass
    import fcntl

    get_path = getattr(fcntl, "F_GETPATH", None)
    if get_path is None:
        return None
    try:
        return os.fsdecode(fcntl.fcntl(fd, get_path, bytes(1024)).rstrip(b"\0"))
    except OSError:
        return None


def _outside(guard: Guard, path: Any, dir_fd: object = None, follow: bool = True) -> bool:
    """Whether changing path changes the world: it is outside the temp and
    cache dirs, not a bytecode cache, not /dev/null. An open file
    descriptor (an int) is not a path: its open was the effect. follow:
    the change goes to what a final symbolic link names (a write), else to
    the link itself (a remove)."""
    if isinstance(path, int):
        return False
    p = os.fsdecode(os.fspath(path))  # not str, bytes or PathLike: TypeError, not refused
    if p in _ALWAYS_ALLOWED or _in_pycache(p):
        return False
    if not os.path.isabs(p):
        base = os.getcwd()
        if isinstance(dir_fd, int) and dir_fd >= 0:
            found = _fd_dir(dir_fd)
            if found is None:
                return True
            base = found
        p = os.path.join(base, p)
    head, tail = os.path.split(p.rstrip(os.sep) or os.sep)
    if tail in ("", ".", ".."):
        real = os.path.realpath(p)
    else:
        real = os.path.join(guard.real_dir(head), tail)
        if follow and os.path.islink(real):
            real = os.path.realpath(real)
    if _in_pycache(real):
        return False
    project = guard.project
    if project and (real == project or real.startswith(project + os.sep)):
        return True
    for root in guard.roots:
        if real == root or real.startswith(root + os.sep):
            return False
    return True


def _in_pycache(path: str) -> bool:
    return "__pycache__" in path and "__pycache__" in path.split(os.sep)


# -- the events ------------------------------------------------------------------------
# Each check returns None (not an effect) or the arguments to show.


def _open(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
    # ("open", path, mode, flags): io.open gives its mode string, os.open
    # and FileIO None and their flags.
    path, mode, flags = args[0], args[1], args[2]
    if isinstance(mode, str):
        writes = any(c in mode for c in "wax+")
    else:
        writes = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
    if not writes or not _outside(guard, path):
        return None
    if isinstance(mode, str):
        return [_arg(path), _arg(mode)]
    return [_arg(path), _flags(flags)]


def _path(index: int, dir_fd: Optional[int], follow: bool, shown: Sequence[int],
          fmt: Sequence[Callable[[object], str]] = ()) -> Check:
    """A check of the event's path argument index (its dir_fd argument)."""
    def check(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
        fd = args[dir_fd] if dir_fd is not None and dir_fd < len(args) else None
        if not _outside(guard, args[index], fd, follow):
            return None
        return [(fmt[k] if k < len(fmt) else _arg)(args[i]) for k, i in enumerate(shown)]
    return check


def _mkdir(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
    # os.makedirs(exist_ok=True) calls mkdir on a directory that exists:
    # it changes nothing.
    path, dir_fd = args[0], args[2]
    if isinstance(path, (str, bytes, os.PathLike)) and not (isinstance(dir_fd, int) and dir_fd >= 0):
        if os.path.lexists(path):
            return None
    return [_arg(path)] if _outside(guard, path, dir_fd, False) else None


def _two(first: int, second: int, dir_fds: Tuple[Optional[int], Optional[int]], follow: bool = False) -> Check:
    """A check of an event that changes both of two paths (a rename) or the
    second one (first -1: a copy, a link)."""
    def check(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
        fds = [args[i] if i is not None and i < len(args) else None for i in dir_fds]
        changed = (first >= 0 and _outside(guard, args[first], fds[0], follow)) or _outside(guard, args[second], fds[1], follow)
        return [_arg(args[0]), _arg(args[1])] if changed else None
    return check


def _always(*shown: int) -> Check:
    def check(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
        return [_arg(args[i]) for i in shown if i < len(args)]
    return check


def _address(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
    # ("socket.connect", sock, address), also sendto/sendmsg.
    sock, address = args[0], args[1]
    if getattr(sock, "family", None) not in (socket.AF_INET, getattr(socket, "AF_INET6", None)):
        return None  # AF_UNIX and the other families stay on this machine
    if not isinstance(address, tuple) or not address:
        return None  # sendmsg without an address: the connect was checked
    if _local_host(address[0]):
        return None
    return [_arg(address)]


def _local_host(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    if host in ("", "localhost") or host.endswith(".localhost"):
        return True
    import ipaddress

    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False  # a name: where it leads is not known here
    return ip.is_loopback or ip.is_unspecified


def _sqlite(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
    # Connecting to a database file that does not exist creates it; what
    # SQL writes to one that exists is not seen (the module doc).
    database = args[0]
    if isinstance(database, (bytes, os.PathLike)):
        database = os.fsdecode(os.fspath(database))
    if not isinstance(database, str) or database in ("", ":memory:"):
        return None
    path = database
    if path.startswith("file:"):
        path, _, query = path[5:].partition("?")
        if "mode=ro" in query or "mode=memory" in query:
            return None
    if os.path.exists(path) or not _outside(guard, path):
        return None
    return [_arg(database)]


def _system(guard: Guard, args: Tuple[Any, ...]) -> Optional[Sequence[str]]:
    return [_arg(args[0])]


# The audit events that may be effects, and their checks (CPython 3.9 to
# 3.13; an event a version does not raise is simply never seen).
EVENTS: Dict[str, Check] = {
    "open": _open,
    "os.remove": _path(0, 1, False, [0]),  # also os.unlink
    "os.rmdir": _path(0, 1, False, [0]),
    "os.rename": _two(0, 1, (2, 3)),  # also os.replace
    "os.link": _two(-1, 1, (None, 3)),
    "os.symlink": _two(-1, 1, (None, 2)),
    "os.truncate": _path(0, None, True, [0, 1]),  # also os.ftruncate (an fd: not a path)
    "os.mkdir": _mkdir,
    "os.chmod": _path(0, 2, True, [0, 1], [_arg, _mode]),
    "os.chown": _path(0, 3, True, [0, 1, 2]),
    "os.chflags": _path(0, None, True, [0, 1]),
    "os.utime": _path(0, 3, True, [0]),
    "os.setxattr": _path(0, None, True, [0, 1]),
    "os.removexattr": _path(0, None, True, [0, 1]),
    "shutil.rmtree": _path(0, 1, False, [0]),
    "shutil.move": _two(0, 1, (None, None)),
    "shutil.copyfile": _two(-1, 1, (None, None), True),
    "shutil.copytree": _two(-1, 1, (None, None), True),
    "shutil.copymode": _two(-1, 1, (None, None), True),
    "shutil.copystat": _two(-1, 1, (None, None), True),
    "shutil.chown": _path(0, None, True, [0, 1, 2]),
    "shutil.make_archive": _path(0, None, True, [0, 1]),
    "shutil.unpack_archive": _path(1, None, True, [0, 1]),
    "sqlite3.connect": _sqlite,
    "subprocess.Popen": _always(1),
    "os.system": _system,
    "os.exec": _always(0, 1),
    "os.spawn": _always(1, 2),
    "os.posix_spawn": _always(0, 1),
    "os.fork": _always(),
    "os.forkpty": _always(),
    "pty.spawn": _always(0),
    "os.startfile": _always(0),
    "webbrowser.open": _always(0),
    "socket.connect": _address,  # also connect_ex
    "socket.sendto": _address,
    "socket.sendmsg": _address,
}


def install() -> Guard:
    """Install the process's one audit hook (once; later calls return the
    guard) and mark the threads user statements start. Returns GUARD."""
    guard = GUARD
    if guard.installed:
        return guard
    guard.installed = True
    guard.main = threading.get_ident()
    guard.refresh_roots()
    events, write_flags, read_modes = EVENTS, _WRITE_FLAGS, _READ_MODES

    def hook(event: str, args: Tuple[Any, ...]) -> None:
        if guard.mode:
            if event == "open":
                # A read, the common case (a file-heavy statement opens
                # thousands), is decided here: it costs a few lookups.
                try:
                    if not args[2] & write_flags and args[1] in read_modes:
                        reads = guard.reads
                        if reads is not None and args[1] is not None:
                            # open()'s, not os.open's (a directory walk's): reads.py
                            # looks at it when the statement ends.
                            reads.append(args[0])
                        return
                except TypeError:
                    pass
            check = events.get(event)
            if check is not None:
                guard.see(event, args, check)

    sys.addaudithook(hook)
    start = threading.Thread.start

    def start_marked(self: threading.Thread) -> None:
        """Thread.start, marking a thread a user statement starts: its
        events count too (the module doc)."""
        if guard.mode and guard.subject(threading.get_ident()):
            self._ripple_effects = True  # type: ignore[attr-defined]  # our mark on user threads
        start(self)

    threading.Thread.start = start_marked  # type: ignore[assignment]  # mypy forbids assigning to a method
    return guard
