"""The kernel method jupyterCell (ripple_kernel/jupyter_cells.py): a
Jupyter cell as script statements (the last expression shown as the
execute_result, IPython syntax through IPython's transformer, syntax
errors as Jupyter shows them) and is_complete."""

import importlib.util
import linecache
import os
import sys
import tempfile
import unittest
from unittest import mock

from enginetest import engine_module

engine_module()  # installs the package's loader
from ripple_kernel import jupyter_cells, notebook  # noqa: E402
from ripple_kernel.wire import InvalidParams  # noqa: E402


def run(code):
    return jupyter_cells.cell({"code": code})


END = "\n" + notebook.CELL_END + "\n"  # after a cell's statements


class Run(unittest.TestCase):
    def test_the_cell_stays_as_written(self):
        # The last expression is left as written (notebook.cell_end shows
        # it): a warning or a traceback quotes the user's line.
        self.assertEqual(run("x = 1\nx + 1"), {"source": "x = 1\nx + 1" + END, "parsed": "x = 1\nx + 1"})
        self.assertEqual(run("x = 1\nx + 1;")["source"], "x = 1\nx + 1;" + END)
        self.assertEqual(run("y = 2\n")["source"], "y = 2" + END)
        self.assertEqual(run("")["source"], "")
        self.assertEqual(run("# only a comment")["source"], "# only a comment")  # no statement: no cell end

    def test_cell_end_follows_the_statements(self):
        # notebook.ends_cell finds the cell's end after its last statement
        # (comments between), not after an earlier one.
        src = run("x = 1\ny = 2  # two\n# done")["source"]
        self.assertTrue(src.endswith("# done" + END), src)
        with tempfile.TemporaryDirectory() as d:
            name = os.path.join(d, "ripple_cells.py")
            with open(name, "w") as f:
                f.write(src + run("z = 3")["source"])
            linecache.checkcache(name)
            self.assertFalse(notebook.ends_cell(name, 1))
            self.assertTrue(notebook.ends_cell(name, 2))
            self.assertTrue(name.endswith(notebook.JUPYTER_SCRIPT))

    def test_multiline_and_non_ascii_expression(self):
        src = "s = 'é'\n(s +\n 'ü')  # comment"
        self.assertEqual(run(src)["source"], src + END)
        self.assertEqual(run("a = 1; 'é' * a")["source"], "a = 1; 'é' * a" + END)

    def test_syntax_error(self):
        err = run("def f(:\n  pass")["error"]
        self.assertEqual(err["ename"], "SyntaxError")
        self.assertEqual(err["traceback"][0], '  File "<cell>", line 1')
        self.assertTrue(err["traceback"][-1].startswith("SyntaxError: "))

    @unittest.skipUnless(importlib.util.find_spec("IPython"), "IPython is not installed (Debian's python3-ipython)")
    def test_ipython_syntax(self):
        src = run("!echo hi\n%time x = 1\nx")["source"]
        self.assertIn("get_ipython().system('echo hi')", src)
        self.assertIn("get_ipython().run_line_magic('time', 'x = 1')", src)
        self.assertTrue(src.endswith("\nx" + END))
        self.assertEqual(run("%time x = 1")["parsed"], "get_ipython().run_line_magic('time', 'x = 1')\n")
        # An assigned shell escape or magic, also indented (in a def).
        src = run("def f():\n    listing = !ls\n    a, b = %time 1\n    return listing")["source"]
        self.assertIn("listing = get_ipython().getoutput('ls')", src)
        self.assertIn("a, b = get_ipython().run_line_magic('time', '1')", src)
        # Plain Python that only looks alike is left alone.
        self.assertEqual(run("x != 1\ns = '%d' % 1")["source"], "x != 1\ns = '%d' % 1" + END)

    def test_ipython_syntax_without_ipython_names_the_package(self):
        with mock.patch.dict(sys.modules, {"IPython": None, "IPython.core": None,
                                           "IPython.core.inputtransformer2": None}):
            err = run("%time 1")["error"]
        self.assertEqual(err["ename"], "ModuleNotFoundError")
        self.assertIn("python3-ipython", err["evalue"])
        # Plain Python does not need IPython.
        with mock.patch.dict(sys.modules, {"IPython.core.inputtransformer2": None}):
            self.assertEqual(run("1")["source"], "1" + END)

    def test_bad_params(self):
        with self.assertRaisesRegex(InvalidParams, "jupyterCell: code must be a string, got int"):
            jupyter_cells.cell({"code": 1})
        with self.assertRaisesRegex(InvalidParams, "jupyterCell: mode must be one of run, isComplete, begin, comm, "
                                                   "commInfo, expressions, finish, got 'x'"):
            jupyter_cells.cell({"code": "", "mode": "x"})
        with self.assertRaisesRegex(InvalidParams, "jupyterCell begin: count must be an int"):
            jupyter_cells.cell({"mode": "begin", "count": "1", "code": ""})
        with self.assertRaisesRegex(InvalidParams, "jupyterCell expressions: expressions must be an object"):
            jupyter_cells.cell({"mode": "expressions", "context": "c", "expressions": ["x"]})
        with self.assertRaisesRegex(InvalidParams, "jupyterCell comm: type must be one of comm_open, comm_msg, comm_close"):
            jupyter_cells.cell({"mode": "comm", "type": "comm_oops", "content": {}})


class IsComplete(unittest.TestCase):
    SAMPLES = [("1", "complete"), ("print('hello')", "complete"), ("def f(x):\n  return x*2\n\n\n", "complete"),
               ("print('''hello", "incomplete"), ("def f(x):\n  x*2", "incomplete"), ("import = 7q", "invalid")]

    def check(self):
        for code, want in self.SAMPLES:
            with self.subTest(code=code):
                self.assertEqual(jupyter_cells.cell({"code": code, "mode": "isComplete"})["status"], want)

    def test_codeop(self):
        with mock.patch.dict(sys.modules, {"IPython.core.inputtransformer2": None}):
            self.check()
            self.assertEqual(jupyter_cells.cell({"code": "if x:", "mode": "isComplete"}),
                             {"status": "incomplete", "indent": "    "})

    @unittest.skipUnless(importlib.util.find_spec("IPython"), "IPython is not installed (Debian's python3-ipython)")
    def test_ipython(self):
        self.check()


if __name__ == "__main__":
    unittest.main()
