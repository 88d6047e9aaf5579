"""The invariant's causes of issue 27, each as a minimal edit sequence
checked against a fresh engine (in a forked child, as test_invariant does):
imports inside function bodies, `global` writers in scripts, module state
changed from the body, subscripts whose __getitem__ mutates; and the
from-scratch deviations (Python's own semantics on a first run)."""

import json
import os
import traceback
import unittest

from enginetest import EngineTestCase, Session, main_stack, path_of
from test_invariant import view_of


def compile_files(session, files, scripts):
    session.files.update(files)
    return session.engine.compile({
        "modules": [{"name": n, "path": path_of(n), "source": t} for n, t in files.items()],
        "removed": [],
        "scripts": list(scripts),
    })


def fresh_view(files, stack, scripts):
    """(result, top frame view) of a fresh engine over files, in a fork."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            os.close(read_fd)
            fresh = Session(compile_files=False)
            try:
                compile_files(fresh, files, scripts)
                run = fresh.run(stack)
                data = {"result": run.result, "view": view_of(fresh.latest.get(len(stack) - 1, {}))}
            finally:
                fresh.close()
            payload = json.dumps(data).encode()
        except BaseException:
            payload = json.dumps({"error": traceback.format_exc()}).encode()
            code = 1
        with os.fdopen(write_fd, "wb") as w:
            w.write(payload)
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as r:
        payload = r.read()
    os.waitpid(pid, 0)
    data = json.loads(payload.decode())
    if "error" in data:
        raise AssertionError("fresh reference failed:\n" + data["error"])
    return data["result"], data["view"]


class Differential(EngineTestCase):
    """steps: [(changed files, invalidate)]; after each, every value of
    the top frame equals a fresh engine's."""

    def check_steps(self, steps, scripts=(), stack=None):
        stack = stack or (main_stack(name="__main__") if scripts else main_stack())
        s = self.session(compile_files=False)
        files = {}
        for i, (changed, invalidate) in enumerate(steps):
            files.update(changed)
            if changed:
                compile_files(s, changed, scripts)
            run = s.run(stack, invalidate=invalidate)
            result, want = fresh_view(dict(files), stack, scripts)
            self.assertEqual(run.result, result, "step %d" % i)
            got = view_of(s.latest.get(len(stack) - 1, {}))
            for expression_id, value in sorted(want.items()):
                self.assertEqual(got.get(expression_id), value, "step %d, %s" % (i, expression_id))
        return s


K3, K4 = {"helpers": "K = 3\n"}, {"helpers": "K = 4\n"}


class ImportsInFunctions(Differential):
    def test_import_in_the_body(self):
        main = {"main": "def main():\n    import helpers\n    a = helpers.K * 2\n"}
        self.check_steps([({**K3, **main}, None), (K4, None)])

    def test_from_import_in_the_body(self):
        main = {"main": "def main():\n    from helpers import K\n    a = K * 2\n"}
        self.check_steps([({**K3, **main}, None), (K4, None)])

    def test_import_under_a_condition(self):
        main = {"main": "def main():\n    if True:\n        import helpers\n    a = helpers.K * 2\n"}
        self.check_steps([({**K3, **main}, None), (K4, None)])

    def test_import_in_a_helper_called_by_main(self):
        other = {"other": "def get():\n    import helpers\n    return helpers.K\n",
                 "main": "from other import get\n\n\ndef main():\n    a = get() * 2\n"}
        self.check_steps([({**K3, **other}, None), (K4, None)])

    def test_from_import_in_a_helper_called_by_main(self):
        other = {"other": "def get():\n    from helpers import K\n    return K\n",
                 "main": "import other\n\n\ndef main():\n    a = other.get() * 2\n"}
        self.check_steps([({**K3, **other}, None), (K4, None)])


SCRIPT = "x = 0\ndef f():\n    global x\n    x = 42\nf()\nr = x\n"


class ScriptGlobals(Differential):
    def test_editing_the_writer_reruns_its_readers(self):
        self.check_steps([({"main": SCRIPT}, None), ({"main": SCRIPT.replace("42", "43")}, None)], scripts=("main",))

    def test_editing_a_reader_sees_the_writers_value(self):
        edited = SCRIPT.replace("r = x", "r = x + 0")
        self.check_steps([({"main": SCRIPT}, None), ({"main": edited}, None)], scripts=("main",))

    def test_recompute_of_the_reader(self):
        s = self.check_steps([({"main": SCRIPT}, None), ({}, ["main:__main__/r"])], scripts=("main",))
        self.assertEqual(s.view()["main:__main__/r"], "42")


