"""ripple kernel server: the Python side of kernel/PROTOCOL.md.

Started by ripple's Go side as

    PYTHON -u server.py PORT

with RIPPLE_TOKEN, RIPPLE_ROOT and RIPPLE_KERNEL_ID in the environment, in its
own process group, with the project root as working directory. It connects to
127.0.0.1:PORT, proves the token, announces itself with a `ready` frame and
then serves requests one at a time on the main thread until the connection
closes. Standard library only; Python >= 3.9.

Threads and what they own:
- the main thread reads requests, runs handlers (user code runs here) and
  writes `prog` and `res` frames;
- the pump thread forwards what user code writes to fd 1 and 2 (which are
  pipes) as `out`/`err` frames, notices when the connection closes, and
  nudges the main thread when an interrupt's handler is stuck (_Nudger).
Every frame is written under _SEND_LOCK, and the pump reads the pipes only
while holding it; so when the main thread holds the lock, no output byte sits
in a thread's private buffer, and draining the pipes before writing `res`
forwards every byte the request wrote (the ordering rule of the protocol).

The execution engine (engine.py next to this file, owned by another part of
ripple) is loaded at boot with importlib and contributes methods through
`engine.register(kernel)`; `kernel` is a _KernelAPI instance.
"""

import gc
import json
import os
import select
import signal
import socket
import sys
import threading
import time

PROTOCOL_VERSION = 1
RESULT_CAP = 64 * 1024  # bytes of a `res` payload, PROTOCOL.md "Frames"
OUT_FRAME_MAX = 1 << 20  # largest `out`/`err` payload
HEADER_MAX = 64  # longest header line, newline included
SPIN_BEFORE_BLOCKING = 50e-6  # seconds the main loop watches for the next request before blocking
SMALL_FRAME = 16 * 1024  # below this, header and payload go in one send
CODE_CACHE_MAX = 4096  # compiled `eval` sources kept
DISCONNECT_GRACE = 0.8  # seconds between a lost connection and a hard exit
NUDGE_FIRST = 0.001  # seconds an announced SIGINT may wait for its handler before a nudge
NUDGE_MAX = 0.05  # longest gap between two nudges
# The nudge: a signal whose handler does nothing, sent to the main thread
# to end a system call that started just after a SIGINT (see _Nudger).
# SIGWINCH is ignored by default and the kernel has no terminal of its own.
NUDGE_SIGNAL = signal.SIGWINCH

_HERE = os.path.dirname(os.path.abspath(__file__))


class ProtocolError(Exception):
    """The Go side sent something that is not a valid frame."""


class MethodNotFound(Exception):
    """A request named a method this kernel does not have."""


class InvalidParams(Exception):
    """A request's params do not fit its method."""


class ResultTooLarge(Exception):
    """A result did not fit in RESULT_CAP even with its strings cut."""


class _State:
    """Mutable kernel state shared by the main thread and the signal handlers.

    Signal handlers run on the main thread between bytecodes, so the fields
    written by the main thread need no lock; `request` is also read by the
    pump thread, under _SEND_LOCK for output (see _finish), and with
    `claimed` by its _Nudger (a stale read there costs one harmless nudge
    or delays one by a poll round).
    """

    __slots__ = ("request", "pending", "claimed", "in_user", "terminating", "forked", "pump_stop", "expression", "told")

    def __init__(self):
        self.request = 0  # id of the request being served, 0 when idle
        self.pending = 0  # highest id an unraised interrupt was meant for; 0 once raised
        self.claimed = 0  # highest id read from the interrupt cell by a SIGINT
        self.in_user = False  # inside a user_code() region: SIGINT raises
        self.terminating = False  # SIGTERM or EOF: exit, do not serve
        self.forked = False  # this is a child that user code forked
        self.pump_stop = False  # the kernel is exiting: the pump returns (_stop_pump)
        # Output attribution (PROTOCOL.md 7.3), both guarded by _SEND_LOCK:
        # the statement running now (set_expression), and the one the Go
        # side was last told output belongs to (an `output` prog frame goes
        # before the first output frame of another statement).
        self.expression = None
        self.told = None


_S = _State()
_SEND_LOCK = threading.Lock()
_SOCK = None  # the connection to the Go side
_OUT_R = -1  # read ends of the fd 1 / fd 2 pipes (non-blocking)
_ERR_R = -1
_LOG = None  # the process's original stderr: the startup log
_MAIN = None  # globals of the user's __main__
_DRAIN_POLL = None  # poll object over the two pipe read ends (main thread)
_DRAIN_VIEW = None  # the main thread's read buffer for draining
_PIPE_SIZE = 65536  # capacity of the output pipes
_POLLRDHUP = 0  # poll flag for "peer closed", 0 where the OS has none
# The interrupt cell (PROTOCOL.md "Interrupts"): memory shared with the Go
# side, one native-endian uint64 naming the request the Go side last
# interrupted. Read-only here; a zero cell until main() maps the real one.
_CELL = memoryview(bytearray(16)).cast("Q")
_WAKE_R = -1  # read end of the signal wakeup pipe (signal.set_wakeup_fd)
_WAKE_W = -1  # its write end
_SENTINEL = 0  # pid of the sentinel (_spawn_sentinel), 0 if none
# The kernel's tag (kernel/proctree.go): every process of its tree has it in
# its environment, also after setsid() or when orphaned.
_TAG_ENV = "RIPPLE_KERNEL_TAG"
_TAG = os.environ.get(_TAG_ENV, "")
_PUMP = None  # the pump thread
_MAIN_THREAD = 0  # threading.get_ident() of the main thread


