"""Project modules: finder, reload graph, fresh objects, broken modules, versions."""

import random
import sys
import unittest

from enginetest import EngineTestCase, main_stack


def ok_names(result):
    return [m["name"] for m in result["modules"] if m["ok"]]


class Modules(EngineTestCase):
    def test_import_forms_and_relative_imports(self):
        s = self.session()
        s.write("pkg/__init__.py", "BASE = 10\n")
        s.write("pkg/util.py", "from . import BASE\n\ndef inc(v):\n    return v + BASE\n")
        s.write("pkg/sub/__init__.py", "")
        s.write("pkg/sub/deep.py", "from ..util import inc\n\ndef twice(v):\n    return inc(inc(v))\n")
        main = (
            "import pkg.util\nfrom pkg import util as u2\nfrom pkg.sub import deep\n\n"
            "def main():\n    a = pkg.util.inc(1)\n    b = u2.inc(2)\n    c = deep.twice(3)\n"
        )
        result = s.compile({"main": main})
        self.assertEqual(result["modules"], [{"name": "main", "path": "main.py", "ok": True}])
        run = s.run()
        self.assertEqual(run.values(), {"main:main/a": "11", "main:main/b": "12", "main:main/c": "23"})
        # Modules never sent were read from disk and are project modules now.
        self.assertEqual(s.engine.status({})["modules"]["pkg.sub.deep"], "ok")
        # An unsaved change of pkg/util.py (sent, not on disk) is what runs.
        s.compile({"pkg.util": "from . import BASE\n\ndef inc(v):\n    return v + BASE * 2\n"})
        run = s.run()
        self.assertEqual(run.values(), {"main:main/a": "21", "main:main/b": "22", "main:main/c": "43"})

    def test_reload_order_and_fresh_objects(self):
        s = self.session()
        files = {
            "base": "class Box:\n    pass\n\nSTATE = []\n",
            "mid": "import base\n\ndef make():\n    return base.Box()\n",
            "top": "from mid import make\nimport base\n\ndef main():\n    b = make()\n    ok = isinstance(b, base.Box)\n",
            "other": "X = 1\n",
        }
        s.compile(files)
        old_base = sys.modules["base"]
        old_base.STATE.append("stale")
        result = s.compile({"base": files["base"] + "\nY = 2\n"})
        self.assertEqual(result["reloaded"], ["base", "mid", "top"])
        self.assertIsNot(sys.modules["base"], old_base)
        self.assertEqual(sys.modules["base"].STATE, [])
        self.assertIs(sys.modules["mid"].base, sys.modules["base"])
        run = s.run(main_stack("top"))
        self.assertEqual(run.values()["top:main/ok"], "True")

    def test_broken_module_and_importers(self):
        s = self.session()
        s.compile({"lib": "def f():\n    return 1\n", "app": "import lib\n\ndef main():\n    v = lib.f()\n"})
        result = s.compile({"lib": "def f(:\n    return 1\n"})
        by_name = {m["name"]: m for m in result["modules"]}
        self.assertFalse(by_name["lib"]["ok"])
        self.assertEqual(by_name["lib"]["diagnostic"]["location"]["start"]["line"], 0)
        self.assertFalse(by_name["app"]["ok"])
        diag = by_name["app"]["diagnostic"]
        self.assertIn("lib", diag["message"])
        # PROTOCOL.md 5.1: reported at the imported module's own file and
        # line, the import chain (app's import line) as the stack.
        self.assertEqual(diag["path"], "lib.py")
        self.assertEqual(diag["location"]["start"]["line"], 0)
        self.assertIn({"path": "app.py", "line": 0}, [{"path": f["path"], "line": f["location"]["start"]["line"]} for f in diag["stack"]])
        self.assertNotIn("lib", sys.modules)
        with self.assertRaises(ImportError):
            __import__("lib")
        run = s.run(main_stack("app"))
        self.assertEqual(run.result["result"]["kind"], "compileError")
        self.assertEqual(s.engine.status({})["modules"], {"app": "broken", "lib": "broken"})
        result = s.compile({"lib": "def f():\n    return 2\n"})
        self.assertEqual(ok_names(result), ["lib", "app"])
        self.assertEqual(s.run(main_stack("app")).values(), {"app:main/v": "2"})

    def lazy_compile(self, s, files, load=(), faulty=None, timeout=0):
        mods = [{"name": n, "path": n.replace(".", "/") + ".py", "source": t} for n, t in files.items()]
        return s.engine.compile({"modules": mods, "removed": [], "load": list(load), "faulty": faulty or {},
                                 "timeout": timeout, "lazy": True})

    def test_lazy_compile_imports_only_what_is_needed(self):
        s = self.session()
        marks = []
        sys.modules["_ripple_test_marks"] = type(sys)("_ripple_test_marks")
        sys.modules["_ripple_test_marks"].marks = marks
        self.addCleanup(sys.modules.pop, "_ripple_test_marks", None)
        mark = "import _ripple_test_marks\n_ripple_test_marks.marks.append(__name__)\n"
        result = self.lazy_compile(s, {"unused": mark, "app": mark + "def main():\n    v = 1\n"})
        self.assertEqual(marks, [])
        self.assertEqual(result["modules"], [])
        result = self.lazy_compile(s, {}, load=["app"])
        self.assertEqual(marks, ["app"])
        self.assertEqual(ok_names(result), ["app"])
        # A change of a module no context needs still imports nothing; a
        # change of one in service reloads it.
        self.lazy_compile(s, {"unused": mark + "X = 2\n", "app": mark + "def main():\n    v = 2\n"})
        self.assertEqual(marks, ["app", "app"])
        self.assertNotIn("unused", sys.modules)
        self.assertEqual(s.run(main_stack("app")).values(), {"app:main/v": "2"})

    def test_hanging_top_level_is_cut_at_the_timeout(self):
        s = self.session()
        hang = "import time\nwhile True:\n    time.sleep(0.01)\n"
        result = self.lazy_compile(s, {"slow": hang, "app": "import slow\n\ndef main():\n    v = 1\n"}, load=["app"], timeout=0.3)
        by_name = {m["name"]: m for m in result["modules"]}
        self.assertFalse(by_name["slow"]["ok"])
        self.assertIn("compile timeout", by_name["slow"]["diagnostic"]["message"])
        self.assertEqual(by_name["slow"]["diagnostic"]["path"], "slow.py")
        self.assertFalse(by_name["app"]["ok"])
        self.assertEqual(by_name["app"]["diagnostic"]["path"], "slow.py")
        self.assertTrue(by_name["slow"].get("timedOut"))
        self.assertFalse(by_name["app"].get("timedOut"))
        loads = [(e["module"], e["phase"]) for e in s.kernel.events if e.get("type") == "load"]
        self.assertEqual(loads, [("app", "start"), ("slow", "start"), ("slow", "end"), ("app", "end")])
        # Fixed, the module and its importer load again.
        result = self.lazy_compile(s, {"slow": "V = 3\n"}, timeout=0.3)
        self.assertEqual(sorted(ok_names(result)), ["app", "slow"])

    def test_a_timeout_swallowed_by_the_code_fires_again(self):
        s = self.session()
        stubborn = "import time\nwhile True:\n    try:\n        time.sleep(0.01)\n    except BaseException:\n        break\nwhile True:\n    time.sleep(0.01)\n"
        result = self.lazy_compile(s, {"stubborn": stubborn}, load=["stubborn"], timeout=0.2)
        self.assertIn("compile timeout", result["modules"][0]["diagnostic"]["message"])

    def test_faulty_module_is_not_imported_until_it_changes(self):
        s = self.session()
        diag = {"kind": "Error", "message": "importing bad killed the kernel (exit status 7)", "path": "bad.py", "stack": []}
        files = {"bad": "import os\nos._exit(7)\n", "app": "import bad\n\ndef main():\n    v = 1\n"}
        result = self.lazy_compile(s, files, load=["app"], faulty={"bad": diag})
        by_name = {m["name"]: m for m in result["modules"]}
        self.assertEqual(by_name["bad"]["diagnostic"], diag)
        self.assertEqual(by_name["app"]["diagnostic"]["path"], "bad.py")
        self.assertIn("killed the kernel", by_name["app"]["diagnostic"]["message"])
        run = s.run(main_stack("app"))
        self.assertEqual(run.result["result"]["kind"], "compileError")
        result = self.lazy_compile(s, {"bad": "V = 1\n"})
        self.assertEqual(sorted(ok_names(result)), ["app", "bad"])

    def test_stop_at_a_statement_boundary(self):
        s = self.session()
        s.compile({"app": "def main():\n    a = 1\n    b = a + 1\n    c = b + 1\n"})
        s.kernel.stop_after = 0  # stop after the first statement
        run = s.run(main_stack("app"))
        self.assertEqual(run.result["status"], "failed")
        self.assertEqual(run.result["result"]["kind"], "stopped")
        self.assertEqual(run.values().get("app:main/a"), "1")
        self.assertNotIn("app:main/b", {k for k, v in run.values().items() if v == "2"})
        # The next run goes on from there: a is served from the cache.
        s.kernel.stop_after = None
        run = s.run(main_stack("app"))
        self.assertEqual(run.values().get("app:main/c"), "3")
        self.assertEqual(run.values().get("app:main/b"), "2")
        self.assertNotIn("app:main/a", run.computed())

    def test_load_time_exception(self):
        s = self.session()
        result = s.compile({"boom": "x = 1\ny = [][3]\n"})
        [entry] = result["modules"]
        self.assertFalse(entry["ok"])
        diag = entry["diagnostic"]
        self.assertEqual(diag["message"], "IndexError: list index out of range")
        self.assertEqual(diag["location"]["start"], {"line": 1, "character": 4})
        self.assertEqual(diag["stack"][-1]["path"], "boom.py")

    def test_removed_module(self):
        s = self.session()
        s.compile({"gone": "V = 1\n", "user": "import gone\n\ndef main():\n    v = gone.V\n"})
        result = s.compile({}, removed=["gone"])
        self.assertEqual([(m["name"], m["ok"]) for m in result["modules"]], [("user", False)])
        self.assertNotIn("gone", sys.modules)

    def test_bad_compile_requests(self):
        s = self.session()
        bad = [
            ({"modules": [{"name": "a-b", "path": "a-b.py", "source": ""}]}, "module name 'a-b'"),
            ({"modules": [{"name": "a", "path": "../a.py", "source": ""}]}, "must stay inside the project root"),
            ({"modules": [{"name": "a", "path": "/abs/a.py", "source": ""}]}, "relative POSIX path"),
            ({"modules": [{"name": "a", "path": "b.py", "source": ""}]}, "does not match its path"),
            ({"modules": [{"name": "a", "path": "a.py", "source": 3}]}, "source must be a string"),
            ({"modules": "main"}, "modules must be a list"),
            ({"removed": [1]}, "removed module name 1"),
        ]
        for params, message in bad:
            with self.subTest(params=params):
                with self.assertRaises(ValueError) as ctx:
                    s.engine.compile(params)
                self.assertIn(message, str(ctx.exception))
        # The engine keeps working after bad requests.
        self.assertEqual(ok_names(s.compile({"a": "A = 1\n"})), ["a"])


