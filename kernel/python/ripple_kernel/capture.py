"""Output: the connection's writer, and fd-level capture of what the
process writes (kernel/PROTOCOL.md "Output").

fd 1 and 2 become pipes at start (capture_fds), so output of C code and of
child processes is captured as well as Python's. Two threads forward it:

- the main thread drains the pipes before it writes a request's `res`
  (drain_locked), and whenever the engine asks (Kernel.flush_output);
- the pump thread (pump) forwards pipe output as it appears, notices when
  the connection closes, and nudges the main thread when an interrupt's
  handler is stuck (signals.Nudger).

Every frame is written under `send_lock`, and the pump reads the pipes only
while holding it; so when the main thread holds the lock, no output byte
sits in a thread's private buffer, and draining the pipes before writing
`res` forwards every byte the request wrote (the ordering rule of the
protocol).

A child that user code forks (os.fork, multiprocessing's fork start
method; subprocess execs at once and runs none of this) must survive the
fork of a threaded process: os.register_at_fork hooks quiesce the kernel's
threads before the fork (before_fork takes send_lock, so no thread is
mid-frame and the child's copy of the lock is not held by a thread it does
not have) and make the child a plain process (after_fork_in_child): a lock
of its own, the socket closed (it never speaks the kernel protocol, its
output still reaches the pipes as plain output), ThreadRouted writing to
the streams, and the default handlers of SIGTERM and SIGINT back (the
kernel's SIGTERM handler raises SystemExit, which a pool worker may get
while it holds the pool's queue lock: the other workers then wait on it
forever and the parent's join with them).
"""

from __future__ import annotations

import _thread
import os
import select
import signal
import socket
import sys
import threading
import time
from types import FrameType
from typing import Callable, FrozenSet, List, Optional, Set, TextIO, Tuple, Union, cast

from .signals import NUDGE_SIGNAL, Interrupts, Nudger, State
from .wire import OUT_FRAME_MAX, SMALL_FRAME, Payload, dumps, frame_head

# How long before_fork waits for a thread to finish a frame.
FORK_QUIESCE_SECONDS = 5.0
# How long progress frames may be held (Output.hold_locked) before the
# pump sends them, and how often it looks while holding is on.
HOLD_SECONDS = 0.05
HOLD_POLL_MS = 25
_Handler = Union[Callable[[int, Optional[FrameType]], object], int, signal.Handlers]
# Signals a forked child handles as a plain Python process does.
_CHILD_DEFAULTS: FrozenSet[signal.Signals] = frozenset({signal.SIGTERM, signal.SIGINT})
# Poll flag for "peer closed", 0 where the OS has none.
POLLRDHUP = getattr(select, "POLLRDHUP", 0x2000 if sys.platform.startswith("linux") else 0)


