"""What a unittest test sees of its process: what it sees under pytest (or
python -m unittest), whichever runner ripple uses."""

import importlib.util
import io
import os
import signal
import sys
import unittest


class TestProcess(unittest.TestCase):
    def test_sigint_is_default(self):
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

    def test_sigterm_is_default(self):
        self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)

    def test_sigwinch_is_default(self):
        self.assertEqual(signal.getsignal(signal.SIGWINCH), signal.SIG_DFL)

    def test_wakeup_fd_is_free(self):
        self.assertEqual(signal.set_wakeup_fd(-1), -1)

    def test_no_ripple_module(self):
        self.assertIsNone(importlib.util.find_spec("ripple_kernel"))
        self.assertEqual([m for m in sys.modules if m.startswith("ripple")], [])

    def test_no_ripple_environment(self):
        # RIPPLE_KERNEL_TAG is documented: a kernel's child processes
        # inherit it so that none outlives the kernel.
        self.assertEqual(sorted(k for k in os.environ if k.startswith("RIPPLE") and k != "RIPPLE_KERNEL_TAG"), [])


# Bound at import, as click binds its prompt function: Python's input().
ask = input


class TestInput(unittest.TestCase):
    def test_input_reads_stdin(self):
        # A test drives a prompt through sys.stdin: input() is Python's.
        saved = sys.stdin
        sys.stdin = io.StringIO("yes\nno\n")
        try:
            self.assertEqual(ask("? "), "yes")
            self.assertEqual(input("? "), "no")
        finally:
            sys.stdin = saved


class TestClassFixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.handler = signal.getsignal(signal.SIGINT)

    def test_class_fixture_saw_default(self):
        self.assertIs(self.handler, signal.default_int_handler)
