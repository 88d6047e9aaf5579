"""What a test sees of its process: what it sees under pytest."""

import importlib.util
import io
import os
import signal
import socket
import sys
import warnings


def test_sigint_is_default():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sigterm_is_default():
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_sigwinch_is_default():
    assert signal.getsignal(signal.SIGWINCH) == signal.SIG_DFL


def test_wakeup_fd_is_free():
    assert signal.set_wakeup_fd(-1) == -1


def test_wakeup_fd_trio_style():
    # trio and asyncio take the wakeup slot and warn when another owner had
    # it; with filterwarnings = error such a warning fails the test.
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            old = signal.set_wakeup_fd(a.fileno(), warn_on_full_buffer=False)
            if old != -1:
                warnings.warn(RuntimeWarning("the signal wakeup fd was taken: %d" % old))
        assert signal.set_wakeup_fd(old) == a.fileno()
    finally:
        a.close()
        b.close()


def test_no_ripple_module():
    assert importlib.util.find_spec("ripple_kernel") is None
    assert not [m for m in sys.modules if m.startswith("ripple")]


def test_no_ripple_environment():
    # RIPPLE_KERNEL_TAG is documented: a kernel's child processes inherit
    # it so that none outlives the kernel.
    assert sorted(k for k in os.environ if k.startswith("RIPPLE") and k != "RIPPLE_KERNEL_TAG") == []


def test_sigint_raises_keyboard_interrupt_handler():
    # A test may install its own handler and see it called.
    seen = []
    old = signal.signal(signal.SIGUSR1, lambda s, f: seen.append(s))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert seen == [signal.SIGUSR1]


def test_collector_thresholds_are_a_fresh_interpreters():
    # ripple raises the first threshold while pytest collects; a test sees
    # what a fresh interpreter has.
    import gc
    import subprocess

    fresh = subprocess.run([sys.executable, "-c", "import gc; print(gc.get_threshold(), gc.isenabled())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert "%s %s" % (gc.get_threshold(), gc.isenabled()) == fresh


# Bound at import, as click binds its prompt function: Python's input().
ask = input


def test_input_reads_stdin(monkeypatch):
    # A test drives a prompt through sys.stdin: input() is Python's.
    monkeypatch.setattr(sys, "stdin", io.StringIO("yes\n"))
    assert ask("? ") == "yes"
    monkeypatch.setattr(sys, "stdin", io.StringIO("no\n"))
    assert input("? ") == "no"


def test_argv_is_pytests_command_line():
    # Under `python -m pytest ARGS` sys.argv is pytest's __main__.py, then
    # ARGS: a CLI's main() called without arguments parses pytest's.
    import pytest

    assert sys.argv[0] == os.path.join(os.path.dirname(os.path.abspath(pytest.__file__)), "__main__.py")
    assert sys.argv[sys.argv.index("-p") + 1] == "no:cacheprovider"


def test_threads_are_pytests():
    # A suite that checks for leaked threads counts the threads of its
    # process: under pytest, the main thread alone.
    import threading

    assert threading.enumerate() == [threading.main_thread()]
    assert threading.active_count() == 1
