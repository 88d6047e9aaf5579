"""What a test leaves for the end of the process: each effect writes a
file under effects/ beside this module, and the process must have done
them all by the time it exits, as it does under pytest."""

import atexit
import logging
import os
import threading
import time

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "effects")
os.makedirs(HERE, exist_ok=True)


def _write(name, text):
    with open(os.path.join(HERE, name), "w") as f:
        f.write(text)


class Closer:
    """Writes its file when its last reference goes (no cycle)."""

    def __del__(self, open=open, path=os.path.join(HERE, "del")):
        # Its own references: module globals may be gone by then.
        with open(path, "w") as f:
            f.write("module global released\n")


KEPT = Closer()
UNCLOSED = open(os.path.join(HERE, "unclosed"), "w")  # noqa: SIM115 - flushed at exit
LOG = logging.getLogger("exit_effects")


def test_atexit_handler():
    atexit.register(_write, "atexit", "handler ran\n")


def test_unclosed_file_is_flushed_at_exit():
    UNCLOSED.write("buffered, never closed\n")


def test_non_daemon_thread_is_joined():
    def late():
        time.sleep(0.3)
        _write("thread", "joined before exit\n")

    threading.Thread(target=late).start()


def test_logging_handler_is_flushed():
    handler = logging.StreamHandler(open(os.path.join(HERE, "log"), "w"))  # noqa: SIM115
    LOG.addHandler(handler)
    LOG.setLevel(logging.INFO)
    LOG.info("logged at the end")