# ---------------------------------------------------------------- frames


def _frame_head(kind, rid, payload):
    return b"%s %d %d\n" % (kind, rid, len(payload))


def _send_frame(kind, rid, payload):
    """Write one frame. The caller holds _SEND_LOCK."""
    head = _frame_head(kind, rid, payload)
    if len(payload) <= SMALL_FRAME:
        _SOCK.sendall(head + payload)
    else:
        _SOCK.sendall(head)
        _SOCK.sendall(payload)


def _read_frame(rfile):
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
_scan_once = json.JSONDecoder().scan_once  # skips json.loads' encoding sniffing


def _loads(payload):
    """Decode a request payload: UTF-8 JSON, nothing after the value."""
    text = payload.decode("utf-8").lstrip()
    try:
        value, end = _scan_once(text, 0)
    except StopIteration as e:
        raise ValueError("invalid JSON at character %d" % e.value) from None
    if end != len(text) and text[end:].strip():
        raise ValueError("extra data after the JSON value at character %d" % end)
    return value


def _finite(obj):
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


def dumps(obj):
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


def _cut(text, limit):
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    head = data[:limit].decode("utf-8", "ignore")
    cut = len(data) - len(head.encode("utf-8", "surrogatepass"))
    return "%s[ripple: %d bytes cut]" % (head, cut)


def _cut_strings(obj, limit):
    if isinstance(obj, str):
        return _cut(obj, limit)
    if isinstance(obj, dict):
        return {k: _cut_strings(v, limit) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_cut_strings(v, limit) for v in obj]
    return obj


def _capped(result):
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


# ---------------------------------------------------------------- output


def _attribute_locked(rid):
    """Before an output frame of request rid: tell the Go side which
    statement it belongs to when that changed. The caller holds _SEND_LOCK."""
    if rid and _S.told != _S.expression:
        _S.told = _S.expression
        _send_frame(b"prog", rid, dumps({"type": "output", "expressionId": _S.expression}))


def _drain_locked(rid):
    """Forward what fd 1 and 2 hold now as frames of request rid.

    The caller holds _SEND_LOCK. Bounded: reads at most what a pipe can hold
    (plus what is written meanwhile, up to one buffer), so a child process
    that writes forever cannot keep the caller here.
    """
    for fd, _ in _DRAIN_POLL.poll(0):
        kind = b"out" if fd == _OUT_R else b"err"
        budget = _PIPE_SIZE
        while budget > 0:
            try:
                n = os.readv(fd, (_DRAIN_VIEW,))
            except BlockingIOError:
                break
            if not n:
                break
            _attribute_locked(rid)
            _send_frame(kind, rid, _DRAIN_VIEW[:n])
            budget -= n


class _ThreadRouted:
    """sys.stdout / sys.stderr as user code sees them (kernel/PROTOCOL.md
    "Output of background threads"). Text written by the main thread, or by
    a thread the request in flight started, goes to fd 1 / 2 as before.
    Text written by a thread an earlier request started is sent at once as
    output of that request (frames with its id), so it reaches the context
    whose run started the thread and never the run in flight. Everything
    else is the wrapped stream's."""

    __slots__ = ("_stream", "_kind")

    def __init__(self, stream, kind):
        object.__setattr__(self, "_stream", stream)
        object.__setattr__(self, "_kind", kind)

    def write(self, text):
        if threading.get_ident() != _MAIN_THREAD:
            origin = getattr(threading.current_thread(), "_ripple_request", 0)
            if origin and origin != _S.request and isinstance(text, str):
                data = text.encode("utf-8", "replace")
                try:
                    with _SEND_LOCK:
                        _send_frame(self._kind, origin, data)
                except OSError:
                    pass  # the connection is gone: the kernel is exiting
                return len(text)
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def __setattr__(self, name, value):
        setattr(self._stream, name, value)


_THREAD_START = threading.Thread.start
_ROUTED = [None, None]  # the _ThreadRouted sys.stdout and sys.stderr


def _thread_start(self):
    """Thread.start, noting which request started the thread (a thread
    started by another thread inherits its origin)."""
    if threading.get_ident() == _MAIN_THREAD:
        self._ripple_request = _S.request
    else:
        self._ripple_request = getattr(threading.current_thread(), "_ripple_request", 0)
    return _THREAD_START(self)


