"""Signals: which request a SIGINT is for, where it may raise, SIGTERM,
and the nudge that makes a late SIGINT's handler run (kernel/PROTOCOL.md
"Interrupts").

The kernel's request state (``State``) lives here too: the signal handlers
are its main writers. Signal handlers run on the main thread between
bytecodes, so the fields the main thread writes need no lock.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from types import FrameType, TracebackType
from typing import Any, Callable, Dict, List, Literal, Optional, Type

NUDGE_FIRST = 0.001  # seconds an announced SIGINT may wait for its handler before a nudge
NUDGE_MAX = 0.05  # longest gap between two nudges
# The nudge: a signal whose handler does nothing, sent to the main thread
# to end a system call that started just after a SIGINT (see Nudger).
# SIGWINCH is ignored by default and the kernel has no terminal of its own.
NUDGE_SIGNAL = signal.SIGWINCH


class State:
    """Mutable kernel state shared by the main thread and the signal handlers.

    Signal handlers run on the main thread between bytecodes, so the fields
    written by the main thread need no lock; `request` is also read by the
    pump thread, under the send lock for output (Kernel.finish), and with
    `claimed` by its Nudger (a stale read there costs one harmless nudge
    or delays one by a poll round).

    A plain class with __slots__ rather than a dataclass: the signal
    handler and every user-code region read it, on the per-statement path.
    """

    __slots__ = ("request", "pending", "claimed", "in_user", "terminating", "forked", "pump_stop", "expression", "told")

    def __init__(self) -> None:
        self.request = 0  # id of the request being served, 0 when idle
        self.pending = 0  # highest id an unraised interrupt was meant for; 0 once raised
        self.claimed = 0  # highest id read from the interrupt cell by a SIGINT
        self.in_user = False  # inside a user_code() region: SIGINT raises
        self.terminating = False  # SIGTERM or EOF: exit, do not serve
        self.forked = False  # this is a child that user code forked
        self.pump_stop = False  # the kernel is exiting: the pump returns (Output.stop_pump)
        # Output attribution (PROTOCOL.md 7.3), both guarded by the send
        # lock: the statement running now (set_expression), and the one the
        # Go side was last told output belongs to (an `output` prog frame
        # goes before the first output frame of another statement).
        self.expression: Optional[str] = None
        self.told: Optional[str] = None


def zero_cell() -> memoryview:
    """An interrupt cell that never names a request (before the real one
    is mapped, or in a kernel started without one)."""
    return memoryview(bytearray(16)).cast("Q")


def map_interrupt_cell(fd: int) -> memoryview:
    """Map the interrupt cell the Go side passed as fd (read-only): memory
    shared with the Go side, native-endian uint64s; the first names the
    request the Go side last interrupted, the second the one it asked to
    stop at its next statement boundary."""
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


class UserCode:
    """The user-code region: SIGINT raises KeyboardInterrupt only inside it.

    An interrupt of the current request that arrived outside a region
    (while it ran, or before the kernel started it) raises when the
    request next enters one. Regions nest through Kernel.user_code, which
    hands out the inert Nested region while a region is open, so only the
    outermost region changes state (nothing to undo when an interrupt lands
    inside an inner region's enter or exit).
    """

    __slots__ = ("state",)

    def __init__(self, state: State) -> None:
        self.state = state

    def __enter__(self) -> None:
        s = self.state
        if s.in_user:
            raise RuntimeError("kernel.user_code() regions do not nest")
        s.in_user = True
        if s.pending and s.pending == s.request:
            s.pending = 0
            s.in_user = False
            raise KeyboardInterrupt
        return None

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        self.state.in_user = False
        return False


class Nested:
    """A region inside a region: user code already runs, nothing to track."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        return False


_ENTER_CODE = UserCode.__enter__.__code__
_EXIT_CODE = UserCode.__exit__.__code__


class Critical:
    """Run kernel bookkeeping inside a user region without being torn by
    SIGINT: the interrupt is recorded and raised when the section ends."""

    __slots__ = ("state", "saved")

    def __init__(self, state: State) -> None:
        self.state = state
        self.saved = False

    def __enter__(self) -> None:
        self.saved = self.state.in_user
        self.state.in_user = False

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        s = self.state
        if self.saved:
            s.in_user = True
            if exc_type is None and s.pending and s.pending == s.request:
                s.pending = 0
                s.in_user = False
                raise KeyboardInterrupt
        return False


class Interrupts:
    """The kernel's signal handlers and the interrupt cell they read.

    Installed on the main thread (install); the wakeup pipe it sets up is
    watched by the pump thread, whose Nudger reads `cell` and the state.
    """

    def __init__(self, state: State) -> None:
        self.state = state
        # The interrupt cell (PROTOCOL.md "Interrupts"); read-only here.
        self.cell = zero_cell()
        self.wake_r = -1  # read end of the signal wakeup pipe (signal.set_wakeup_fd)
        self.wake_w = -1  # its write end
        self.main_thread = 0  # threading.get_ident() of the main thread

    def on_sigint(self, signum: int, frame: Optional[FrameType]) -> None:
        """Attribute a SIGINT to a request, then interrupt that request.

        The Go side writes the id of the request it interrupts into the cell
        before it sends SIGINT, so the cell is current whenever this runs:
        an id above every id already claimed is what this signal (or one
        that coalesced with it) is for. A SIGINT that announces no new id
        (sent by another process, or by user code) is for the request
        running now, as Ctrl-C would be.

        Only the running request is interrupted on the spot, and only inside
        user code. Any other interrupt is recorded in `pending`, which keeps
        the highest id: the interrupt of a request whose frame the kernel
        has not read yet raises when that request enters user code; one of
        a request that has ended is never matched again (ids only grow), so
        it cannot touch a later request.
        """
        s = self.state
        target = self.cell[0]
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

    def on_sigterm(self, signum: int, frame: Optional[FrameType]) -> None:
        if self.state.terminating:
            return
        self.state.terminating = True
        raise SystemExit(0)

    @staticmethod
    def on_nudge(signum: int, frame: Optional[FrameType]) -> None:
        """NUDGE_SIGNAL: nothing to do; its delivery ended a system call."""

    def stop_requested(self) -> bool:
        """Whether the Go side asked the running request to stop at its
        next statement boundary (the cell's second word names it)."""
        return self.state.request != 0 and self.cell[1] == self.state.request

    def handler_due(self) -> bool:
        """Whether the Go side interrupted the running request and no SIGINT
        handler has claimed that interrupt yet (read by the pump thread)."""
        target = self.cell[0]
        return target > self.state.claimed and target == self.state.request

    def install(self, start_helpers: Callable[[], None]) -> None:
        """Install the handlers on the main thread, and run start_helpers
        (which starts the kernel's own threads) with the handled signals
        blocked: helper threads inherit the mask and never receive them.
        Every signal with a Python handler writes its number to the wakeup
        pipe, which the pump watches (Nudger)."""
        self.main_thread = threading.get_ident()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        self.wake_r, self.wake_w = wake_r, wake_w
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        _INSTALLED[:] = [self]
        signal.signal(signal.SIGINT, self.on_sigint)
        signal.signal(signal.SIGTERM, self.on_sigterm)
        signal.signal(NUDGE_SIGNAL, self.on_nudge)
        wanted = {signal.SIGINT, signal.SIGTERM, NUDGE_SIGNAL}
        signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
        start_helpers()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, wanted)

    def wake(self) -> None:
        """Wake the pump (its poll watches the wakeup pipe)."""
        try:
            os.write(self.wake_w, b"\0")
        except OSError:
            pass


