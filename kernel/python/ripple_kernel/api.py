"""The kernel's interface to the code it hosts: what the execution engine
(``engine.register(api)``) and pytest's plugin are given, as a Protocol, and
the type of the JSON objects that cross the wire.

The process side (kernel.py) implements ``KernelAPI``; nothing else should
reach into the kernel.
"""

from __future__ import annotations

from typing import Any, Callable, ContextManager, Dict, Optional, Protocol

# A JSON object from or to the Go side (kernel/PROTOCOL.md): request
# params, results, progress frames. The only place Any is meant to appear.
WireObject = Dict[str, Any]


class KernelAPI(Protocol):
    """What the execution engine sees of the kernel."""

    # The project root: sys.path[0] and the working directory.
    root: str

    def at_exit(self, fn: Callable[[], object]) -> None:
        """Call fn when the kernel exits, after the user's atexit handlers
        and before the user namespace is released."""

    def set_idle(
        self,
        has_work: Callable[[], bool],
        work: Callable[[Callable[[], bool]], object],
        seconds: float,
    ) -> None:
        """Call work(arrived) between requests while has_work() says so,
        once no request has come for `seconds` after a result was sent (0:
        right after it); arrived() tells work that a request came."""

    def log(self, message: str) -> None:
        """A line in the kernel's log (not the output of any request)."""

    def user_code(self) -> ContextManager[None]:
        """Context manager around user code: SIGINT raises KeyboardInterrupt
        only inside it. Regions nest."""

    def stop_requested(self) -> bool:
        """Whether the Go side asked the running request to stop at its next
        statement boundary."""

    def emit_progress(self, obj: WireObject, *more: WireObject, hold: bool = False) -> None:
        """Send a `prog` frame of the current request per object, in one
        write; hold: they may wait a little, for the next frame."""

    def set_expression(self, expression_id: Optional[str]) -> None:
        """Attribute output from now on to statement expression_id (None: to
        no statement)."""

    def flush_output(self) -> None:
        """Forward output written so far before whatever is sent next."""
