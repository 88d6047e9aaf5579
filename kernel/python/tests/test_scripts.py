"""Scripts as frames (PROTOCOL.md 7.1): module:__main__ runs a module's top
level as a script, statement by statement, with 5.3's caching."""

import unittest

from enginetest import EngineTestCase, main_stack, path_of


def script_stack(module="main"):
    return main_stack(module=module, name="__main__")


class Scripts(EngineTestCase):
    def session_of(self, files, scripts=("main",)):
        s = self.session(files, compile_files=False)
        s.files.update(files)
        s.engine.compile({
            "modules": [{"name": n, "path": path_of(n), "source": t} for n, t in files.items()],
            "removed": [],
            "scripts": list(scripts),
        })
        return s

    def recompile(self, s, files, scripts=("main",)):
        s.files.update(files)
        s.engine.compile({
            "modules": [{"name": n, "path": path_of(n), "source": t} for n, t in files.items()],
            "removed": [],
            "scripts": list(scripts),
        })

    def test_labels_values_and_main_guard(self):
        text = (
            "import os.path\n"
            "import json as j\n"
            "from helper import double, triple\n"
            "def f(v):\n    return v + 1\n"
            "class C:\n    pass\n"
            "x = f(1)\n"
            "print('hello', x)\n"
            "if __name__ == '__main__':\n    y = double(x)\n"
        )
        s = self.session_of({"main": text, "helper": "def double(v):\n    return 2 * v\n\ndef triple(v):\n    return 3 * v\n"})
        run = s.run(script_stack())
        self.assertEqual(run.result, {"status": "complete"})
        values = run.values()
        self.assertEqual(
            list(values),
            ["main:__main__/" + k for k in ("os", "j", "double,triple", "f", "C", "x", "#1", "#2")],
        )
        self.assertEqual(values["main:__main__/x"], "2")
        self.assertIn("hello 2", run.output)
        # The script ran as a script, not as the module: never imported.
        self.assertNotIn("main", __import__("sys").modules)
        self.assertEqual(s.engine.modules.records["main"].module, None)

    def test_second_run_is_cached_and_an_edit_reruns_its_dependents(self):
        lines = ["a = 1", "b = 2", "def f(v):\n    return v * k", "k = 10", "c = f(a)", "d = b + 1", "print('d', d)"]
        s = self.session_of({"main": "\n".join(lines) + "\n"})
        first = s.run(script_stack())
        self.assertEqual(len(first.computed()), 7)
        again = s.run(script_stack())
        self.assertEqual(again.computed(), [])
        self.assertEqual(again.output, "")  # cached statements do not print again
        # Editing k re-runs k and c (f reads k when c calls it), not d.
        lines[3] = "k = 100"
        self.recompile(s, {"main": "\n".join(lines) + "\n"})
        edit = s.run(script_stack())
        self.assertEqual(edit.computed(), ["main:__main__/k", "main:__main__/c"])
        self.assertEqual(s.view()["main:__main__/c"], "100")
        self.assertEqual(s.view()["main:__main__/d"], "3")
        # Editing f's body re-runs f's definition and its callers.
        lines[2] = "def f(v):\n    return v * k + 1"
        self.recompile(s, {"main": "\n".join(lines) + "\n"})
        edit = s.run(script_stack())
        self.assertEqual(edit.computed(), ["main:__main__/f", "main:__main__/c"])
        self.assertEqual(s.view()["main:__main__/c"], "101")

    def test_edit_of_an_imported_module_reruns_the_import_and_its_readers(self):
        s = self.session_of({
            "main": "from helper import rate\nimport other\nx = rate(2)\ny = other.K\n",
            "helper": "def rate(v):\n    return v * 3\n",
            "other": "K = 5\n",
        })
        s.run(script_stack())
        self.assertEqual(s.view()["main:__main__/x"], "6")
        self.assertEqual(s.run(script_stack()).computed(), [])
        self.recompile(s, {"helper": "def rate(v):\n    return v * 4\n"})
        run = s.run(script_stack())
        self.assertEqual(run.computed(), ["main:__main__/rate", "main:__main__/x"])
        self.assertEqual(s.view()["main:__main__/x"], "8")
        self.assertEqual(s.view()["main:__main__/y"], "5")

    def test_an_exception_ends_the_script(self):
        # As `python main.py` would (8.1): nothing after the raise runs,
        # the independent c included.
        s = self.session_of({"main": "a = 1 / 0\nb = a + 1\nc = print('c ran') or 3\n"})
        run = s.run(script_stack())
        values = run.values()
        self.assertEqual(values["main:__main__/a"][0], "Panic")
        self.assertEqual(values["main:__main__/b"], ("Pending", "not reached"))
        self.assertEqual(values["main:__main__/c"], ("Pending", "not reached"))
        self.assertEqual(run.reasons(), {"main:__main__/b": ("exception", "main:__main__/a"),
                                         "main:__main__/c": ("exception", "main:__main__/a")})
        self.assertEqual(run.output, "")

    def test_local_call_into_a_project_function_and_a_script_function(self):
        s = self.session_of({
            "main": "from shop import total\ndef twice(v):\n    w = v * 2\n    return w\nt = total([1, 2])\nu = twice(t)\n",
            "shop": "def total(xs):\n    s = sum(xs)\n    return s\n",
        })
        run = s.run(script_stack())
        updates = {u["expressionId"]: u for u in run.updates(0)}
        self.assertEqual(updates["main:__main__/t"]["methodCall"]["methodPointer"], {"module": "shop", "definedOnType": "", "name": "total"})
        self.assertEqual(updates["main:__main__/u"]["methodCall"]["methodPointer"], {"module": "main", "definedOnType": "", "name": "twice"})
        stack = script_stack() + [{"type": "LocalCall", "expressionId": "main:__main__/t"}]
        run = s.run(stack)
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.values(1), {"shop:total/s": "3", "shop:total/return": "3"})
        stack = script_stack() + [{"type": "LocalCall", "expressionId": "main:__main__/u"}]
        run = s.run(stack)
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.values(1), {"main:twice/w": "6", "main:twice/return": "6"})

    def test_script_namespace_is_its_own(self):
        s = self.session_of({"main": "import sys\nname = __name__\nargv0 = sys.argv[0]\nglobals()['late'] = 1\n"})
        s.run(script_stack())
        view = s.view()
        self.assertEqual(view["main:__main__/name"], "'__main__'")
        self.assertTrue(view["main:__main__/argv0"].endswith("main.py'"), view)

    def test_arguments_are_refused_and_syntax_errors_are_compile_errors(self):
        s = self.session_of({"main": "x = 1\n"})
        stack = script_stack()
        stack[0]["positionalArgumentsExpressions"] = ["1"]
        run = s.run(stack)
        self.assertEqual(run.result["status"], "failed")
        self.assertIn("takes no arguments", run.result["result"]["message"])
        s = self.session_of({"main": "x = (\n"})
        run = s.run(script_stack())
        self.assertEqual(run.result["result"]["kind"], "compileError")
        self.assertEqual(run.result["result"]["diagnostic"]["path"], "main.py")

    def test_a_script_imported_by_a_module_is_loaded(self):
        # main is a script for one context and imported by lib: it is loaded.
        s = self.session_of({"main": "X = 1\n", "lib": "import main\nY = main.X\n"})
        s.engine.modules.ensure("lib")
        self.recompile(s, {"main": "X = 2\n"})
        self.assertEqual(s.engine.modules.records["lib"].module.Y, 2)

    def test_a_script_no_longer_run_is_not_imported_by_the_next_compile(self):
        # The context ran stream:__main__, then moved to main:__main__: the
        # compile of main's edit must not import stream (its top level would
        # run again inside the compile, its output discarded, and the edit
        # would wait for all of it).
        s = self.session_of({"stream": "import sys\nsys.stream_runs = getattr(sys, 'stream_runs', 0) + 1\n",
                             "main": "value = 1\n"}, scripts=("stream", "main"))
        sys = __import__("sys")
        sys.stream_runs = 0
        try:
            s.run(script_stack("stream"))
            self.assertEqual(sys.stream_runs, 1)
            self.recompile(s, {"main": "value = 2\n"}, scripts=("main",))
            self.assertEqual(sys.stream_runs, 1)
            self.assertNotIn("stream", sys.modules)
            # Still a module when something needs it.
            s.engine.modules.ensure("stream")
            self.assertEqual(sys.stream_runs, 2)
        finally:
            del sys.stream_runs
            sys.modules.pop("stream", None)


if __name__ == "__main__":
    unittest.main()