_INSTALLED: List[Interrupts] = []  # the kernel's Interrupts once installed (main thread)

# What a fresh interpreter has for the signals the kernel handles.
_FRESH: Dict[int, Any] = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGTERM: signal.SIG_DFL,
    NUDGE_SIGNAL: signal.SIG_DFL,
}
_ORDER = (signal.SIGINT, signal.SIGTERM, NUDGE_SIGNAL)


class PytestProcess:
    """The process state pytest's code sees in a pytest kernel (ripple run
    --tests): what a fresh interpreter running pytest has, not the kernel's.
    The unittest path (pytest_unittest.py, no pytest installed) runs its
    loader and its tests under the same two blocks.

    While pytest runs (`signals()`: configuration, collection, each test's
    runtest protocol, the session's end), SIGINT, SIGTERM and SIGWINCH have
    the handlers they had last time pytest ran here (at first a fresh
    interpreter's: default_int_handler, SIG_DFL, SIG_DFL), and the wakeup
    fd is theirs (at first none), so that trio or asyncio can take it
    without a warning and a test that inspects the handlers sees
    pytest's. In between (the kernel's own frames to the Go side) the
    kernel's handlers are back, and what pytest's side left is kept for its
    next turn; in a run of tests (`tests()`, one request) only SIGINT's
    handler goes back and forth around each test (`test()`), so that the
    kernel's code between two tests sends its frames under the kernel's
    SIGINT handler (Critical defers an interrupt there) while SIGTERM and
    SIGWINCH stay pytest's until the request ends. A SIGINT while pytest runs raises KeyboardInterrupt at once
    (default_int_handler), which is what the Go side's interrupt of a test
    wants; only the kernel's nudge of a SIGINT that lands just before a
    blocking call (Nudger) is lost there: such a test runs on until the Go
    side's timeout kills the kernel.

    For a whole request (`hidden()`), the kernel's own modules are out of
    sys.modules (a test cannot import ripple_kernel: the package is on no
    sys.path entry) and the variables the Go side set for the kernel alone
    (HIDDEN_ENV) are out of os.environ; RIPPLE_KERNEL_TAG stays, as
    documented (kernel/PROTOCOL.md): every child process must inherit it.

    Main thread only. Kernel code that runs while the modules are hidden
    must not import a kernel module it has not imported yet.
    """

    HIDDEN_ENV = ("RIPPLE_ROOT", "RIPPLE_KERNEL_ID")

    def __init__(self) -> None:
        self.handlers: Dict[int, Any] = dict(_FRESH)  # pytest's side, while the kernel's are installed
        self.wakeup = -1  # pytest's wakeup fd, likewise
        self.kernel_handlers: Dict[int, Any] = {}  # the kernel's, while pytest's are installed
        self.kernel_wakeup = -1
        self.swapped = False  # pytest's handlers are installed
        self.depth = 0  # open signals() blocks: only the outermost swaps
        # Inside tests(), between two tests: swapped, but SIGINT has the
        # kernel's handler (pytest's is in handlers).
        self.between = False

    def signals(self) -> "_Swap":
        return _Swap(self)

    def tests(self) -> "_Tests":
        """For a run of tests: pytest's side as signals() installs it,
        but SIGINT's handler the kernel's between tests (each test()
        installs pytest's for the test): a test costs two sigaction calls,
        not the whole swap's eight system calls (~60 us a test here)."""
        return _Tests(self)

    def test(self) -> "_Test":
        """One test's runtest protocol inside tests(): pytest's SIGINT
        handler; outside tests() the whole swap (signals())."""
        return _Test(self)

    def hidden(self) -> "_Hidden":
        return _Hidden()

    def to_pytest(self) -> None:
        """Install pytest's side, SIGINT's handler last (the kernel's
        handler may raise until then)."""
        if self.swapped:
            return
        self.kernel_handlers = {n: signal.getsignal(n) for n in _ORDER}
        self.swapped = True
        self.kernel_wakeup = signal.set_wakeup_fd(self.wakeup)
        for n in reversed(_ORDER):
            signal.signal(n, self.handlers[n])

    def to_kernel(self) -> None:
        """Reinstall the kernel's side, SIGINT's handler first; what pytest's
        side had is kept. A KeyboardInterrupt meanwhile (pytest's handler)
        leaves it to be called again: what is back already is not taken
        for pytest's."""
        if not self.swapped:
            return
        for n in _ORDER:
            mine = self.kernel_handlers[n]
            h = signal.signal(n, mine)
            if h is not mine:
                self.handlers[n] = h
        w = signal.set_wakeup_fd(self.kernel_wakeup, warn_on_full_buffer=False)
        if w != self.kernel_wakeup:
            self.wakeup = w
        self.swapped = False


