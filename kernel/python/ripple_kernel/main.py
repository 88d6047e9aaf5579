"""Where a kernel process starts: ``main(argv)``.

kernel/kernel.go's bootstrap installs the package's loader (loader.py) for
the install directory and calls ``main(sys.argv[2:])``, with argv one of

    kernel PORT   the kernel of kernel/PROTOCOL.md: with RIPPLE_TOKEN,
                  RIPPLE_ROOT and RIPPLE_KERNEL_ID in the environment, in
                  its own process group, with the project root as working
                  directory; it connects to 127.0.0.1:PORT, proves the
                  token, announces itself with a `ready` frame and serves
                  requests until the connection closes;
    labels        statement ids of a module's functions (labels.py), a
                  JSON request on stdin, the answer on stdout;
    affected      whether an edit affects running statements (affected.py);
    expression    whether a visualization expression compiles (exprcheck.py).

A kernel's start is a sequence of named phases (serve_kernel); the Kernel
object (kernel.py) owns everything they set up. Standard library only;
Python >= 3.9.
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING, List, NamedTuple, Optional, TextIO

if TYPE_CHECKING:
    from .kernel import Kernel


class Settings(NamedTuple):
    """What the Go side passes a kernel in its environment (each variable
    but RIPPLE_ROOT is removed once read: user code and its children must
    not see them). A NamedTuple: dataclasses would cost the start an import."""

    token: bytes  # RIPPLE_TOKEN: proves the connection is the kernel's
    root: str  # RIPPLE_ROOT: the project root
    death_fd: Optional[int]  # RIPPLE_DEATH_FD: read end of the death pipe
    cell_fd: Optional[int]  # RIPPLE_INTERRUPT_FD: the interrupt cell
    preload: str  # RIPPLE_PRELOAD: modules to import at start, comma-separated
    held_journal: str  # RIPPLE_HELD_JOURNAL: the file of held progress frames (capture.Output.hold_locked)


def main(argv: List[str]) -> int:
    """Run the command argv names; returns the process's exit status."""
    command = argv[0] if argv else ""
    if command == "labels":
        from . import labels

        labels.main()
        return 0
    if command == "affected":
        from . import affected

        affected.main()
        return 0
    if command == "expression":
        from . import exprcheck

        exprcheck.main()
        return 0
    log = _open_log()
    # Imported here: the static readers above need none of the kernel.
    from .kernel import write_log

    try:
        return serve_kernel(argv[1:] if command == "kernel" else argv, log)
    except SystemExit:
        raise
    except BaseException:
        # fd 2 may be a pipe by now: report to the startup log.
        import traceback

        write_log(log, "kernel failed:\n" + traceback.format_exc())
        return 1


def serve_kernel(args: List[str], log: TextIO) -> int:
    """The kernel's start-up, as phases, then its request loop."""
    from .kernel import Kernel, write_log

    if len(args) != 1 or not args[0].isdigit():
        write_log(log, "usage: ripple_kernel.main kernel PORT (got %r)" % (args,))
        return 2
    port = int(args[0])
    settings = _read_environment(log)
    if settings is None:
        return 2
    kernel = Kernel(settings.root, log)
    kernel.output.journal_path = settings.held_journal
    if settings.death_fd is not None:
        kernel.group.spawn_sentinel(settings.death_fd)
    if settings.cell_fd is not None:
        from .signals import map_interrupt_cell

        kernel.interrupts.cell = map_interrupt_cell(settings.cell_fd)
    kernel.become_script()
    from .noinput import install_input

    install_input()  # before the preload: Jupyter's replaces it
    _load_code(kernel, settings.preload)
    kernel.output.connect(port, settings.token)
    kernel.start_helpers()
    kernel.register_exit()
    kernel.send_ready()
    kernel.serve()
    return 0


def _open_log() -> TextIO:
    """Before anything else: our stderr is the startup log; keep it for the
    kernel's own diagnostics and for faulthandler's crash reports."""
    log = os.fdopen(os.dup(2), "w", buffering=1)
    try:
        import faulthandler

        faulthandler.enable(file=log, all_threads=False)
        # The Go side sends SIGUSR1 before killing a kernel that ignored an
        # interrupt: the log then shows where it was stuck.
        faulthandler.register(signal.SIGUSR1, file=log, all_threads=True)
    except Exception:
        pass
    return log


def _read_environment(log: TextIO) -> Optional[Settings]:
    """The kernel's settings from its environment; None (logged) when the
    token is missing."""
    from .kernel import write_log

    token = os.environ.pop("RIPPLE_TOKEN", "").encode("ascii")
    if not token:
        write_log(log, "RIPPLE_TOKEN is not set")
        return None
    death_fd = os.environ.pop("RIPPLE_DEATH_FD", "")
    cell_fd = os.environ.pop("RIPPLE_INTERRUPT_FD", "")
    return Settings(
        token=token,
        root=os.path.abspath(os.environ.get("RIPPLE_ROOT") or os.getcwd()),
        death_fd=int(death_fd) if death_fd.isdigit() else None,
        cell_fd=int(cell_fd) if cell_fd.isdigit() else None,
        preload=os.environ.pop("RIPPLE_PRELOAD", ""),
        held_journal=os.environ.pop("RIPPLE_HELD_JOURNAL", ""),
    )


def _load_code(kernel: Kernel, preload: str) -> None:
    """Preloaded modules (kernel.Config.Preload) load first, as a plain
    import from the project's root, before the engine's hooks exist; then
    the engine and the pytest method. They live as long as the kernel, so
    they are frozen too."""
    import gc

    kernel.preload(preload)
    # A kernel of ripple run --tests (RIPPLE_PYTEST_KERNEL=1) runs only
    # pytest, whose method leaves the engine on its first call: loading it
    # would cost every test run its import (~0.2 s).
    if os.environ.pop("RIPPLE_PYTEST_KERNEL", "") != "1":
        kernel.load_engine()
    kernel.add_pytest()
    # What exists now (the standard library and the engine, tens of
    # thousands of objects) lives as long as the kernel: frozen, the
    # collector no longer walks it in every full collection. Those came
    # in the middle of a restored run (its unpickled values, the module's
    # parse) and took ~20 of its ~50 ms. User objects are never frozen.
    gc.freeze()
