"""get_ipython() of notebooks run as scripts (ripple_kernel.notebook)."""

import sys
import unittest

from enginetest import engine_module

engine_module()  # installs the package's loader
from ripple_kernel import notebook  # noqa: E402


def has_ipython():
    import importlib.util

    return importlib.util.find_spec("IPython") is not None


class WithoutIPython(unittest.TestCase):
    def setUp(self):
        self.saved = dict(notebook._SHELLS)
        notebook._SHELLS.clear()
        self.hidden = {k: sys.modules[k] for k in list(sys.modules) if k == "IPython" or k.startswith("IPython.")}
        for k in self.hidden:
            del sys.modules[k]
        sys.modules["IPython"] = None  # import IPython raises ImportError

    def tearDown(self):
        del sys.modules["IPython"]
        sys.modules.update(self.hidden)
        notebook._SHELLS.clear()
        notebook._SHELLS.update(self.saved)

    def test_names_the_missing_package(self):
        with self.assertRaises(notebook.IPythonMissing) as cm:
            notebook.get_ipython({}).run_line_magic("time", "1")
        msg = str(cm.exception)
        self.assertIn("need IPython", msg)
        self.assertIn(sys.executable, msg)
        self.assertIn("python3-ipython", msg)
        self.assertIsInstance(cm.exception, ModuleNotFoundError)


@unittest.skipUnless(has_ipython(), "IPython is not installed in this interpreter")
class WithIPython(unittest.TestCase):
    def test_magics_run_in_the_given_namespace(self):
        ns = {"n": 4}
        ip = notebook.get_ipython(ns)
        self.assertIsNone(ip.run_line_magic("matplotlib", "inline"))
        self.assertEqual(ip.getoutput("echo {n}"), ["4"])
        exec("get_ipython().run_line_magic('time', 'm = n + 1')", {"get_ipython": lambda: ip, **ns}, ns)
        self.assertEqual(ns["m"], 5)
        ip.run_cell_magic("capture", "out", "print('x')\n")
        self.assertEqual(ns["out"].stdout, "x\n")

    def test_shell_lines_expand_the_callers_locals_once(self):
        ns = {"n": 4}
        ip = notebook.get_ipython(ns)

        def in_a_function():
            word, code = "local", 3
            ip.system("exit {code}")
            out = ip.getoutput("echo {word} {n} {{n}} $word")
            return out, (word, code)  # the locals: read by var_expand through the frame

        self.assertEqual(in_a_function()[0], ["local 4 {n} local"])
        self.assertEqual(ns["_exit_code"], 3)  # IPython's system wrote it in the bound namespace

    def test_displays_of_the_shell_show_under_the_statement(self):
        from ripple_kernel import display

        class Shows:
            def __init__(self):
                self.bundles = []

            def display(self, *objs, mimes=None):
                self.bundles.extend({"text/plain": repr(o)} for o in objs)

            def display_bundle(self, bundle):
                self.bundles.append(bundle)

        shows = Shows()
        backend = display.install(shows)
        try:
            ip = notebook.get_ipython({})
            ip.display_pub.publish({"text/plain": "published"})
            ip.display_pub.clear_output(wait=True)
            ip.run_line_magic("matplotlib", "inline")  # nothing, not even a display
        finally:
            display.uninstall(backend)
        self.assertEqual(shows.bundles, [{"text/plain": "published"}, {display.CLEAR_MIME: {"wait": True}}])

    def test_shell_is_not_ipythons_singleton(self):
        from IPython.core.interactiveshell import InteractiveShell

        notebook.get_ipython({}).run_line_magic("time", "1")
        self.assertFalse(InteractiveShell.initialized())



class CellEnd(unittest.TestCase):
    def test_a_statement_ends_its_cell_before_the_next_separator(self):
        import linecache

        name = "/nonexistent/nb.ipynb"
        src = "# %% [cell 1]\nx = 1\ny = 2\n# trailing comment\n\n# %% [cell 2] markdown\n# text\n# %% [cell 3]\nz = 3\n"
        lines = src.splitlines(True)
        linecache.cache[name] = (len(src), None, lines, name)
        try:
            self.assertFalse(notebook.ends_cell(name, 2))  # x = 1: y follows
            self.assertTrue(notebook.ends_cell(name, 3))  # y = 2: comments, then a separator
            self.assertTrue(notebook.ends_cell(name, 9))  # z = 3: the end
        finally:
            del linecache.cache[name]


if __name__ == "__main__":
    unittest.main()