def _flush_python_streams():
    # -u makes the standard streams write through, but user code may have
    # replaced them with buffered ones.
    out, err = sys.stdout, sys.stderr
    plain = (out is sys.__stdout__ or out is _ROUTED[0]) and (err is sys.__stderr__ or err is _ROUTED[1])
    for stream in (out, err) if plain else (
        out, err, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _pump():
    """Forward pipe output as it appears; exit the kernel when the
    connection closes; nudge the main thread when a SIGINT's handler is
    stuck behind a system call (_Nudger). Runs with SIGINT, SIGTERM and
    NUDGE_SIGNAL blocked (inherited)."""
    poller = select.poll()
    poller.register(_OUT_R, select.POLLIN)
    poller.register(_ERR_R, select.POLLIN)
    poller.register(_WAKE_R, select.POLLIN)
    sock_fd = _SOCK.fileno()
    if _POLLRDHUP:
        poller.register(sock_fd, _POLLRDHUP)
        idle_timeout = None
    else:
        idle_timeout = 250  # no POLLRDHUP: watch the parent instead
    parent = os.getppid()
    buf = memoryview(bytearray(OUT_FRAME_MAX))
    nudger = _Nudger()
    while True:
        try:
            events = poller.poll(nudger.timeout(idle_timeout))
        except InterruptedError:
            continue
        for fd, ev in events:
            if fd == sock_fd:
                _on_disconnect()
                return
            if fd == _WAKE_R:
                nudger.signalled()
                continue
            kind = b"out" if fd == _OUT_R else b"err"
            try:
                with _SEND_LOCK:
                    try:
                        n = os.readv(fd, (buf,))
                    except BlockingIOError:
                        continue  # the main thread drained it first
                    if n:
                        _attribute_locked(_S.request)
                        _send_frame(kind, _S.request, buf[:n])
                    else:
                        # Every write end is closed (user code closed fd
                        # 1 or 2): nothing will come; stop polling it.
                        poller.unregister(fd)
            except OSError:
                _on_disconnect()
                return
        if _S.pump_stop:
            return
        nudger.tick()
        if not _POLLRDHUP and os.getppid() != parent:
            _on_disconnect()
            return


class _Nudger:
    """Makes sure the SIGINT handler of an announced interrupt runs.

    CPython runs a Python signal handler on the main thread between
    bytecodes, or when a system call returns EINTR. A SIGINT that arrives
    after the last check and before a blocking call starts (user code
    about to enter time.sleep, select, waitpid...) only trips a flag: the
    call blocks on, its handler does not run, and the interrupt would be
    lost until the Go side's timeout kills the kernel. The C-level handler
    also writes the signal's number to the wakeup pipe, which wakes the
    pump; if the interrupt the Go side announced for the running request
    is still unclaimed NUDGE_FIRST later, the pump sends NUDGE_SIGNAL to
    the main thread: the blocking call fails with EINTR and CPython runs
    the pending handlers, the SIGINT one included. Nudges repeat, further
    apart, until the handler has claimed the interrupt or the request is
    no longer running. A nudge sent needlessly runs a handler that does
    nothing, and CPython retries the call it interrupted (C code that does
    not retry on EINTR sees an error, but only in a request the Go side is
    interrupting anyway).

    Why watching only the running request is enough: when the pump finds
    no due interrupt, either its handler has run already, or the request
    it names has not started, and then the main thread will run through
    Python function calls (where CPython checks for pending handlers)
    before that request's user code starts.

    Owned by the pump thread.
    """

    __slots__ = ("at", "gap")

    def __init__(self):
        self.at = None  # monotonic time of the next nudge; None: not watching
        self.gap = NUDGE_FIRST

    def signalled(self):
        """The wakeup pipe has bytes: a signal reached the process."""
        try:
            while os.read(_WAKE_R, 512):
                pass
        except BlockingIOError:
            pass
        if self.at is None and _handler_due():
            self.gap = NUDGE_FIRST
            self.at = time.monotonic() + self.gap

    def timeout(self, idle):
        """The pump's poll timeout in milliseconds (None: forever)."""
        if self.at is None:
            return idle
        wait = max(0, int((self.at - time.monotonic()) * 1000) + 1)
        return wait if idle is None else min(wait, idle)

    def tick(self):
        if self.at is None:
            return
        if not _handler_due():
            self.at = None
            return
        now = time.monotonic()
        if now >= self.at:
            try:
                signal.pthread_kill(_MAIN_THREAD, NUDGE_SIGNAL)
            except OSError:
                pass
            self.gap = min(self.gap * 2, NUDGE_MAX)
            self.at = now + self.gap


def _handler_due():
    """Whether the Go side interrupted the running request and no SIGINT
    handler has claimed that interrupt yet (read by the pump thread)."""
    target = _CELL[0]
    return target > _S.claimed and target == _S.request


def _on_nudge(signum, frame):
    """NUDGE_SIGNAL: nothing to do; its delivery ended a system call."""


def _on_disconnect():
    """The Go side is gone: ask the main thread to exit gracefully, and exit
    hard if it has not done so within DISCONNECT_GRACE seconds."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
    except OSError:
        pass
    # The pump thread is a daemon: if the main thread exits first, the
    # interpreter stops this sleep with it.
    threading.Event().wait(DISCONNECT_GRACE)
    _kill_group_members()
    os._exit(1)


_EXIT_HOOKS = []  # _KernelAPI.at_exit
# _KernelAPI.set_idle: (has_work(), work() -> more, seconds) or None. Work
# done only while no request waits, after the last result was sent.
_IDLE = None


def _release_user_state():
    """Drop what user code left in the kernel, as IPython does at exit, so
    its objects are finalized as at the end of a script: an unclosed
    buffered file is flushed. The interpreter's teardown does not do it
    for the user __main__ (the server's _MAIN keeps its dict alive past
    the module cleanup). Runs after the user's atexit handlers, which may
    still use those globals."""
    if _S.forked:
        return
    for fn in reversed(_EXIT_HOOKS):
        try:
            fn()
        except BaseException as e:
            _log("exit hook %r failed: %s" % (fn, e))
    if _MAIN is not None:
        # Objects only the namespace held go now; cycles go with the
        # interpreter's last collection.
        _MAIN.clear()


def _stop_pump():
    """The last exit step: end the pump before the interpreter's teardown.
    A daemon thread left polling wakes up as the teardown closes the pipes
    and then waits for the GIL the exiting main thread holds, which costs
    every stopping kernel milliseconds."""
    if _S.forked or _PUMP is None:
        return
    _S.pump_stop = True
    try:
        os.write(_WAKE_W, b"\0")
    except OSError:
        pass
    _PUMP.join(0.5)


def _kill_group_members():
    """SIGKILL every other process of the kernel's process group (children
    started by user code), so nothing outlives the kernel. The sentinel
    goes last: when the server dies, Linux's parent-death signal may kill
    this kernel midway through, and the sentinel is then the one left to
    kill the rest of the group."""
    if _S.forked:
        return  # a forked child exiting is not the kernel exiting
    me = os.getpid()
    try:
        if os.getpgrp() != me:
            return  # not our group: leave it alone
    except OSError:
        return
    try:
        names = os.listdir("/proc")
    except OSError:
        names = None
    if names is None:
        # No /proc: signal the whole group, this process included.
        try:
            os.killpg(me, signal.SIGKILL)
        except OSError:
            pass
        return
    try:
        for _ in range(2):  # a second pass catches children forked meanwhile
            if not _kill_members(names, me):
                break  # no member left that could have forked another
            try:
                names = os.listdir("/proc")
            except OSError:
                break
    finally:
        if _SENTINEL:
            try:
                os.kill(_SENTINEL, signal.SIGKILL)
            except OSError:
                pass


def _kill_members(names, me):
    """SIGKILL the processes of group me among /proc's names, and those
    carrying the kernel's tag (setsid() children, orphans), but this one
    and the sentinel; returns whether there were any."""
    found = False
    needle = ("%s=%s" % (_TAG_ENV, _TAG)).encode() if _TAG else None
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid == me or pid == _SENTINEL:
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            # pid (comm) state ppid pgrp ...; comm may hold spaces.
            fields = stat[stat.rindex(b")") + 2:].split()
            if int(fields[2]) == me:
                found = True
                os.kill(pid, signal.SIGKILL)
                continue
        except (OSError, ValueError, IndexError):
            continue
        if needle is not None:
            try:
                with open("/proc/%s/environ" % name, "rb") as f:
                    tagged = needle in f.read().split(b"\0")
                if tagged:
                    found = True
                    os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
    return found


# ---------------------------------------------------------------- interrupts


class _UserCode:
    """The user-code region: SIGINT raises KeyboardInterrupt only inside it.

    An interrupt of the current request that arrived outside a region
    (while it ran, or before the kernel started it) raises when the
    request next enters one. Regions nest through
    _KernelAPI.user_code, which hands out the inert _NESTED region while a
    region is open, so only the outermost region changes state (nothing to
    undo when an interrupt lands inside an inner region's enter or exit).
    """

    __slots__ = ()

    def __enter__(self):
        s = _S
        if s.in_user:
            raise RuntimeError("kernel.user_code() regions do not nest")
        s.in_user = True
        if s.pending and s.pending == s.request:
            s.pending = 0
            s.in_user = False
            raise KeyboardInterrupt
        return None

    def __exit__(self, exc_type, exc, tb):
        _S.in_user = False
        return False


_REGION = _UserCode()


class _Nested:
    """A region inside a region: user code already runs, nothing to track."""

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        return False


_NESTED = _Nested()
_ENTER_CODE = _UserCode.__enter__.__code__
_EXIT_CODE = _UserCode.__exit__.__code__


def _on_sigint(signum, frame):
    """Attribute a SIGINT to a request, then interrupt that request.

    The Go side writes the id of the request it interrupts into the cell
    before it sends SIGINT, so the cell is current whenever this runs: an
    id above every id already claimed is what this signal (or one that
    coalesced with it) is for. A SIGINT that announces no new id (sent by
    another process, or by user code) is for the request running now, as
    Ctrl-C would be.

    Only the running request is interrupted on the spot, and only inside
    user code. Any other interrupt is recorded in `pending`, which keeps
    the highest id: the interrupt of a request whose frame the kernel has
    not read yet raises when that request enters user code; one of a
    request that has ended is never matched again (ids only grow), so it
    cannot touch a later request.
    """
    s = _S
    target = _CELL[0]
    if target > s.claimed:
        s.claimed = target
    else:
        target = s.request
    if s.in_user and target == s.request:
        code = frame.f_code if frame is not None else None
        if code is not _EXIT_CODE:
            if code is _ENTER_CODE:
                # Raising here skips __exit__; leave the region ourselves.
                s.in_user = False
            raise KeyboardInterrupt
        # The user code already finished: a late interrupt. Record it; it
        # must not turn a finished result into `int`.
        s.in_user = False
    if target > s.pending:
        s.pending = target


def _on_sigterm(signum, frame):
    if _S.terminating:
        return
    _S.terminating = True
    raise SystemExit(0)


class _Critical:
    """Run kernel bookkeeping inside a user region without being torn by
    SIGINT: the interrupt is recorded and raised when the section ends."""

    __slots__ = ("saved",)

    def __enter__(self):
        self.saved = _S.in_user
        _S.in_user = False

    def __exit__(self, exc_type, exc, tb):
        s = _S
        if self.saved:
            s.in_user = True
            if exc_type is None and s.pending and s.pending == s.request:
                s.pending = 0
                s.in_user = False
                raise KeyboardInterrupt
        return False


# ---------------------------------------------------------------- errors


def _type_name(exc):
    t = type(exc)
    if t.__module__ in ("builtins", "__main__", None):
        return t.__qualname__
    return "%s.%s" % (t.__module__, t.__qualname__)


def _message(exc):
    try:
        return str(exc)
    except Exception:
        return "<unprintable %s>" % type(exc).__name__


def _is_kernel_file(filename):
    d = os.path.dirname(filename)
    return d == _HERE or d == os.path.join(_HERE, "ripple_kernel")


def _trim(te, seen, syntax=False):
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


def describe(exc):
    """{type, message, traceback} of an exception, trimmed to user code."""
    if isinstance(exc, (InvalidParams, MethodNotFound, ResultTooLarge)):
        # The kernel's own request errors: the message says it all.
        return {"type": type(exc).__name__, "message": _message(exc), "traceback": ""}
    try:
        import traceback

        te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        _trim(te, set(), isinstance(exc, SyntaxError))
        text = "".join(te.format())
    except Exception as e:  # never fail to report a failure
        text = "<traceback unavailable: %s>" % _message(e)
    return {"type": _type_name(exc), "message": _message(exc), "traceback": text}


# ---------------------------------------------------------------- methods


_EMPTY = {}
_OK_EMPTY = b'{"status":"ok","value":{}}'
_code_cache = {}
_eval_names = []
_repr = None


def _compile(code, mode):
    if mode not in ("exec", "eval"):
        raise InvalidParams('eval: params.mode must be "exec" or "eval", got %r' % (mode,))
    if len(_code_cache) >= CODE_CACHE_MAX:
        import linecache

        for name in _eval_names:
            linecache.cache.pop(name, None)
        _code_cache.clear()
        del _eval_names[:]
    import linecache

    name = "<ripple-eval-%d>" % (len(_eval_names) + 1)
    co = compile(code, name, mode, dont_inherit=True)
    # Keep the source so tracebacks show the offending line.
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    _eval_names.append(name)
    _code_cache[(code, mode)] = co
    return co


def _limited_repr(value):
    global _repr
    if _repr is None:
        import reprlib

        r = reprlib.Repr()
        r.maxstring = 200
        r.maxother = 200
        r.maxlong = 200
        _repr = r.repr
    try:
        return _repr(value)
    except Exception as e:
        return "<repr failed: %s: %s>" % (type(e).__name__, _message(e))


def _method_eval(params):
    code = params.get("code")
    if type(code) is not str:
        raise InvalidParams("eval: params.code must be a string, got %s" % type(code).__name__)
    mode = params.get("mode", "exec")
    co = _code_cache.get((code, mode))
    if co is None:
        co = _compile(code, mode)
    if mode == "exec":
        with _REGION:
            exec(co, _MAIN)
        return _EMPTY
    with _REGION:
        text = _limited_repr(eval(co, _MAIN))
    return {"repr": text}


def _method_ping(params):
    return _EMPTY


def _method_shutdown(params):
    _S.terminating = True
    return _EMPTY


_METHODS = {"ping": _method_ping, "eval": _method_eval, "shutdown": _method_shutdown}
# _ENGINE_METHODS: the names the engine added to _METHODS (_load_engine);
# a kernel that runs pytest drops them.
_ENGINE_METHODS = []


# ---------------------------------------------------------------- requests


def _handle(rid, payload):
    # An interrupt recorded before this point is kept: if it names rid
    # (SIGINT beat the kernel to this frame), user code raises on entry.
    _S.request = rid
    try:
        try:
            req = _loads(payload)
            method = req["method"]
            params = req.get("params")
        except (ValueError, TypeError, KeyError) as e:
            raise InvalidParams("request %d is not {method, params} JSON: %s" % (rid, e))
        fn = _METHODS.get(method)
        if fn is None:
            raise MethodNotFound("unknown method %r" % (method,))
        if params is None:
            params = _EMPTY
        elif type(params) is not dict:
            raise InvalidParams("%s: params must be an object" % method)
        value = fn(params)
        if type(value) is dict and not value:
            out = _OK_EMPTY
        else:
            out = _capped({"status": "ok", "value": value})
    except KeyboardInterrupt as e:
        out = _capped({"status": "int", "error": describe(e)})
    except SystemExit as e:
        if _S.terminating:
            raise
        out = _capped({"status": "err", "error": describe(e)})
    except BaseException as e:
        out = _capped({"status": "err", "error": describe(e)})
    _finish(rid, out)


def _finish(rid, payload):
    """The result hand-off: forward the request's remaining output, then
    its `res`. SIGINT only records from here on (in_user is False)."""
    _S.in_user = False
    if _S.forked:
        # User code forked and the child came back here: the request and
        # the connection are the parent's.
        _flush_python_streams()
        os._exit(0)
    _flush_python_streams()
    with _SEND_LOCK:
        _drain_locked(rid)
        _send_frame(b"res", rid, payload)
        _S.request = 0
        _S.expression = _S.told = None


def _NEVER():
    return False


def _idle_work(ready):
    """Run the idle work (_IDLE) until it is done or a request arrives
    (with 0 seconds, until it is done: tests know it is when the next
    request is answered)."""
    has_work, work, seconds = _IDLE
    wait = max(0, int(seconds * 1000))
    while has_work():
        if seconds <= 0:
            arrived = _NEVER  # 0 s: done before the next request, whatever comes
        elif ready.poll(wait):
            return  # a request: it comes first
        else:
            arrived = lambda: bool(ready.poll(0))
        wait = 0
        try:
            work(arrived)
        except Exception as e:
            _log("idle work failed: %s: %s" % (type(e).__name__, e))
            return


class _KernelAPI:
    """What the execution engine sees of the kernel (engine.register(kernel))."""

    __slots__ = ("root",)

    def __init__(self, root):
        self.root = root  # the project root: sys.path[0] and the cwd

    def at_exit(self, fn):
        """Call fn when the kernel exits, after the user's atexit handlers
        and before the user namespace is released (_release_user_state)."""
        _EXIT_HOOKS.append(fn)

    def set_idle(self, has_work, work, seconds):
        """Call work(arrived) between requests while has_work() says so,
        once no request has come for `seconds` after a result was sent (0:
        right after it), one call at a time, as long as no request arrives;
        arrived() tells work that one did (it should stop soon). The
        engine's value journal is written there, off the path of a run."""
        global _IDLE
        _IDLE = (has_work, work, seconds)

    def log(self, message):
        """A line in the kernel's log (not the output of any request)."""
        _log(message)

    def user_code(self):
        """Context manager around user code: SIGINT raises KeyboardInterrupt
        only inside it; an interrupt of this request that arrived outside
        raises on entry. Regions nest (the engine opens one for a statement
        and another for a module the statement imports)."""
        return _NESTED if _S.in_user else _REGION

    def stop_requested(self):
        """Whether the Go side asked the running request to stop at its
        next statement boundary (the cell's second word names it)."""
        return _S.request != 0 and _CELL[1] == _S.request

    def emit_progress(self, obj, *more):
        """Send a `prog` frame for the current request, one per object,
        in one write (a test's end and the next one's start go together:
        a write to the Go side is a syscall and a wake-up there)."""
        frames = []
        for o in (obj,) + more:
            data = dumps(o)
            frames += (_frame_head(b"prog", _S.request, data), data)
        with _Critical():
            with _SEND_LOCK:
                _SOCK.sendall(b"".join(frames))

    def set_expression(self, expression_id):
        """Attribute output from now on to statement expression_id (None:
        to no statement). Output written before is attributed to the
        previous one as far as it was forwarded: the engine calls
        flush_output first where that matters (a statement's end)."""
        with _SEND_LOCK:
            _S.expression = expression_id

    def flush_output(self):
        """Forward output written so far before whatever is sent next."""
        _flush_python_streams()
        with _Critical():
            with _SEND_LOCK:
                _drain_locked(_S.request)


# ---------------------------------------------------------------- boot


def _log(message):
    try:
        out = _LOG if _LOG is not None else sys.stderr
        out.write("ripple kernel: %s\n" % message)
        out.flush()
    except Exception:
        pass


def _kernel_package():
    """Install the loader of the ripple_kernel package (loader.py, run
    from its text once: the package cannot load its own loader) and
    answer the package's engine module."""
    path = os.path.join(_HERE, "ripple_kernel", "loader.py")
    namespace = {"__name__": "ripple_kernel_bootstrap", "__file__": path}
    with open(path, "rb") as f:
        exec(compile(f.read(), path, "exec", dont_inherit=True), namespace)
    namespace["install"](_HERE)
    from ripple_kernel import engine

    return engine


def _load_engine(api):
    if not os.path.exists(os.path.join(_HERE, "ripple_kernel", "engine.py")):
        return  # a kernel without the engine (tests of the kernel alone)
    module = _kernel_package()
    methods = module.register(api)
    if not isinstance(methods, dict):
        raise TypeError("engine.register returned %s, want a dict of handlers" % type(methods).__name__)
    for name, fn in methods.items():
        if name in _METHODS:
            raise ValueError("engine method %r collides with a kernel method" % (name,))
        if not callable(fn):
            raise TypeError("engine method %r is not callable" % (name,))
        _METHODS[name] = fn
        _ENGINE_METHODS.append(name)


def _preload(names):
    """Import the modules of RIPPLE_PRELOAD (kernel.Config.Preload) at
    start, so that the first request finds them warm. A module that fails
    is logged and skipped: whoever imports it later gets the error."""
    import importlib

    names = [n.strip() for n in names.split(",") if n.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException as e:  # SystemExit too: a module must not end the kernel
            _log("preload %s: %s: %s" % (name, type(e).__name__, e))


def _pytest_method(api):
    """The kernel method "pytest" (ripple run --tests): ripple_pytest.py,
    loaded on its first call, runs pytest's session in this kernel."""
    loaded = []

    def method(params):
        if not loaded:
            # A pytest kernel is a plain interpreter: the engine leaves it
            # (its import hooks, display finder and matplotlib backend; see
            # engine.detach) and its methods go with it.
            from ripple_kernel import engine

            engine.detach()
            for name in _ENGINE_METHODS:
                _METHODS.pop(name, None)
            import importlib.util

            spec = importlib.util.spec_from_file_location("_ripple_pytest", os.path.join(_HERE, "ripple_pytest.py"))
            module = importlib.util.module_from_spec(spec)
            sys.modules["_ripple_pytest"] = module
            spec.loader.exec_module(module)
            loaded.append(module)
        return loaded[0].handle(api, params)

    return method


def _map_interrupt_cell(fd):
    """Map the interrupt cell the Go side passed as fd (read-only)."""
    import mmap

    try:
        mapping = mmap.mmap(fd, 16, mmap.MAP_SHARED, mmap.PROT_READ)
    except (OSError, ValueError) as e:
        raise RuntimeError("cannot map the interrupt cell (fd %d): %s" % (fd, e)) from None
    finally:
        # mmap keeps a close-on-exec duplicate; this inherited one would
        # reach every process user code starts.
        os.close(fd)
    return memoryview(mapping).cast("Q")


def _spawn_sentinel(fd):
    """Start the sentinel: a shell in the kernel's process group that waits
    on the death pipe (fd, whose write end only the Go server holds) and
    SIGKILLs the whole group when the server is gone. It is the line that
    holds when Linux's parent-death signal kills this kernel before it can
    kill its children, or when the kernel is stuck in C code holding the
    GIL. It ignores SIGINT: interrupts address the whole group."""
    global _SENTINEL
    script = "trap '' INT; read _ <&%d; " % fd
    env = os.environ
    if _TAG:
        # First every process of the kernel's tree that left the group
        # (setsid) or was orphaned: they carry the kernel's tag (kernel/
        # proctree.go). The sentinel and its grep do not.
        script += (
            "for _ in 1 2 3 4 5 6 7 8; do set -- $(grep -lzx '%s=%s' /proc/[0-9]*/environ 2>/dev/null); "
            "[ $# -eq 0 ] && break; for f; do p=${f#/proc/}; kill -9 ${p%%/environ} 2>/dev/null; done; done; "
            % (_TAG_ENV, _TAG)
        )
        env = {k: v for k, v in os.environ.items() if k != _TAG_ENV}
    script += "kill -9 0"
    try:
        _SENTINEL = os.posix_spawn("/bin/sh", ["sh", "-c", script], env)
    except OSError as e:
        _log("cannot start the sentinel: %s" % e)
    finally:
        os.close(fd)  # user code's children have no business with it


def _after_fork_in_child():
    """A child forked by user code shares our socket: it must never write
    a frame. Its output still reaches the pipes (fd 1 and 2)."""
    _S.forked = True
    try:
        _SOCK.close()  # the child's copy only; the parent's stays open
    except Exception:
        pass


def _capture_output():
    """Turn fd 1 and 2 into pipes read by the pump. Returns (out_r, err_r)."""
    import fcntl

    ends = []
    for target in (1, 2):
        r, w = os.pipe()
        if sys.platform.startswith("linux"):
            try:
                fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), OUT_FRAME_MAX)
            except OSError:
                pass
        os.set_blocking(r, False)
        os.dup2(w, target)  # inheritable: child processes write here too
        os.close(w)
        ends.append(r)
    return ends


