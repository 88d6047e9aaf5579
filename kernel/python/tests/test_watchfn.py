"""ripple_kernel/watchfn.py: the diff of a saved module against the imported one
(what --watch's hot path may patch, and why not), the patch in place, and
the recorder's units and contexts."""

import importlib
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ripple_kernel import hotpatch, watchfn as wf  # noqa: E402

LIB = '''import functools

K = 2


def plain(x):
    """Doc."""
    return x * K


def deco(f):
    @functools.wraps(f)
    def wrapper(*a):
        return f(*a)
    return wrapper


@deco
def wrapped(x):
    return x + 1


class C:
    def m(self):
        return 1

    @classmethod
    def c(cls):
        return 2

    @property
    def p(self):
        return 3

    def s(self):
        return super().__repr__() is not None


@functools.lru_cache(maxsize=None)
def cached(x):
    return plain(x)


def outer():
    def inner():
        return 1
    return inner


keep = outer()
'''


class Patch(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        self.name = "wflib_%d" % id(self)
        self.path = os.path.join(self.root, self.name + ".py")
        with open(self.path, "w") as f:
            f.write(LIB)
        sys.path.insert(0, self.root)
        self.addCleanup(sys.path.remove, self.root)
        self.mod = importlib.import_module(self.name)
        self.addCleanup(sys.modules.pop, self.name, None)
        self.rec = wf.Recorder(self.root)
        self.rec.snapshot(float("inf"))
        self.rel = self.name + ".py"

    def patch(self, old, new):
        text = LIB.replace(old, new, 1)
        self.assertNotEqual(text, LIB, old)
        files = [(self.rel, text)]
        patches, changed, moved = self.rec.plan(files)
        self.rec.apply(files, patches)
        return changed, moved

    def fallback(self, old, new):
        text = LIB.replace(old, new, 1)
        with self.assertRaises(wf.Fallback) as cm:
            self.rec.plan([(self.rel, text)])
        return str(cm.exception)

    def test_body(self):
        changed, moved = self.patch("return x * K", "return x * K + 1")
        self.assertEqual(changed, [self.rel + "::plain"])
        self.assertEqual(moved, [])
        self.assertEqual(self.mod.plain(1), 3)

    def test_docstring(self):
        self.patch('"""Doc."""', '"""New doc."""')
        self.assertEqual(self.mod.plain.__doc__, "New doc.")

    def test_wrapped_method_classmethod_property_super(self):
        self.patch("return x + 1", "return x + 2")
        self.assertEqual(self.mod.wrapped(1), 3)
        self.patch("return 1\n\n    @classmethod", "return 10\n\n    @classmethod")
        self.assertEqual(self.mod.C().m(), 10)
        self.patch("return 2", "return 20")
        self.assertEqual(self.mod.C.c(), 20)
        self.patch("return 3", "return 30")
        self.assertEqual(self.mod.C().p, 30)
        self.patch("is not None", "is None")
        self.assertFalse(self.mod.C().s())

    def test_moved(self):
        changed, moved = self.patch("K = 2\n", "K = 2\n\n\n")
        self.assertEqual(changed, [], "blank lines at module level are no change")
        self.assertIn(self.rel + "::plain", moved)
        self.assertEqual(self.mod.plain.__code__.co_firstlineno, 8)

    def test_one_edit_in_a_body(self):
        # The fast path: only plain's new text is parsed; what follows it
        # moves by a line.
        old_m = self.mod.C.m.__code__.co_firstlineno
        units = hotpatch.Units(wf.ast.parse(LIB))
        new = LIB.replace("return x * K", "y = 1\n    return x * K + y", 1)
        self.assertIsNotNone(hotpatch.edit_in_body(units, LIB, new, self.path))
        changed, moved = self.patch("return x * K", "y = 1\n    return x * K + y")
        self.assertEqual(changed, [self.rel + "::plain"])
        self.assertIn(self.rel + "::C.m", moved)
        self.assertEqual(self.mod.plain(1), 3)
        self.assertEqual(self.mod.C.m.__code__.co_firstlineno, old_m + 1)
        self.assertEqual(self.mod.C().m(), 1)
        # A second edit is diffed against the first.
        text = new.replace("return 1\n\n    @classmethod", "return 7\n\n    @classmethod")
        patches, changed, moved = self.rec.plan([(self.rel, text)])
        self.rec.apply([(self.rel, text)], patches)
        self.assertEqual(changed, [self.rel + "::C.m"])
        self.assertEqual((self.mod.C().m(), self.mod.plain(1)), (7, 3))
        # An edit that reaches the def line is not the fast path.
        self.assertIsNone(hotpatch.edit_in_body(units, LIB, LIB.replace("def plain(x):", "def plain(x):  # c"), self.path))

    def test_nested_closure_made_before(self):
        self.patch("return 1\n    return inner", "return 5\n    return inner")
        self.assertEqual(self.mod.outer()(), 5)
        self.assertEqual(self.mod.keep(), 5, "the closure made at import was not patched")

    def test_fallbacks(self):
        for old, new, why in [
            ("K = 2", "K = 3", "module-level"),
            ("@deco\n", "", "decorator"),
            ("def plain(x):", "def plain(x, y=1):", "signature"),
            ("return x * K", "return x *", None),
        ]:
            with self.subTest(old=old):
                if why is None:
                    with self.assertRaises(SyntaxError):
                        self.rec.plan([(self.rel, LIB.replace(old, new, 1))])
                    continue
                self.assertIn(why, self.fallback(old, new))

    def test_module_not_imported(self):
        # Nothing to patch here: the kernel imports the saved source when
        # a test needs it; unless a test it ran reached it before.
        self.assertEqual(self.rec.plan([("other.py", "x = 1\n")]), ([], [], []))
        self.rec.by_unit["other.py::f"] = {"test_x.py::test_f"}
        with self.assertRaises(wf.Fallback):
            self.rec.plan([("other.py", "x = 1\n")])

    def test_tainted_units(self):
        self.rec.import_units.add(self.rel + "::plain")
        self.assertIn("imported", self.fallback("return x * K", "return x * K + 1"))

    def test_cached_functions_found(self):
        codes = set()
        wf._cached_functions(self.mod, codes)
        self.assertEqual({c.co_name for c in codes}, {"cached"})


class Record(unittest.TestCase):
    """The recorder (settrace on 3.11, sys.monitoring on 3.12+): a test's
    own calls, a wider fixture's, those under a cache and at import."""

    def test_contexts(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        files = {
            "recmod.py": "import functools\n\n\ndef f():\n    return g()\n\n\ndef g():\n    return 1\n\n\n"
                         "def h():\n    return 2\n\n\n@functools.lru_cache(maxsize=None)\ndef c(x):\n    return k()\n\n\n"
                         "def k():\n    return 3\n",
            "recimp.py": "import recmod\n\nVALUE = recmod.h() + recmod.g()\n",
        }
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as fh:
                fh.write(text)
        sys.path.insert(0, root)
        self.addCleanup(sys.path.remove, root)
        for m in ("recmod", "recimp"):
            self.addCleanup(sys.modules.pop, m, None)
        mod = importlib.import_module("recmod")
        rec = wf.Recorder(root)
        rec.snapshot(float("inf"))
        rec.start()
        try:
            rec.collecting(False)
            rec.begin_test("t1")
            mod.f()
            mod.c(1)
            rec.end_test()
            rec.begin_test("t2")
            mod.c(1)  # a cache hit: k is not reached
            importlib.import_module("recimp")
            rec.end_test()
            rec.wide(1)
            mod.h()
            rec.wide(-1)
        finally:
            rec.stop()
        rec._fold()
        self.assertEqual(rec.tests["t1"], {"recmod.py::f", "recmod.py::g"})
        self.assertEqual(rec.tests["t2"], set())
        self.assertEqual(rec.affected(["recmod.py::g"]), {"t1"})
        self.assertEqual(rec.cached_units, {"recmod.py::c", "recmod.py::k"})
        self.assertEqual(rec.import_units, {"recimp.py::<module>", "recmod.py::h", "recmod.py::g"})
        self.assertEqual(rec.wide_units, {"recmod.py::h"})
        self.assertEqual(rec.untraced, set())


if __name__ == "__main__":
    unittest.main()
