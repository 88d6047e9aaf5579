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


class IPythonVariables(unittest.TestCase):
    """jupyter_shell.History: In, Out and _ as IPython keeps them."""

    def test_inputs_and_results(self):
        import builtins

        from ripple_kernel import jupyter_shell

        saved = {n: getattr(builtins, n) for n in dir(builtins)}
        try:
            h = jupyter_shell.History()
            h.install()
            self.assertEqual((builtins.In, builtins.Out, builtins._, builtins._i), ([""], {}, "", ""))
            h.begin(1, "1 + 1\n", "1 + 1\n")
            h.results["s1"] = 2
            h.finish(1, "s1")
            h.begin(2, "%time x = 1", "get_ipython().run_line_magic('time', 'x = 1')")
            h.finish(2, None)  # no result: _ stays
            h.begin(3, "'a'", "'a'")
            h.results["s3"] = "a"
            h.finish(3, "s3")
            h.finish(4, "unknown")  # a statement the kernel did not see show: nothing
            self.assertEqual(builtins.In, ["", "1 + 1", "get_ipython().run_line_magic('time', 'x = 1')", "'a'"])
            self.assertEqual(builtins.Out, {1: 2, 3: "a"})
            self.assertIs(builtins._oh, builtins.Out)
            self.assertEqual((builtins._, builtins.__, builtins.___), ("a", 2, ""))
            self.assertEqual((builtins._i, builtins._ii, builtins._iii), ("%time x = 1", "1 + 1", ""))
            self.assertEqual((getattr(builtins, "_1"), getattr(builtins, "_3"), getattr(builtins, "_i2")), (2, "a", "%time x = 1"))
            # Out keeps the last results, as IPython's cache_size does.
            with mock.patch.object(jupyter_shell, "CACHE_SIZE", 3):
                for n in (5, 6, 7):
                    h.results["s%d" % n] = n
                    h.finish(n, "s%d" % n)
            self.assertEqual(sorted(builtins.Out), [5, 6, 7])
            self.assertFalse(hasattr(builtins, "_1"))
            # The run mode sets In for a cell that counts.
            with mock.patch.object(jupyter_cells.jupyter_shell, "HISTORY", h):
                jupyter_cells.cell({"code": "y = 1\n", "count": 4})
            self.assertEqual(builtins.In[4], "y = 1")
        finally:
            for n in set(dir(builtins)) - set(saved):
                delattr(builtins, n)
            for n, v in saved.items():
                setattr(builtins, n, v)


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