SET_Y = "import helpers\n\n\ndef main():\n    helpers.y = 8\n    x = helpers.y + 1\n"
LOG = "import helpers\n\n\ndef main():\n    helpers.LOG.append(1)\n    n = len(helpers.LOG)\n"
FROM_LOG = "from helpers import LOG\n\n\ndef main():\n    LOG.append(1)\n    n = len(LOG)\n"


class BodyModuleState(Differential):
    def test_deleting_the_assignment_of_a_module_global(self):
        files = {"helpers": "y = 7\n", "main": SET_Y}
        self.check_steps([(files, None), ({"main": SET_Y.replace("    helpers.y = 8\n", "")}, None)])

    def test_assignment_with_the_import_in_the_body(self):
        body = SET_Y.replace("import helpers\n\n\ndef main():\n", "def main():\n    import helpers\n")
        files = {"helpers": "y = 7\n", "main": body}
        self.check_steps([(files, None), ({"main": body.replace("    helpers.y = 8\n", "")}, None),
                          ({"main": body}, None), ({}, "all")])

    def test_recompute_all_of_an_append_to_module_state(self):
        self.check_steps([({"helpers": "LOG = []\n", "main": LOG}, None), ({}, "all"), ({}, "all")])

    def test_editing_after_an_append_to_module_state(self):
        steps = [({"helpers": "LOG = []\n", "main": LOG}, None),
                 ({"main": LOG.replace("append(1)", "append(2)")}, None),
                 ({"main": LOG.replace("    helpers.LOG.append(1)\n", "")}, None)]
        self.check_steps(steps)

    def test_append_to_an_imported_container(self):
        self.check_steps([({"helpers": "LOG = []\n", "main": FROM_LOG}, None), ({}, "all"),
                          ({"main": FROM_LOG.replace("append(1)", "append(3)")}, None)])

    def test_a_reader_inserted_before_the_writer_in_a_script(self):
        # The script's `import helpers` binds a frame name, and the call
        # helpers.h0 is taken to mutate it: a reader of helpers.Y inserted
        # before the writer still sees the module's own value (the
        # differential test's seed 25 in script mode).
        script = "import helpers\nm = 1\na = helpers.h0(m)\n%shelpers.Y = m + 6\n"
        files = {"helpers": "Y = 4\n\n\ndef h0(a):\n    return a + 1\n", "main": script % ""}
        self.check_steps([(files, None), ({"main": script % "r = helpers.Y * 3\n"}, None)], scripts=("main",))

    def test_a_reader_inserted_before_the_writer_with_the_import_in_the_body(self):
        body = "def main():\n    import helpers\n    m = 1\n    a = helpers.h0(m)\n%s    helpers.Y = m + 6\n"
        files = {"helpers": "Y = 4\n\n\ndef h0(a):\n    return a + 1\n", "main": body % ""}
        self.check_steps([(files, None), ({"main": body % "    r = helpers.Y * 3\n"}, None)])


SHADOW = ("b = 2\nk = 1\ndef g(v):\n    return v + 1\nm = g(b)\n"
          "def g(v):\n    global k\n    k = k + v\n    return k\nn = g(b)\n")


class LocalCallOfARedefinedFunction(Differential):
    """A script that defines g twice: its frame runs the last def, so a
    call of the first cannot be entered (it ran the second body with the
    first call's arguments, and the differential test's seeds 5075 and
    5270 found its global writes diverging); a call of the last can."""

    def stack(self, expression_id):
        return main_stack(name="__main__") + [{"type": "LocalCall", "expressionId": expression_id}]

    def test_a_call_of_the_earlier_def_is_refused(self):
        s = self.session({"main": SHADOW}, scripts=["main"])
        s.run(main_stack(name="__main__"))
        run = s.run(self.stack("main:__main__/m"))
        self.assertEqual(run.result["status"], "failed", run.result)
        self.assertIn("an earlier definition of g than the one at line 6", run.result["result"]["message"])

    def test_a_call_of_the_last_def_is_entered(self):
        stack = self.stack("main:__main__/n")
        s = self.check_steps([({"main": SHADOW}, None), ({}, None), ({}, "all")], scripts=("main",), stack=stack)
        self.assertEqual(s.view(1)["main:g/return"], "5")


LONG = "".join("    a%d = %d\n" % (i, i) for i in range(70))  # past lazydefs.LAZY_MIN: compiled lazily