class Output:
    """The connection to the Go side and the capture of fd 1 and 2.

    `send_lock` guards the socket and `state.expression`/`state.told`;
    the pipes' read ends are read only under it. The drain buffer and poll
    object are the main thread's, the pump's buffer the pump's.
    """

    sock: socket.socket  # the connection to the Go side, once connect() made it

    def __init__(self, state: State) -> None:
        self.state = state
        self.send_lock = threading.Lock()
        self.out_r = -1  # read ends of the fd 1 / fd 2 pipes (non-blocking)
        self.err_r = -1
        self.pipe_size = 65536  # capacity of the output pipes
        self.drain_poll = select.poll()  # over the two read ends (main thread)
        self.drain_view = memoryview(bytearray(0))  # the main thread's read buffer
        self.routed: List[Optional[TextIO]] = [None, None]  # the routed sys.stdout and sys.stderr (ThreadRouted)
        self.main_thread = threading.get_ident()
        self.pump_done: Optional[threading.Event] = None  # set when the pump thread ends
        self._wake: Optional[Callable[[], None]] = None  # wakes the pump's poll
        self.fork_held = False  # before_fork took send_lock (the forking thread's, until after the fork)
        self.fork_mask: Optional[Set[Union[int, signal.Signals]]] = None  # the forking thread's signal mask before before_fork
        # Held progress frames (hold_locked), guarded by send_lock: sent
        # ahead of the next frame, or by the pump once HOLD_SECONDS old.
        # Until then the held journal (a file the Go side named, -1: no
        # holding) has a copy, which the Go side reads if the kernel dies
        # with them unsent (kernel/heldprogress.go).
        self.held: List[bytes] = []
        self.held_at = 0.0  # perf_counter when the first held frame came
        self.journal_path = ""  # RIPPLE_HELD_JOURNAL
        self.journal_fd = -1

    # ------------------------------------------------------------ frames

    def send_frame(self, kind: bytes, rid: int, payload: Payload) -> None:
        """Write one frame, after the held ones. The caller holds
        send_lock."""
        if self.held:
            self.release_locked()
        head = frame_head(kind, rid, payload)
        if len(payload) <= SMALL_FRAME:
            self.sock.sendall(head + payload)
        else:
            self.sock.sendall(head)
            self.sock.sendall(payload)

    def enable_hold(self) -> bool:
        """Let progress frames be held (hold_locked) from now on, when the
        Go side gave a held journal; whether they may be. Main thread."""
        if self.journal_fd < 0 and self.journal_path and not self.state.forked:
            try:
                self.journal_fd = os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
            except OSError:
                self.journal_path = ""  # no holding: every frame goes at once
                return False
            self.wake_pump()  # its poll now times out to send what waits
        return self.journal_fd >= 0

    def hold_locked(self, data: bytes) -> None:
        """Hold progress frames data (whole frames): they go with the next
        frame sent, or the pump sends them once HOLD_SECONDS old. A
        progress frame costs the Go side a wake-up (~0.1 ms of the kernel's
        time a test on a 2-core machine, a third of a fast test's); held,
        a write to the journal. The caller holds send_lock."""
        if not self.held:
            self.held_at = time.perf_counter()
        self.held.append(data)
        try:
            os.write(self.journal_fd, data)
        except OSError:
            self.release_locked()  # the journal is full: hold no more
            os.close(self.journal_fd)
            self.journal_fd, self.journal_path = -1, ""

    def release_locked(self, *more: bytes) -> None:
        """Send the held frames (and more after them) in one write; the
        journal forgets them. The caller holds send_lock."""
        data = b"".join(self.held + list(more))
        self.held = []
        self.sock.sendall(data)
        if self.journal_fd >= 0:
            os.ftruncate(self.journal_fd, 0)

    def attribute_locked(self, rid: int) -> None:
        """Before an output frame of request rid: tell the Go side which
        statement it belongs to when that changed. The caller holds
        send_lock."""
        s = self.state
        if rid and s.told != s.expression:
            s.told = s.expression
            self.send_frame(b"prog", rid, dumps({"type": "output", "expressionId": s.expression}))

    def drain_locked(self, rid: int) -> None:
        """Forward what fd 1 and 2 hold now as frames of request rid.

        The caller holds send_lock. Bounded: reads at most what a pipe can
        hold (plus what is written meanwhile, up to one buffer), so a child
        process that writes forever cannot keep the caller here.
        """
        view = self.drain_view
        for fd, _ in self.drain_poll.poll(0):
            kind = b"out" if fd == self.out_r else b"err"
            budget = self.pipe_size
            while budget > 0:
                try:
                    n = os.readv(fd, (view,))
                except BlockingIOError:
                    break
                if not n:
                    break
                self.attribute_locked(rid)
                self.send_frame(kind, rid, view[:n])
                budget -= n

    def flush_python_streams(self) -> None:
        """Flush Python's buffers into fd 1 and 2. -u makes the standard
        streams write through, but user code may have replaced them with
        buffered ones."""
        out, err = sys.stdout, sys.stderr
        plain = (out is sys.__stdout__ or out is self.routed[0]) and (err is sys.__stderr__ or err is self.routed[1])
        for stream in (out, err) if plain else (out, err, sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:
                pass

    # ------------------------------------------------------------ set-up

    def connect(self, port: int, token: bytes) -> None:
        """Connect to the Go side and present the token (the handshake of
        kernel/PROTOCOL.md; the `ready` frame follows once the kernel is set
        up)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect(("127.0.0.1", port))
        self.sock = sock
        sock.sendall(b"auth 0 %d\n%s" % (len(token), token))

    def capture_fds(self) -> None:
        """Turn fd 1 and 2 into pipes read by the pump and the drain."""
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
        self.out_r, self.err_r = ends
        self.pipe_size = max(_pipe_size(self.out_r), _pipe_size(self.err_r))
        self.drain_poll.register(self.out_r, select.POLLIN)
        self.drain_poll.register(self.err_r, select.POLLIN)
        self.drain_view = memoryview(bytearray(OUT_FRAME_MAX))
        os.register_at_fork(before=self.before_fork, after_in_parent=self.after_fork_in_parent,
                            after_in_child=self.after_fork_in_child)

    def route_streams(self) -> None:
        """Route what background threads write (ThreadRouted), and note in
        every thread which request started it."""
        self.main_thread = threading.get_ident()
        # A ThreadRouted stands in for a TextIO (it forwards the rest).
        sys.stdout = self.routed[0] = cast(TextIO, ThreadRouted(sys.stdout, b"out", self))
        sys.stderr = self.routed[1] = cast(TextIO, ThreadRouted(sys.stderr, b"err", self))
        main_thread, state = self.main_thread, self.state
        # The start in place now (effects.install's marks user threads too).
        previous = threading.Thread.start

        def start(self: threading.Thread) -> None:
            """Thread.start, noting which request started the thread (a
            thread started by another thread inherits its origin)."""
            if threading.get_ident() == main_thread:
                self._ripple_request = state.request  # type: ignore[attr-defined]  # our mark on user threads
            else:
                self._ripple_request = getattr(  # type: ignore[attr-defined]  # our mark on user threads
                    threading.current_thread(), "_ripple_request", 0
                )
            return previous(self)

        # Patched for every thread user code starts.
        threading.Thread.start = start  # type: ignore[assignment]  # mypy forbids assigning to a method

    def before_fork(self) -> None:
        """Quiesce: hold send_lock across the fork (the module doc). Bounded:
        a thread stuck in a send (the Go side not reading) makes the fork
        go ahead without it; the child gets a fresh lock anyway."""
        if self.state.forked:
            return
        # Until the child has its default handlers: a SIGTERM that reaches
        # it earlier would trip the kernel's C-level handler and be dropped
        # once the Python-level one is SIG_DFL (a pool terminated right
        # after its workers started: the worker never dies).
        self.fork_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _CHILD_DEFAULTS)
        self.fork_held = self.send_lock.acquire(timeout=FORK_QUIESCE_SECONDS)

    def after_fork_in_parent(self) -> None:
        if self.fork_held:
            self.fork_held = False
            self.send_lock.release()
        mask, self.fork_mask = self.fork_mask, None
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def after_fork_in_child(self) -> None:
        """A child forked by user code shares our socket: it must never
        write a frame. Its output still reaches the pipes (fd 1 and 2) as
        plain output; it is a plain Python process (the module doc)."""
        self.state.forked = True
        self.fork_held = False
        self.held, self.journal_fd, self.journal_path = [], -1, ""  # the parent's to send
        self.send_lock = threading.Lock()  # the parent's copy may be held by a thread the child lacks
        self.main_thread = threading.get_ident()
        try:
            self.sock.close()  # the child's copy only; the parent's stays open
        except Exception:
            pass
        defaults: Tuple[Tuple[signal.Signals, _Handler], ...] = (
            (signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler), (NUDGE_SIGNAL, signal.SIG_DFL))
        for signum, handler in defaults:
            try:
                signal.signal(signum, handler)
            except (OSError, ValueError):
                pass
        mask, self.fork_mask = self.fork_mask, None
        # Pending signals are delivered now, with the default handlers.
        signal.pthread_sigmask(signal.SIG_SETMASK, (mask or set()) - _CHILD_DEFAULTS)

    # ------------------------------------------------------------ the pump

    def start_pump(self, interrupts: Interrupts, on_disconnect: Callable[[], None]) -> None:
        """Start the pump thread (see pump). A bare thread (_thread), not a
        threading.Thread: user code's threading.enumerate() and
        active_count() list the threads its process would have without
        ripple (a test that checks for leaked threads sees what it sees
        under pytest). Nothing the pump runs asks threading for the
        current thread, which would register it as a dummy one; like a
        daemon thread it ends with the interpreter."""
        self._wake = interrupts.wake
        done = self.pump_done = threading.Event()

        def run() -> None:
            try:
                self.pump(interrupts, on_disconnect)
            finally:
                done.set()

        _thread.start_new_thread(run, ())

    def pump(self, interrupts: Interrupts, on_disconnect: Callable[[], None]) -> None:
        """Forward pipe output as it appears; call on_disconnect when the
        connection closes; nudge the main thread when a SIGINT's handler is
        stuck behind a system call (Nudger). Runs with SIGINT, SIGTERM and
        NUDGE_SIGNAL blocked (inherited)."""
        poller = select.poll()
        poller.register(self.out_r, select.POLLIN)
        poller.register(self.err_r, select.POLLIN)
        poller.register(interrupts.wake_r, select.POLLIN)
        sock_fd = self.sock.fileno()
        idle_timeout: Optional[int] = None
        if POLLRDHUP:
            poller.register(sock_fd, POLLRDHUP)
        else:
            idle_timeout = 250  # no POLLRDHUP: watch the parent instead
        parent = os.getppid()
        buf = memoryview(bytearray(OUT_FRAME_MAX))
        nudger = Nudger(interrupts)
        state = self.state
        while True:
            timeout = nudger.timeout(idle_timeout)
            if self.journal_fd >= 0:
                timeout = HOLD_POLL_MS if timeout is None else min(timeout, HOLD_POLL_MS)
            try:
                events = poller.poll(timeout)
            except InterruptedError:
                continue
            if self.held and time.perf_counter() - self.held_at >= HOLD_SECONDS:
                self._release_old()
            for fd, ev in events:
                if fd == sock_fd:
                    on_disconnect()
                    return
                if fd == interrupts.wake_r:
                    nudger.signalled()
                    continue
                try:
                    self._forward(poller, fd, buf)
                except OSError:
                    on_disconnect()
                    return
            if state.pump_stop:
                return
            nudger.tick()
            if not POLLRDHUP and os.getppid() != parent:
                on_disconnect()
                return

    def _release_old(self) -> None:
        """The pump: send held frames the main thread has not sent within
        HOLD_SECONDS (a test that runs long: the Go side learns it began)."""
        with self.send_lock:
            if self.held and time.perf_counter() - self.held_at >= HOLD_SECONDS:
                try:
                    self.release_locked()
                except OSError:
                    pass  # the connection is gone: the pump's poll says so next

    def wake_pump(self) -> None:
        """Make the pump poll again (its timeout changed)."""
        if self._wake is not None:
            self._wake()

    def _forward(self, poller: select.poll, fd: int, buf: memoryview) -> None:
        """The pump: forward what pipe fd holds as output of the request
        running now."""
        kind = b"out" if fd == self.out_r else b"err"
        with self.send_lock:
            try:
                n = os.readv(fd, (buf,))
            except BlockingIOError:
                return  # the main thread drained it first
            if n:
                self.attribute_locked(self.state.request)
                self.send_frame(kind, self.state.request, buf[:n])
            else:
                # Every write end is closed (user code closed fd 1 or 2):
                # nothing will come; stop polling it.
                poller.unregister(fd)

    def stop_pump(self, interrupts: Interrupts) -> None:
        """The last exit step: end the pump before the interpreter's
        teardown. A daemon thread left polling wakes up as the teardown
        closes the pipes and then waits for the GIL the exiting main thread
        holds, which costs every stopping kernel milliseconds."""
        if self.state.forked or self.pump_done is None:
            return
        self.state.pump_stop = True
        interrupts.wake()
        self.pump_done.wait(0.5)


class ThreadRouted:
    """sys.stdout / sys.stderr as user code sees them (kernel/PROTOCOL.md
    "Output of background threads"). Text written by the main thread, or by
    a thread the request in flight started, goes to fd 1 / 2 as before.
    Text written by a thread an earlier request started is sent at once as
    output of that request (frames with its id), so it reaches the context
    whose run started the thread and never the run in flight. Everything
    else is the wrapped stream's."""

    __slots__ = ("_stream", "_kind", "_output")
    _stream: TextIO
    _kind: bytes
    _output: Output

    def __init__(self, stream: TextIO, kind: bytes, output: Output) -> None:
        object.__setattr__(self, "_stream", stream)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_output", output)

    def write(self, text: str) -> int:
        output = self._output
        if threading.get_ident() != output.main_thread and not output.state.forked:
            origin = getattr(threading.current_thread(), "_ripple_request", 0)
            if origin and origin != output.state.request and isinstance(text, str):
                data = text.encode("utf-8", "replace")
                try:
                    with output.send_lock:
                        output.send_frame(self._kind, origin, data)
                except OSError:
                    pass  # the connection is gone: the kernel is exiting
                return len(text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._stream, name, value)


def _pipe_size(fd: int) -> int:
    if sys.platform.startswith("linux"):
        import fcntl

        try:
            return fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", 1032))
        except OSError:
            pass
    return 65536