def _pipe_size(fd):
    if sys.platform.startswith("linux"):
        import fcntl

        try:
            return fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032))
        except OSError:
            pass
    return 65536


def main():
    global _SOCK, _OUT_R, _ERR_R, _LOG, _MAIN, _DRAIN_POLL, _DRAIN_VIEW, _PIPE_SIZE, _POLLRDHUP, _CELL
    global _WAKE_R, _WAKE_W, _PUMP, _MAIN_THREAD

    # Before anything else: our stderr is the startup log; keep it for
    # the kernel's own diagnostics and for faulthandler's crash reports.
    _LOG = os.fdopen(os.dup(2), "w", buffering=1)
    try:
        import faulthandler

        faulthandler.enable(file=_LOG, all_threads=False)
        # The Go side sends SIGUSR1 before killing a kernel that ignored an
        # interrupt: the log then shows where it was stuck.
        faulthandler.register(signal.SIGUSR1, file=_LOG, all_threads=True)
    except Exception:
        pass

    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        _log("usage: server.py PORT (got %r)" % (sys.argv[1:],))
        sys.exit(2)
    port = int(sys.argv[1])
    token = os.environ.pop("RIPPLE_TOKEN", "").encode("ascii")
    if not token:
        _log("RIPPLE_TOKEN is not set")
        sys.exit(2)
    root = os.path.abspath(os.environ.get("RIPPLE_ROOT") or os.getcwd())
    death_fd = os.environ.pop("RIPPLE_DEATH_FD", "")
    if death_fd.isdigit():
        _spawn_sentinel(int(death_fd))
    cell_fd = os.environ.pop("RIPPLE_INTERRUPT_FD", "")
    if cell_fd.isdigit():
        _CELL = _map_interrupt_cell(int(cell_fd))

    # User code sees the project as a script run from its root would.
    sys.path[0] = root
    if os.getcwd() != root:
        os.chdir(root)
    sys.argv = [""]
    sys.modules["_ripple_server"] = sys.modules["__main__"]  # keeps our globals alive
    user_main = type(sys)("__main__")
    user_main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = user_main
    _MAIN = user_main.__dict__

    # Preloaded modules (kernel.Config.Preload) load first, as a plain
    # import from the project's root, before the engine's hooks exist;
    # they live as long as the kernel, so they are frozen below too.
    _preload(os.environ.pop("RIPPLE_PRELOAD", ""))
    api = _KernelAPI(root)
    _load_engine(api)
    _METHODS["pytest"] = _pytest_method(api)
    # What exists now (the standard library and the engine, tens of
    # thousands of objects) lives as long as the kernel: frozen, the
    # collector no longer walks it in every full collection. Those came
    # in the middle of a restored run (its unpickled values, the module's
    # parse) and took ~20 of its ~50 ms. User objects are never frozen.
    gc.freeze()

    _POLLRDHUP = getattr(select, "POLLRDHUP", 0x2000 if sys.platform.startswith("linux") else 0)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.connect(("127.0.0.1", port))
    _SOCK = sock
    sock.sendall(b"auth 0 %d\n%s" % (len(token), token))

    _OUT_R, _ERR_R = _capture_output()
    _PIPE_SIZE = max(_pipe_size(_OUT_R), _pipe_size(_ERR_R))
    _DRAIN_POLL = select.poll()
    _DRAIN_POLL.register(_OUT_R, select.POLLIN)
    _DRAIN_POLL.register(_ERR_R, select.POLLIN)
    _DRAIN_VIEW = memoryview(bytearray(OUT_FRAME_MAX))
    sys.stdout = _ROUTED[0] = _ThreadRouted(sys.stdout, b"out")
    sys.stderr = _ROUTED[1] = _ThreadRouted(sys.stderr, b"err")
    threading.Thread.start = _thread_start

    # Helper threads must never receive SIGINT/SIGTERM: block them while the
    # pump starts (it inherits the mask), then unblock on the main thread.
    # Every signal with a Python handler writes its number to the wakeup
    # pipe, which the pump watches (_Nudger).
    _MAIN_THREAD = threading.get_ident()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    _WAKE_R, _WAKE_W = wake_r, wake_w
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(NUDGE_SIGNAL, _on_nudge)
    wanted = {signal.SIGINT, signal.SIGTERM, NUDGE_SIGNAL}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    _PUMP = threading.Thread(target=_pump, name="ripple-pump", daemon=True)
    _PUMP.start()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, wanted)

    import atexit

    atexit.register(_stop_pump)  # registered first: runs last
    atexit.register(_kill_group_members)
    atexit.register(_release_user_state)  # after every handler of user code
    os.register_at_fork(after_in_child=_after_fork_in_child)

    info = {
        "pid": os.getpid(),
        "pgid": os.getpgrp(),
        "python": sys.version,
        "executable": sys.executable,
        "protocol": PROTOCOL_VERSION,
    }
    with _SEND_LOCK:
        _send_frame(b"ready", 0, dumps(info))

    rfile = sock.makefile("rb", buffering=65536)
    ready = select.poll()
    ready.register(sock.fileno(), select.POLLIN)
    clock = time.perf_counter
    try:
        while not _S.terminating:
            # The Go side sends the next request as soon as it has read the
            # result: watch the socket for a few microseconds before
            # blocking, so a quick follow-up request does not pay for a
            # wake-up of this process (the request is never pipelined, so
            # nothing waits in rfile's buffer here).
            deadline = clock() + SPIN_BEFORE_BLOCKING
            while not ready.poll(0) and clock() < deadline:
                pass
            if _IDLE is not None and _IDLE[0]():
                _idle_work(ready)
            frame = _read_frame(rfile)
            if frame is None:
                break  # EOF: the Go side is gone
            kind, rid, payload = frame
            if kind != b"req" or rid == 0:
                raise ProtocolError("unexpected %r frame with id %d" % (kind, rid))
            _handle(rid, payload)
    except ProtocolError as e:
        _log("protocol error: %s" % e)
        sys.exit(3)
    except SystemExit:
        if not _S.terminating:
            raise
    _S.terminating = True


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException:
        # fd 2 may be a pipe by now: report to the startup log.
        import traceback

        _log("kernel failed:\n" + traceback.format_exc())
        sys.exit(1)
