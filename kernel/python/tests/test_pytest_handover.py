"""pytest_split.selected: a late kernel's session collects the hand-over
(test files and node ids relative to rootdir) as pytest collects such
arguments: only those modules are imported, pytest's deselection (addopts
-m) applies again, and config.args is the user's again afterwards."""

import json
import os
import subprocess
import tempfile
import textwrap
import unittest

from pytest_python import need_pytest_python

KERNEL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs pytest --collect-only in a fresh interpreter with a plugin that
# wraps the collection in selected(); prints what it collected.
SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import pytest
    from ripple_kernel.pytest_split import selected

    class Hand:
        def __init__(self, select):
            self.select = select
            self.out = {}

        @pytest.hookimpl(hookwrapper=True)
        def pytest_collection(self, session):
            self.out["argsBefore"] = list(session.config.args)
            with selected(session.config, self.select):
                yield
            self.out["argsAfter"] = list(session.config.args)
            self.out["items"] = [i.nodeid for i in session.items]

    hand = Hand(json.loads(sys.argv[3]))
    code = pytest.main(["-q", "--co", "-p", "no:cacheprovider", sys.argv[2]], plugins=[hand])
    hand.out["code"] = int(code)
    print("RESULT " + json.dumps(hand.out))
""")


class SelectedTest(unittest.TestCase):
    def setUp(self):
        self.python = need_pytest_python(self)
        self.tmp = tempfile.TemporaryDirectory()
        self.root = os.path.join(self.tmp.name, "proj")
        os.makedirs(os.path.join(self.root, "pkg"))
        self.log = os.path.join(self.tmp.name, "imports.log")
        with open(os.path.join(self.root, "pytest.ini"), "w") as f:
            f.write('[pytest]\naddopts = -m "not stress"\nmarkers =\n    stress: deselected\n')
        for name in ("test_a", "test_b", "test_c"):
            with open(os.path.join(self.root, "pkg", name + ".py"), "w") as f:
                f.write(textwrap.dedent("""
                    import pytest
                    with open(%r, "a") as log:
                        log.write(%r + "\\n")

                    def test_one():
                        pass

                    def test_two():
                        pass

                    @pytest.mark.stress
                    @pytest.mark.parametrize("n", range(3))
                    def test_stress(n):
                        pass
                    """ % (self.log, name)))

    def tearDown(self):
        self.tmp.cleanup()

    def collect(self, select):
        # The invocation directory is not rootdir: the selection is
        # relative to rootdir, as node ids are.
        out = subprocess.run([self.python, "-c", SCRIPT, KERNEL_DIR, self.root, json.dumps(select)],
                             cwd=self.tmp.name, capture_output=True, text=True)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
        self.assertTrue(lines, out.stdout + out.stderr)
        with open(self.log) as f:
            imported = f.read().split()
        return json.loads(lines[0][len("RESULT "):]), imported

    def test_collects_only_the_hand_over(self):
        got, imported = self.collect(["pkg/test_b.py", "pkg/test_c.py::test_two"])
        self.assertEqual(got["code"], 0)
        self.assertEqual(got["items"], ["pkg/test_b.py::test_one", "pkg/test_b.py::test_two", "pkg/test_c.py::test_two"])
        self.assertEqual(sorted(imported), ["test_b", "test_c"])  # test_a is never imported
        self.assertEqual(got["argsAfter"], got["argsBefore"])
        self.assertEqual(got["argsBefore"], [self.root])

    def test_other_directories_conftests_load_as_under_pytest(self):
        # pytest loads zzz/conftest.py when its walk reaches zzz/, whatever
        # it collects there: so does a hand-over that has no test of zzz/,
        # without importing zzz's test module.
        os.makedirs(os.path.join(self.root, "zzz"))
        for name in ("conftest", "test_z"):
            with open(os.path.join(self.root, "zzz", name + ".py"), "w") as f:
                f.write("with open(%r, 'a') as log:\n    log.write(%r + '\\n')\n\ndef test_z():\n    pass\n"
                        % (self.log, name + "_zzz"))
        got, imported = self.collect(["pkg/test_b.py"])
        self.assertEqual(got["code"], 0)
        self.assertEqual(got["items"], ["pkg/test_b.py::test_one", "pkg/test_b.py::test_two"])
        self.assertEqual(sorted(imported), ["conftest_zzz", "test_b"])

    def test_without_selection_the_command_line(self):
        got, imported = self.collect([])
        self.assertEqual(len(got["items"]), 6)  # the stress tests deselected by addopts
        self.assertEqual(sorted(imported), ["test_a", "test_b", "test_c"])

    def test_a_node_id_it_cannot_find_is_pytest_usage_error(self):
        got, _ = self.collect(["pkg/test_b.py::test_gone"])
        self.assertEqual(got["code"], 4)  # pytest's usage error: the Go side's late kernel does not join


if __name__ == "__main__":
    unittest.main()
