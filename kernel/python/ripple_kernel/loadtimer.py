"""The compile timeout: a bound on the top level of a module load
(PROTOCOL.md 5.1, compile's ``timeout``)."""

from __future__ import annotations

import signal
import types
from dataclasses import dataclass, field
from typing import List, Optional, Set, Type

from .api import KernelAPI


class CompileTimeout(BaseException):
    """A module's top level ran past the compile timeout (PROTOCOL.md 5.1)."""


@dataclass(eq=False)
class LoadTimer:
    """Bounds the outermost module load of a compile with SIGALRM.

    arm(seconds) sets the budget of each outermost load of the compile
    (0 disarms); running(name) wraps one load: the outermost one starts
    the interval timer, which raises CompileTimeout in the loading code
    (main thread, between bytecodes) when the budget is spent, and again
    every half second after that if the code swallows it; nested loads
    (imports of the module) run under the same clock. Outside a load the
    handler does nothing, so a late signal cannot hit kernel bookkeeping.
    Code that blocks in C without returning to the interpreter is not
    stopped here: the Go side's watchdog interrupts, then restarts, the
    kernel (engine/compile.go).
    """

    kernel: KernelAPI
    seconds: float = 0
    depth: int = 0
    loading: List[str] = field(default_factory=list)  # the modules being loaded, innermost last
    timed_out: Set[str] = field(default_factory=set)  # modules the timer cut during this compile
    installed: bool = False

    def arm(self, seconds: object) -> None:
        self.seconds = seconds if isinstance(seconds, (int, float)) and seconds > 0 else 0

    def _fire(self, signum: int, frame: Optional[types.FrameType]) -> None:
        if self.depth > 0:
            self.timed_out.add(self.loading[-1])
            raise CompileTimeout(
                "the top level of %s did not return within the compile timeout (%gs); it was interrupted"
                % (self.loading[-1], self.seconds)
            )

    def running(self, name: str) -> TimedLoad:
        return TimedLoad(self, name)


class TimedLoad:
    """One load under a LoadTimer (a context manager)."""

    __slots__ = ("timer", "name", "outer")

    def __init__(self, timer: LoadTimer, name: str) -> None:
        self.timer = timer
        self.name = name
        self.outer = False

    def __enter__(self) -> None:
        t = self.timer
        if t.depth == 0 and t.seconds > 0:
            if not t.installed:
                signal.signal(signal.SIGALRM, t._fire)
                t.installed = True
            self.outer = True
            signal.setitimer(signal.ITIMER_REAL, t.seconds, 0.5)
        t.loading.append(self.name)
        t.depth += 1

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[types.TracebackType]) -> None:
        t = self.timer
        t.depth -= 1
        t.loading.pop()
        if self.outer:
            signal.setitimer(signal.ITIMER_REAL, 0)