class CompileTimeErrors(EngineTestCase):
    """Errors Python's compiler raises for a function are compile errors
    of its module in ripple too, also in a function compiled lazily."""

    def assert_compile_error(self, source, message, args=()):
        s = self.session({"main": source})
        run = s.run(main_stack(args=list(args)))
        self.assertEqual(run.result["status"], "failed", run.result)
        self.assertEqual(run.result["result"]["kind"], "compileError")
        self.assertIn(message, run.result["result"]["message"])
        self.assertEqual(run.updates(), [])
        try:
            compile(source, "main.py", "exec")
        except SyntaxError as exc:
            self.assertIn(message, str(exc))
        else:
            self.fail("Python compiles %r" % source)

    def test_nonlocal_of_a_parameter(self):
        self.assert_compile_error("def main(x):\n" + LONG + "    nonlocal x\n    y = x\n", "parameter and nonlocal", ["1"])

    def test_nonlocal_of_a_nested_functions_parameter(self):
        self.assert_compile_error("def main():\n" + LONG + "    def f(v):\n        nonlocal v\n    y = 2\n",
                                  "parameter and nonlocal")

    def test_nonlocal_without_a_binding(self):
        self.assert_compile_error("def main():\n" + LONG + "    def f():\n        nonlocal zz\n    y = 2\n",
                                  "no binding for nonlocal 'zz'")

    def test_break_outside_a_loop(self):
        self.assert_compile_error("def main():\n" + LONG + "    break\n", "'break' outside loop")

    def test_nonlocal_of_a_frame_name_still_runs(self):
        source = "def main():\n" + LONG + "    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n    inc()\n    y = n\n"
        s = self.session({"main": source})
        self.assertEqual(s.run().result, {"status": "complete"})
        self.assertEqual(s.view()["main:main/y"], "1")


def python_call(source):
    """repr of main's `r`, or "EXC type message", from a real call of
    main() in a fresh interpreter (the oracle of a first run)."""
    import subprocess
    import sys
    program = ("import sys\nns = {}\nexec(compile(sys.stdin.read(), 'main.py', 'exec'), ns)\n"
               "try:\n    print(repr(ns['main']()))\nexcept Exception as e:\n    print('EXC', type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", program], input=source + "    return r\n", capture_output=True, text=True)
    return out.stdout.strip()


class FirstRunIsARealCall(EngineTestCase):
    """A first run reports what a real call of the function computes."""

    SHAPES = [
        # nonlocal of a frame name from a function nested in a nested one
        "    v = 2\n    def outer():\n        def f():\n            nonlocal v\n            v += 1\n        f()\n"
        "        return v\n    r = outer()\n",
        # nonlocal naming a nested function's name and a frame name at once
        "    v = 2\n    def outer():\n        u = 1\n        def f():\n            nonlocal u, v\n            u += v\n"
        "        f()\n        return u\n    r = outer()\n",
        # a comprehension in a class body over a frame local
        "    v = 2\n    class C:\n        ys = [v * i for i in range(3)]\n    r = C.ys\n",
        # a frame local read before it is bound: UnboundLocalError
        "    a = 1\n    r = b + a\n    b = 2\n",
    ]

    def test_shapes(self):
        for body in self.SHAPES:
            source = "def main():\n" + body
            with self.subTest(source=source):
                s = self.session({"main": source})
                s.run()
                got = s.view().get("main:main/r")
                want = python_call(source)
                if want.startswith("EXC"):
                    self.assertEqual(got[0], "Panic", got)
                    self.assertEqual("EXC " + got[1].replace(":", "", 1), want)
                else:
                    self.assertEqual(got, want)


COUNTING = ("class C:\n    def __init__(self):\n        self.n = 0\n\n"
            "    def __getitem__(self, i):\n        self.n += 1\n        return self.n + i\n")
GETS = "from helpers import C\n\n\ndef main():\n    c = C()\n    a = c[0]\n    b = c.n\n"


class MutatingGetitem(Differential):
    def test_editing_the_subscript_does_not_apply_it_twice(self):
        files = {"helpers": COUNTING, "main": GETS}
        self.check_steps([(files, None), ({"main": GETS.replace("c[0]", "c[1]")}, None)])

    def test_recompute_of_the_subscript(self):
        files = {"helpers": COUNTING, "main": GETS}
        self.check_steps([(files, None), ({}, ["main:main/a"])])

    def test_a_list_subscript_is_no_mutation(self):
        # A C-level __getitem__ (list) mutates nothing: editing the reader
        # re-runs it alone.
        main = "def main():\n    xs = [1, 2]\n    a = xs[0]\n    b = len(xs)\n"
        s = self.check_steps([({"main": main}, None)])
        run = s.run(invalidate=["main:main/a"])
        self.assertEqual(run.computed(), ["main:main/a"])


if __name__ == "__main__":
    unittest.main()
