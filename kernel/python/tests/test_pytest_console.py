"""pytest_console.Console: each report's digest is what pytest's own
terminal reporter writes for it (its letter, its section under FAILURES,
its short-summary line), checked against pytest's output of the same
session."""

import contextlib
import importlib.util
import subprocess
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ripple_kernel import pytest_console  # noqa: E402
from pytest_python import need_pytest_python  # noqa: E402

SUITE = '''
import warnings


def test_passes():
    warnings.warn(UserWarning("careful"))


def test_fails():
    x = 1
    assert x == 2
'''


class Recorder:
    """A pytest plugin that digests each item as the kernel does."""

    def __init__(self):
        self.con = None
        self.reports = []
        self.digests = {}

    def pytest_sessionstart(self, session):
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        self.con = pytest_console.Console(session.config, tr, False, 0)

    def pytest_runtest_logreport(self, report):
        self.reports.append(report)

    def pytest_warning_recorded(self, warning_message, nodeid):
        self.con.record_warning(warning_message, nodeid)

    def pytest_runtest_logfinish(self, nodeid):
        self.digests[nodeid] = self.reports
        self.reports = []


@unittest.skipUnless(importlib.util.find_spec("pytest"), "pytest is not installed here: ConsoleElsewhere runs these")
class ConsoleTest(unittest.TestCase):
    def test_digests_are_the_terminal_reporters(self):
        import pytest

        rec = Recorder()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "test_suite.py"), "w") as f:
                f.write(SUITE)
            out = io.StringIO()
            cwd = os.getcwd()
            os.chdir(d)
            try:
                with contextlib.redirect_stdout(out):
                    code = pytest.main(["-p", "no:cacheprovider", "-rfE", "test_suite.py"], plugins=[rec])
                items = {}
                # The items, to digest their reports after the session.
                for nodeid, reports in rec.digests.items():
                    location = ("test_suite.py", 0, nodeid.split("::")[1])
                    items[nodeid] = rec.con._item(nodeid, location, reports)
            finally:
                os.chdir(cwd)
        self.assertEqual(code, 1)
        text = out.getvalue()
        failed = items["test_suite.py::test_fails"]
        self.assertEqual([r["letter"] for r in failed["reports"]], ["F"])
        call = failed["reports"][0]
        self.assertEqual(call["cat"], "failed")
        self.assertIn(call["section"], text)
        self.assertRegex(call["section"], r"^_+ test_fails _+\n")
        self.assertIn(call["short"] + "\n", text)
        self.assertTrue(call["short"].startswith("FAILED test_suite.py::test_fails - "))
        passed = items["test_suite.py::test_passes"]
        self.assertEqual([(r["cat"], r["letter"], r["word"]) for r in passed["reports"]], [("passed", ".", "PASSED")])
        self.assertNotIn("short", passed["reports"][0])  # not in -rfE
        # Recorded during the session, taken with the first item digested.
        warnings = [w for d in items.values() for w in d.get("warnings", [])]
        self.assertEqual([w["location"] for w in warnings], ["test_suite.py::test_passes"])
        self.assertIn(warnings[0]["message"].splitlines()[0], text)


if __name__ == "__main__":
    unittest.main()


class ConsoleElsewhere(unittest.TestCase):
    def test_console_with_a_python_that_has_pytest(self):
        if importlib.util.find_spec("pytest") is not None:
            return  # ConsoleTest ran here
        python = need_pytest_python(self)
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run([python, "-m", "unittest", "test_pytest_console.ConsoleTest"], cwd=here,
                             capture_output=True, text=True, timeout=600)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertNotIn("skipped", out.stderr)