class Versions(EngineTestCase):
    def test_helper_edit_reruns_only_its_readers(self):
        helpers = "K = 2\n\ndef foo(a):\n    return a * K\n\ndef bar(a):\n    return a + 1\n"
        main = "from helpers import foo, bar\nimport helpers\n\ndef main():\n    x = 1\n    y = foo(x)\n    z = bar(x)\n    w = helpers.bar(2)\n"
        s = self.session({"helpers": helpers, "main": main})
        s.run()
        # K is read by foo: foo's version changes, bar's does not, but the
        # module as a whole (read through `helpers.`) changes.
        s.compile({"helpers": helpers.replace("K = 2", "K = 3")})
        run = s.run()
        self.assertEqual(run.computed(), ["main:main/y", "main:main/w"])
        self.assertEqual(run.values()["main:main/y"], "3")
        # A comment or blank lines change nothing.
        s.compile({"helpers": "# note\n" + helpers.replace("K = 2", "K = 3") + "\n\n"})
        self.assertEqual(s.run().computed(), [])
        # Mutual recursion: editing one member changes both.
        rec = "def even(n):\n    return n == 0 or odd(n - 1)\n\ndef odd(n):\n    return n != 0 and even(n - 1)\n"
        s.compile({"helpers": rec + "def foo(a):\n    return a\n\ndef bar(a):\n    return a\n"})
        s.compile({"main": "from helpers import even\n\ndef main():\n    e = even(4)\n"})
        self.assertEqual(s.run().values(), {"main:main/e": "True"})
        s.compile({"helpers": rec.replace("n != 0 and", "n != 1 and") + "def foo(a):\n    return a\n\ndef bar(a):\n    return a\n"})
        run = s.run()
        self.assertEqual(run.computed(), ["main:main/e"])

    def test_versions_per_module_do_not_depend_on_what_was_computed_before(self):
        # Versions are computed per requested module (its import closure),
        # reusing the modules computed before: every request order gives
        # the versions each module has when computed alone, through import
        # cycles, star imports, packages and from-imports, before and after
        # an edit.
        s = self.session()
        s.write("pkg/__init__.py", "BASE = 10\n")
        s.write("pkg/util.py", "from . import BASE\nfrom c import W\n\ndef inc(v):\n    return v + BASE + W\n")
        files = {
            "a": "import b\nX = 1\nY = X + 1\n\ndef f():\n    return b.g() + b.Z\n",
            "b": "import a\nZ = 2\n\ndef g():\n    return a.X\n",
            "c": "from a import *\nfrom b import g as gg\nW = X + 1\n",
            "d": "import pkg.util\nQ = pkg.util.inc(1)\nCONFIG = []\nCONFIG.append(Q)\n",
            "e": "from d import Q, CONFIG\nfrom pkg import util\nR = [Q]\n\ndef h():\n    return util.inc(R[0])\n",
            "lone": "V = 5\n",
        }
        s.compile(files)
        table = s.engine.modules
        names = sorted(n for n, r in table.records.items() if r.state == "ok")
        self.assertEqual(names, ["a", "b", "c", "d", "e", "lone", "pkg", "pkg.util"])

        def alone():
            out = {}
            for m in names:
                table.globals.invalidate()
                out[m] = (dict(table.versions(m)), table.module_hash(m))
            return out

        rng = random.Random(7)
        seen = []
        for edit in (None, ("b", "import a\nZ = 3\n\ndef g():\n    return a.X\n")):
            if edit:
                s.compile({edit[0]: edit[1]})
            want = alone()
            seen.append(want)
            for _ in range(10):
                order = names[:]
                rng.shuffle(order)
                table.globals.invalidate()
                for m in order:
                    self.assertEqual((dict(table.versions(m)), table.module_hash(m)), want[m], (m, order))
        # The edit of b changed the module hash of every module with a name
        # that reaches b's names (c through gg), and no other (pkg.util
        # imports c's W, which does not reach b).
        before, after = seen
        changed = sorted(m for m in names if before[m][1] != after[m][1])
        self.assertEqual(changed, ["a", "b", "c"])
        self.assertEqual(before["lone"], after["lone"])


if __name__ == "__main__":
    unittest.main()