# The process's one PytestProcess: the pytest path (pytest_plugin.py) and
# the unittest path (pytest_unittest.py) share pytest's side of the state.
TEST_PROCESS = PytestProcess()


class _Swap:
    """PytestProcess.signals(): pytest's handlers for a with block."""

    __slots__ = ("proc",)

    def __init__(self, proc: PytestProcess) -> None:
        self.proc = proc

    def __enter__(self) -> None:
        self.proc.depth += 1
        if not _INSTALLED or self.proc.depth > 1:
            return  # no kernel handlers (a unit test), or swapped already
        try:
            self.proc.to_pytest()
        except BaseException:
            self.proc.depth -= 1
            self.proc.to_kernel()
            raise

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        self.proc.depth -= 1
        if self.proc.depth:
            return False
        interrupted = False
        while True:
            try:
                self.proc.to_kernel()
                break
            except KeyboardInterrupt:
                interrupted = True  # default_int_handler, before SIGINT's was back
        _claim(exc_type, interrupted)
        if interrupted and exc_type is None:
            raise KeyboardInterrupt
        return False


def _claim(exc_type: Optional[Type[BaseException]], interrupted: bool) -> None:
    """The Go side's interrupt that pytest's SIGINT handler took is
    claimed: the kernel's handler must not count it again."""
    if _INSTALLED and (exc_type is KeyboardInterrupt or interrupted):
        it = _INSTALLED[0]
        target = it.cell[0]
        if target > it.state.claimed and target == it.state.request:
            it.state.claimed = target


