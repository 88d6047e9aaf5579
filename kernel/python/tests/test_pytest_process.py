"""signals.PytestProcess: pytest's code sees a fresh interpreter's signal
handlers and wakeup fd, and the kernel's state is back in between; what
pytest's side changed is kept for its next turn; the kernel's modules and
its own variables are hidden for a request and come back."""

import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ripple_kernel import signals  # noqa: E402


def kernel_handler(signum, frame):  # stands in for the kernel's handlers
    pass


class PytestProcessTest(unittest.TestCase):
    def setUp(self):
        self.saved = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM, signal.SIGWINCH)}
        self.r, self.w = os.pipe()
        os.set_blocking(self.w, False)
        os.set_blocking(self.r, False)
        self.saved_wakeup = signal.set_wakeup_fd(self.w)
        for n in self.saved:
            signal.signal(n, kernel_handler)
        self.installed = signals._INSTALLED[:]
        signals._INSTALLED[:] = [signals.Interrupts(signals.State())]

    def tearDown(self):
        signal.set_wakeup_fd(self.saved_wakeup)
        for n, h in self.saved.items():
            signal.signal(n, h)
        signals._INSTALLED[:] = self.installed
        os.close(self.r)
        os.close(self.w)

    def test_fresh_while_pytest_runs_kernel_after(self):
        proc = signals.PytestProcess()
        with proc.signals():
            self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
            self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)
            self.assertEqual(signal.getsignal(signal.SIGWINCH), signal.SIG_DFL)
            self.assertEqual(signal.set_wakeup_fd(-1), -1)
        self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)
        self.assertIs(signal.getsignal(signal.SIGWINCH), kernel_handler)
        self.assertEqual(signal.set_wakeup_fd(self.w), self.w)

    def test_what_pytest_side_set_is_kept_for_its_next_turn(self):
        proc = signals.PytestProcess()

        def own(signum, frame):
            pass

        with proc.signals():
            signal.signal(signal.SIGTERM, own)
            signal.set_wakeup_fd(self.r)
        self.assertIs(signal.getsignal(signal.SIGTERM), kernel_handler)
        with proc.signals():
            self.assertIs(signal.getsignal(signal.SIGTERM), own)
            self.assertEqual(signal.set_wakeup_fd(-1), self.r)

    def test_nested_blocks_swap_once(self):
        proc = signals.PytestProcess()
        with proc.signals():
            with proc.signals():
                pass
            self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
        self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)

    def test_keyboard_interrupt_restores_the_kernel(self):
        proc = signals.PytestProcess()
        with self.assertRaises(KeyboardInterrupt):
            with proc.signals():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(1000):
                    pass
        self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)

    def test_run_of_tests_swaps_only_sigint_between_tests(self):
        proc = signals.PytestProcess()
        with proc.tests():
            # Between tests: the kernel's SIGINT handler, pytest's others.
            self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)
            self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)
            for _ in range(2):
                with proc.test():
                    self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
                    self.assertEqual(signal.getsignal(signal.SIGWINCH), signal.SIG_DFL)
                    self.assertEqual(signal.set_wakeup_fd(-1), -1)
                self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)
        self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)
        self.assertIs(signal.getsignal(signal.SIGTERM), kernel_handler)
        self.assertEqual(signal.set_wakeup_fd(self.w), self.w)

    def test_sigint_handler_a_test_set_is_kept_for_the_next_test(self):
        proc = signals.PytestProcess()

        def own(signum, frame):
            pass

        with proc.tests():
            with proc.test():
                signal.signal(signal.SIGINT, own)
            self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)
            with proc.test():
                self.assertIs(signal.getsignal(signal.SIGINT), own)
        with proc.signals():
            self.assertIs(signal.getsignal(signal.SIGINT), own)
        self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)

    def test_keyboard_interrupt_in_a_test_of_a_run_restores_the_kernel(self):
        proc = signals.PytestProcess()
        with self.assertRaises(KeyboardInterrupt):
            with proc.tests():
                with proc.test():
                    os.kill(os.getpid(), signal.SIGINT)
                    for _ in range(1000):
                        pass
        self.assertIs(signal.getsignal(signal.SIGINT), kernel_handler)
        self.assertIs(signal.getsignal(signal.SIGTERM), kernel_handler)
        with proc.signals():
            self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)

    def test_test_outside_a_run_swaps_everything(self):
        proc = signals.PytestProcess()
        with proc.test():
            self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
            self.assertEqual(signal.getsignal(signal.SIGTERM), signal.SIG_DFL)
        self.assertIs(signal.getsignal(signal.SIGTERM), kernel_handler)

    def test_hidden_modules_and_variables(self):
        os.environ["RIPPLE_ROOT"] = "/somewhere"
        os.environ["RIPPLE_KERNEL_TAG"] = "tag"
        try:
            with signals.PytestProcess().hidden():
                self.assertNotIn("ripple_kernel", sys.modules)
                self.assertNotIn("ripple_kernel.signals", sys.modules)
                self.assertNotIn("RIPPLE_ROOT", os.environ)
                self.assertEqual(os.environ.get("RIPPLE_KERNEL_TAG"), "tag")
            self.assertIs(sys.modules["ripple_kernel.signals"], signals)
            self.assertEqual(os.environ["RIPPLE_ROOT"], "/somewhere")
        finally:
            os.environ.pop("RIPPLE_ROOT", None)
            os.environ.pop("RIPPLE_KERNEL_TAG", None)


if __name__ == "__main__":
    unittest.main()
