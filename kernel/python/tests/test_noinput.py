"""input() in a ripple kernel says why it cannot read (noinput.py)."""

import builtins
import unittest

from enginetest import engine_module

engine_module()  # installs the package's loader

from ripple_kernel import noinput  # noqa: E402


class NoInputTest(unittest.TestCase):
    def test_input_raises_saying_why(self) -> None:
        saved = builtins.input
        self.addCleanup(setattr, builtins, "input", saved)
        noinput.install_input()
        with self.assertRaises(EOFError) as caught:
            input("name? ")
        self.assertIsInstance(caught.exception, noinput.InputNotSupported)
        self.assertIn("input() is not supported here", str(caught.exception))
        self.assertIn("as you type", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