class _Tests:
    """PytestProcess.tests(): the whole swap, then SIGINT's kernel handler
    back until a test() takes pytest's. Its exit undoes the whole swap
    (SIGINT's step finds the kernel's handler in: pytest's stays kept)."""

    __slots__ = ("proc", "swap")

    def __init__(self, proc: PytestProcess) -> None:
        self.proc = proc
        self.swap = _Swap(proc)

    def __enter__(self) -> None:
        proc = self.proc
        self.swap.__enter__()
        if proc.swapped and proc.depth == 1:
            try:
                # signal.signal runs a pending handler before it changes
                # one: an interrupt now raises from here (pytest's handler).
                signal.signal(signal.SIGINT, proc.kernel_handlers[signal.SIGINT])
            except BaseException as e:
                self.swap.__exit__(type(e), e, e.__traceback__)
                raise
            proc.between = True

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        self.proc.between = False
        return self.swap.__exit__(exc_type, exc, tb)


class _Test:
    """PytestProcess.test(): pytest's SIGINT handler for one test inside
    tests() (else the whole swap, as signals())."""

    __slots__ = ("proc", "swap")

    def __init__(self, proc: PytestProcess) -> None:
        self.proc = proc
        self.swap: Optional[_Swap] = None

    def __enter__(self) -> None:
        proc = self.proc
        if not proc.between:
            self.swap = _Swap(proc)
            self.swap.__enter__()
            return
        # A pending interrupt raises from here, by the kernel's handler,
        # which stays (to_kernel finds it in): nothing of the test ran.
        proc.between = False
        signal.signal(signal.SIGINT, proc.handlers[signal.SIGINT])

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        if self.swap is not None:
            return self.swap.__exit__(exc_type, exc, tb)
        proc = self.proc
        mine = proc.kernel_handlers[signal.SIGINT]
        interrupted = False
        while True:
            try:
                h = signal.signal(signal.SIGINT, mine)
                break
            except KeyboardInterrupt:
                interrupted = True  # pytest's handler, before the kernel's was back
        if h is not mine:
            proc.handlers[signal.SIGINT] = h  # a test replaced pytest's: kept for its next turn
        proc.between = True
        _claim(exc_type, interrupted)
        if interrupted and exc_type is None:
            raise KeyboardInterrupt
        return False


class _Hidden:
    """PytestProcess.hidden(): the kernel's modules and variables out of
    sight for a with block."""

    __slots__ = ("modules", "env")

    def __init__(self) -> None:
        self.modules: Dict[str, Any] = {}
        self.env: Dict[str, str] = {}

    def __enter__(self) -> None:
        for name in [n for n in sys.modules if n.startswith(("ripple_kernel", "_ripple"))]:
            self.modules[name] = sys.modules.pop(name)
        for name in PytestProcess.HIDDEN_ENV:
            if name in os.environ:
                self.env[name] = os.environ.pop(name)

    def __exit__(
        self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]
    ) -> Literal[False]:
        for name, mod in self.modules.items():
            sys.modules.setdefault(name, mod)
        for name, value in self.env.items():
            os.environ.setdefault(name, value)
        return False


class Nudger:
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

    __slots__ = ("interrupts", "at", "gap")

    def __init__(self, interrupts: Interrupts) -> None:
        self.interrupts = interrupts
        self.at: Optional[float] = None  # monotonic time of the next nudge; None: not watching
        self.gap = NUDGE_FIRST

    def signalled(self) -> None:
        """The wakeup pipe has bytes: a signal reached the process."""
        try:
            while os.read(self.interrupts.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        if self.at is None and self.interrupts.handler_due():
            self.gap = NUDGE_FIRST
            self.at = time.monotonic() + self.gap

    def timeout(self, idle: Optional[int]) -> Optional[int]:
        """The pump's poll timeout in milliseconds (None: forever)."""
        if self.at is None:
            return idle
        wait = max(0, int((self.at - time.monotonic()) * 1000) + 1)
        return wait if idle is None else min(wait, idle)

    def tick(self) -> None:
        if self.at is None:
            return
        if not self.interrupts.handler_due():
            self.at = None
            return
        now = time.monotonic()
        if now >= self.at:
            try:
                signal.pthread_kill(self.interrupts.main_thread, NUDGE_SIGNAL)
            except OSError:
                pass
            self.gap = min(self.gap * 2, NUDGE_MAX)
            self.at = now + self.gap
