"""Execution details: returns, closures, stacks, failures, visualizations, bad input."""

import os
import shutil
import sys
import tempfile
import unittest

from enginetest import EngineTestCase, main_stack


def src(*lines, header=""):
    return header + "def main():\n" + "".join("    %s\n" % line for line in lines)


class Execution(EngineTestCase):
    def test_return_ends_the_run(self):
        s = self.session({"main": src("x = 1", "if x > 0:", "    return x * 10", "y = 2")})
        run = s.run()
        self.assertEqual(run.values(), {"main:main/x": "1", "main:main/#1": "10", "main:main/y": ("Pending", "not reached")})
        s.compile({"main": src("x = -1", "if x > 0:", "    return x * 10", "y = 2")})
        run = s.run()
        self.assertEqual(s.view(), {"main:main/x": "-1", "main:main/#1": "None", "main:main/y": "2"})

    def test_augmented_assignment_reports_its_targets_new_value(self):
        # x["q"] += n and G.n += 1 report the target's new value, as n += 4
        # does; a target whose reading would call something again
        # (x[key()] += 1) reports none.
        header = "class O:\n    n = 1\n\n\nG = O()\n\n\ndef key():\n    return 'q'\n\n\n"
        s = self.session({"main": src("x = {'q': 1}", "n = 2", "x['q'] += n", "G.n += 1", "n += 4",
                                      "x[key()] += 1", "grid = [[0, 1], [2, 3]]", "grid[-1][1:] += [9]",
                                      header=header)})
        self.assertEqual(s.run().values(), {
            "main:main/x": "{'q': 1}", "main:main/n": "2", "main:main/#1": "3", "main:main/#2": "2",
            "main:main/n#2": "6", "main:main/#3": "None", "main:main/grid": "[[0, 1], [2, 3]]",
            "main:main/#4": "[3, 9]"})

    def test_stop_at_skip(self):
        # Any exception ends the frame's run (PROTOCOL.md 8.1); a skip
        # outcome in batch runs (stopAtSkip) ends it as a return does: the
        # test does not apply, the statements after it are not reached
        # without a reason. pytest's classes are matched by module and
        # name, as pytest defines them (Skipped claims the module
        # "builtins").
        header = (
            "import unittest\n"
            "class Skipped(BaseException):\n    pass\n"
            "Skipped.__module__ = 'builtins'\n"
            "class Other(Exception):\n    pass\n"
        )
        for raiser, message in [
            ("raise unittest.SkipTest('no network')", "unittest.case.SkipTest: no network"),
            ("raise Skipped('not today')", "Skipped: not today"),
        ]:
            s = self.session({"main": src("x = 1", raiser, "y = 2", header=header)})
            want = {"main:main/x": "1", "main:main/#1": ("Panic", message, ("main:main/#1",)),
                    "main:main/y": ("Pending", "not reached")}
            run = s.run(stop_at_skip=True)
            self.assertEqual(run.values(), want)
            self.assertEqual(run.reasons(), {})
            s = self.session({"main": src("x = 1", raiser, "y = 2", header=header)})
            run = s.run()
            self.assertEqual(run.values(), want)
            self.assertEqual(run.reasons(), {"main:main/y": ("exception", "main:main/#1")})
        # Any other exception ends the run with its reason, also in batch runs.
        s = self.session({"main": src("x = 1", "raise Other('x')", "y = 2", header=header)})
        run = s.run(stop_at_skip=True)
        self.assertEqual(run.values()["main:main/y"], ("Pending", "not reached"))
        self.assertEqual(run.reasons(), {"main:main/y": ("exception", "main:main/#1")})

    def test_arguments_are_evaluated_once_per_change(self):
        # The first run after the arguments were evaluated uses them as
        # they are, even when a statement mutates one (they are fresh);
        # a later run that re-runs the mutation evaluates them again.
        s = self.session({"main": "calls = []\n\n\ndef make():\n    calls.append(1)\n    return []\n\n\n"
                                  "def main(xs):\n    xs.append(1)\n    n = len(xs)\n"})
        stack = main_stack(args=["make()"])
        self.assertEqual(s.run(stack).values()["main:main/n"], "1")
        calls = s.engine.modules.ensure("main").module.calls
        self.assertEqual(len(calls), 1)
        self.assertEqual(s.run(stack, invalidate="all").values()["main:main/n"], "1")
        self.assertEqual(len(calls), 2)

    def test_a_failed_import_leaves_no_half_package(self):
        # An installed package whose import fails half way (here its second
        # submodule raises; an interrupt in the middle of `import pandas`
        # is the same) must import cleanly once the cause is gone, as in a
        # fresh interpreter: the submodule that had finished is not left
        # behind to break the package's next import.
        site = tempfile.mkdtemp(prefix="ripple-site-")
        self.addCleanup(shutil.rmtree, site, True)
        flag = os.path.join(site, "fail")
        os.makedirs(os.path.join(site, "halfpkg"))
        files = {
            "__init__.py": "import halfpkg.first\nimport halfpkg.second\nVALUE = halfpkg.first.V + halfpkg.second.W\n",
            "first.py": "V = 40\n",
            "second.py": "import os\nif os.path.exists(%r):\n    raise RuntimeError('second is broken')\nW = 2\n" % flag,
        }
        for name, text in files.items():
            with open(os.path.join(site, "halfpkg", name), "w") as f:
                f.write(text)
        open(flag, "w").close()
        sys.path.insert(0, site)
        self.addCleanup(sys.path.remove, site)
        self.addCleanup(lambda: [sys.modules.pop(n) for n in list(sys.modules) if n.split(".")[0] == "halfpkg"])
        s = self.session({"main": src("import halfpkg", "v = halfpkg.VALUE")})
        values = s.run().values()
        self.assertEqual(values["main:main/#1"][:2], ("Panic", "RuntimeError: second is broken"))
        self.assertFalse("halfpkg.first" in sys.modules, "the finished submodule of the failed import is still loaded")
        os.remove(flag)
        self.assertEqual(s.run(invalidate="all").values()["main:main/v"], "42")

    def test_inherited_method_runs_its_class_code(self):
        # Sub.m is Base.m: the frame runs Base.m's statements on a Sub.
        s = self.session({"main": "class Base:\n    def m(self):\n        x = self.k + 1\n        return x\n\n\n"
                                  "class Sub(Base):\n    k = 41\n"})
        run = s.run(main_stack(owner="Sub", name="m", this="Sub()"))
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.values()["main:Base.m/x"], "42")

    def test_called_functions_see_the_statement_as_their_caller(self):
        # The engine records a statement's call without calling through a
        # frame of its own: APIs that look at their caller (namedtuple's
        # __module__, logging, warnings) see the user's module.
        s = self.session({"main": "import sys\nfrom collections import namedtuple\n\n\n"
                                  "def caller():\n    return sys._getframe(1).f_globals.get('__name__')\n\n\n"
                                  "def main():\n    who = caller()\n    P = namedtuple('P', 'x')\n    where = P.__module__\n"
                                  "    name = sys._getframe().f_code.co_name\n"})
        values = s.run().values()
        self.assertEqual(values["main:main/who"], "'main'")
        self.assertEqual(values["main:main/name"], "'main'")  # the statement's code is named after its function
        self.assertEqual(values["main:main/where"], "'main'")

    def test_zero_argument_super_in_a_method(self):
        # super() and __class__ work in a method's statements as in the
        # method: in an ExplicitCall of the method and in a LocalCall into it.
        s = self.session({"main": "class Base:\n    def greet(self):\n        return 'base'\n\n\n"
                                  "class Sub(Base):\n    def greet(self):\n        parent = super().greet()\n"
                                  "        me = __class__.__name__\n        return parent + '+sub'\n\n\n"
                                  "def main():\n    g = Sub().greet()\n"})
        run = s.run(main_stack(owner="Sub", name="greet", this="Sub()"))
        self.assertEqual(run.values(), {"main:Sub.greet/parent": "'base'", "main:Sub.greet/me": "'Sub'",
                                        "main:Sub.greet/return": "'base+sub'"})
        s.run()
        self.assertEqual(s.view()["main:main/g"], "'base+sub'")
        run = s.run(main_stack() + [{"type": "LocalCall", "expressionId": "main:main/g"}])
        self.assertEqual(run.values(1)["main:Sub.greet/parent"], "'base'")

    def test_module_globals_written_and_rebound(self):
        # A statement sees a module global a called function rebound, and
        # a function's `global` and globals()[...] writes reach the module
        # (its functions and later statements see them).
        s = self.session({"main": "counter = 0\n\n\ndef bump():\n    global counter\n    counter += 1\n\n\n"
                                  "def read_flag():\n    return flag\n\n\n"
                                  "def main():\n    bump()\n    seen = counter\n    global flag\n    flag = 'set'\n"
                                  "    via = read_flag()\n    globals()['extra'] = 5\n    got = extra\n"
                                  "    class Local:\n        pass\n    globals()['Local'] = Local\n"
                                  "    key = 'dyn'\n    globals()[key] = 7\n"})
        values = s.run().values()
        self.assertEqual(values["main:main/seen"], "1")
        self.assertEqual(values["main:main/via"], "'set'")
        self.assertEqual(values["main:main/got"], "5")
        module = s.engine.modules.ensure("main").module
        self.assertEqual((module.counter, module.flag, module.extra), (1, "set", 5))
        self.assertEqual(module.Local.__name__, "Local")  # a local published by globals()[...]
        self.assertEqual(module.dyn, 7)  # a name only known at run time

    def test_run_once_keeps_no_object_alive(self):
        # runOnce (batch): an object the code releases dies, as in a plain
        # call; the server's cache keeps it for later runs.
        source = ("import gc\nimport weakref\n\n\nclass Thing:\n    pass\n\n\n"
                  "def main():\n    t = Thing()\n    t.items = [1]\n    ref = weakref.ref(t)\n    t = None\n"
                  "    gc.collect()\n    alive = ref() is not None\n")
        s = self.session({"main": source})
        self.assertEqual(s.run(run_once=True).values()["main:main/alive"], "False")
        s = self.session({"main": source})
        self.assertEqual(s.run().values()["main:main/alive"], "True")

    def test_global_declared_and_local_names(self):
        # A name declared global is read from the module and written back;
        # a local read before its binding is unbound, as in Python, even
        # when the module has a global of that name.
        s = self.session({"main": "total = 10\ng = 5\n\n\n"
                                  "def main():\n    global total\n    total = total + 1\n    y = g\n    g = 1\n"})
        values = s.run().values()
        self.assertEqual(values["main:main/total"], "11")
        self.assertEqual(values["main:main/y"][0], "Panic")
        self.assertEqual(s.engine.modules.ensure("main").module.total, 11)

    def test_closures_see_current_locals(self):
        s = self.session({"main": src("k = 1", "f = lambda: k", "k = 5", "y = f()", "g = [k * v for v in range(2)]")})
        self.assertEqual(s.run().values()["main:main/y"], "5")
        s.compile({"main": src("k = 1", "f = lambda: k", "k = 6", "y = f()", "g = [k * v for v in range(2)]")})
        run = s.run()
        self.assertEqual(s.view()["main:main/y"], "6")
        self.assertEqual(s.view()["main:main/g"], "[0, 6]")
        self.assertNotIn("main:main/f", run.computed())

    def test_nonlocal_in_nested_function(self):
        body = ["count = 0", "def bump():", "    nonlocal count", "    count += 1", "bump()", "n = count"]
        s = self.session({"main": src(*body)})
        self.assertEqual(s.run().values()["main:main/n"], "1")

    def test_reader_before_later_mutation(self):
        body = ["xs = []", "n = len(xs)", "xs.append(1)", "m = len(xs)"]
        s = self.session({"main": src(*body)})
        s.run()
        body[1] = "n = len(xs) + 0"
        s.compile({"main": src(*body)})
        s.run()
        self.assertEqual(s.view(), {"main:main/xs": "[]", "main:main/n": "0", "main:main/#1": "None", "main:main/m": "1"})

    def test_alias_mutation(self):
        body = ["xs = []", "ys = xs", "ys.append(1)", "n = len(xs)"]
        s = self.session({"main": src(*body)})
        s.run()
        body[2] = "ys.append(2)"
        s.compile({"main": src(*body)})
        s.run()
        vis = {"visualizationId": "e", "expressionId": "main:main/n", "expression": "xs", "oneshot": True}
        run = s.run(visualizations=[vis])
        self.assertEqual(run.visualizations()[0]["data"], [2])
        self.assertEqual(s.view()["main:main/n"], "1")

    def test_moved_statement_is_not_recomputed(self):
        s = self.session({"main": src("x = print('x') or 1", "y = x + 1")})
        s.run()
        s.compile({"main": src("w = 0", "x = print('x') or 1", "y = x + 1")})
        run = s.run()
        self.assertEqual(run.computed(), ["main:main/w"])
        self.assertEqual(run.output, "")
        moved = [u for u in run.updates() if u["expressionId"] == "main:main/x"]
        self.assertEqual(len(moved), 1)
        self.assertTrue(moved[0]["fromCache"])
        self.assertEqual(moved[0]["range"]["start"]["line"], 2)

    def test_recursion_error_is_a_panic(self):
        s = self.session({"main": "def r(n):\n    return r(n + 1)\n\n" + src("a = 1", "b = r(0)", "c = a + 1")})
        run = s.run()
        self.assertEqual(run.values()["main:main/b"][1][:14], "RecursionError")
        # It ends the run as any exception does (8.1).
        self.assertEqual(run.values()["main:main/c"], ("Pending", "not reached"))
        self.assertEqual(run.reasons(), {"main:main/c": ("exception", "main:main/b")})
        self.assertEqual(run.result, {"status": "complete"})

    def test_wanted_runs_only_what_is_needed(self):
        s = self.session({"main": src("a = 1", "b = 2", "c = a + 1", "d = b + 1")})
        run = s.run(wanted=["main:main/c"])
        self.assertEqual(run.computed(), ["main:main/a", "main:main/c"])
        run = s.run()
        self.assertEqual(run.computed(), ["main:main/b", "main:main/d"])

    def test_generator_function_fails(self):
        s = self.session({"main": src("x = 1", "yield x")})
        run = s.run()
        self.assertEqual(run.result["status"], "failed")
        self.assertEqual(run.result["result"]["kind"], "failure")
        self.assertIn("generator", run.result["result"]["message"])

    def test_undefined_names_and_values(self):
        s = self.session({"main": src("x = 1", "del x", "y = x")})
        run = s.run()
        # As a real call of main raises it: x is a local of main.
        try:
            exec("def main():\n    x = 1\n    del x\n    y = x\nmain()", {})
        except UnboundLocalError as exc:
            python = "UnboundLocalError: %s" % exc
        self.assertEqual(run.values()["main:main/y"][1], python)
        self.assertTrue(python.startswith("UnboundLocalError"))

    def test_long_functions_are_compiled_lazily_and_behave(self):
        body = "".join("    v%d = %d\n" % (i, i) for i in range(100))
        lib = "def big(a, b=2, *r, k=3, **kw):\n" + body + "    if a < 0:\n        raise ValueError('neg')\n    return (a, b, r, k, kw, v99)\n"
        main = "import inspect\nfrom lib import big\n\n" + src(
            "x = big(1, 5, 6, k=4, z=1)", "y = big(0)", "s = str(inspect.signature(big))", "z = big(-1)"
        )
        s = self.session({"lib": lib, "main": main})
        run = s.run()
        values = run.values()
        self.assertEqual(values["main:main/x"], "(1, 5, (6,), 4, {'z': 1}, 99)")
        self.assertEqual(values["main:main/y"], "(0, 2, (), 3, {}, 99)")
        self.assertEqual(values["main:main/s"], "'(a, b=2, *r, k=3, **kw)'")
        self.assertEqual(values["main:main/z"][1], "ValueError: neg")
        [diag] = run.diagnostics()
        self.assertEqual(diag["stack"][-1]["location"]["start"]["line"], 102)
        run = s.run(main_stack() + [{"type": "LocalCall", "expressionId": "main:main/x"}])
        self.assertEqual(run.values(1)["lib:big/v99"], "99")

    def test_drop_context_and_status(self):
        s = self.session({"main": src("x = print('ran') or 1")})
        self.assertEqual(s.run().output, "ran\n")
        self.assertEqual(s.engine.status({})["contexts"], ["ctx"])
        self.assertEqual(s.engine.drop_context({"contexts": [{"contextId": "ctx", "generation": 0}]}), {})
        self.assertEqual(s.engine.status({}), {"modules": {"main": "ok"}, "contexts": []})
        self.assertEqual(s.run().output, "ran\n")

    def test_generations(self):
        # A context destroyed and created again under its id: the new one
        # starts empty, and a late drop of the old one leaves it alone.
        s = self.session({"main": src("x = print('ran') or 1")})
        self.assertEqual(s.run(generation=1).output, "ran\n")
        self.assertEqual(s.run(generation=1).output, "")  # from the cache
        self.assertEqual(s.run(generation=2).output, "ran\n")
        s.engine.drop_context({"contexts": [{"contextId": "ctx", "generation": 1}]})
        self.assertEqual(s.engine.status({})["contexts"], ["ctx"])
        self.assertEqual(s.run(generation=2).output, "")

    def test_drops_ride_along_with_a_run(self):
        s = self.session({"main": src("x = print('ran') or 1")})
        s.run(context="a")
        s.run(context="b")
        self.assertEqual(s.engine.status({})["contexts"], ["a", "b"])
        s.run(context="c", drop=[{"contextId": "a", "generation": 0}, {"contextId": "gone"}])
        self.assertEqual(s.engine.status({})["contexts"], ["b", "c"])
        # The run's own context dropped first: it starts over.
        self.assertEqual(s.run(context="b", drop=[{"contextId": "b"}]).output, "ran\n")


class Stacks(EngineTestCase):
    LIB = (
        "class Cart:\n"
        "    def __init__(self, items):\n"
        "        self.items = items\n"
        "    def total(self, tax):\n"
        "        s = sum(self.items)\n"
        "        return s + tax\n\n"
        "def scale(v, factor=3):\n"
        "    r = v * factor\n"
        "    return r\n"
    )

    def test_explicit_call_with_arguments_and_method(self):
        s = self.session({"lib": self.LIB})
        run = s.run(main_stack("lib", "scale", args=["2"]))
        self.assertEqual(run.values(), {"lib:scale/r": "6", "lib:scale/return": "6"})
        run = s.run(main_stack("lib", "total", args=["1"], owner="Cart", this="Cart([1, 2])"))
        self.assertEqual(run.values(), {"lib:Cart.total/s": "3", "lib:Cart.total/return": "4"})
        run = s.run(main_stack("lib", "total", args=["1"], owner="Cart", this="Cart([1, 2])"))
        self.assertEqual(run.computed(), [])

    def test_explicit_call_failures(self):
        s = self.session({"lib": self.LIB})
        cases = [
            (main_stack("lib", "nope"), "function lib:nope not found"),
            (main_stack("lib", "scale", args=["1/0"]), "argument 1 of lib:scale ('1/0') raised ZeroDivisionError"),
            (main_stack("lib", "scale", args=["1", "2", "3"]), "cannot call lib:scale with 3 argument(s)"),
            (main_stack("lib", "total", owner="Cart"), "needs a thisArgumentExpression"),
            (main_stack("nomodule", "main"), "module nomodule is not a module of the project"),
            (main_stack("lib", "scale", args=["(("]), "argument 1 of lib:scale ('((') raised SyntaxError"),
        ]
        for stack, message in cases:
            with self.subTest(message=message):
                run = s.run(stack)
                self.assertEqual(run.result["status"], "failed")
                self.assertEqual(run.result["result"]["kind"], "failure")
                self.assertIn(message, run.result["result"]["message"])

    def test_local_call_into_method_and_failures(self):
        main = "from lib import Cart, scale\n\n" + src("c = Cart([1, 2, 3])", "t = c.total(10)", "u = t + 1", "k = scale(t)")
        s = self.session({"lib": self.LIB, "main": main})
        run = s.run()
        t = [u for u in run.updates() if u["expressionId"] == "main:main/t" and u["payload"]["type"] == "Value"][0]
        self.assertEqual(t["methodCall"], {"methodPointer": {"module": "lib", "definedOnType": "Cart", "name": "total"}})
        run = s.run(main_stack() + [{"type": "LocalCall", "expressionId": "main:main/t"}])
        self.assertEqual(run.values(1), {"lib:Cart.total/s": "6", "lib:Cart.total/return": "16"})
        run = s.run(main_stack() + [{"type": "LocalCall", "expressionId": "main:main/k"}])
        self.assertEqual(run.values(1), {"lib:scale/r": "48", "lib:scale/return": "48"})
        for expression_id, message in [
            ("main:main/u", "not a direct call of a project function"),
            ("main:main/zz", "is not a statement of main:main"),
        ]:
            run = s.run(main_stack() + [{"type": "LocalCall", "expressionId": expression_id}])
            self.assertEqual(run.result["result"]["kind"], "failure")
            self.assertIn(message, run.result["result"]["message"])


class Visualizations(EngineTestCase):
    def test_pointer_arguments_limit_and_errors(self):
        lib = "def show(v, n):\n    return {'v': v, 'n': n}\n\ndef huge(v):\n    return 'x' * (2 << 20)\n"
        s = self.session({"lib": lib, "main": src("x = [1, 2]")})
        s.run()
        vis = [
            {"visualizationId": "p", "expressionId": "main:main/x", "expression": "lib:show", "positionalArgumentsExpressions": ["3"], "apply": True},
            {"visualizationId": "h", "expressionId": "main:main/x", "expression": "lib:huge", "apply": True},
            {"visualizationId": "s", "expressionId": "main:main/x", "expression": "lambda v: (", "apply": True},
            {"visualizationId": "o", "expressionId": "main:main/x", "expression": "undefined_name", "oneshot": True},
            {"visualizationId": "q", "expressionId": "main:main/nope", "expression": "len", "apply": True},
        ]
        run = s.run(visualizations=vis, wanted=["main:main/x"])
        events = {e["visualizationId"]: e for e in run.visualizations()}
        self.assertEqual(events["p"]["data"], {"v": [1, 2], "n": 3})
        self.assertEqual(events["h"]["type"], "visualizationFailed")
        self.assertIn("byte limit", events["h"]["message"])
        self.assertTrue(events["s"]["message"].startswith("SyntaxError"))
        self.assertEqual(events["o"]["message"], "NameError: name 'undefined_name' is not defined")
        self.assertIn("not a statement", events["q"]["message"])
        self.assertEqual(run.result, {"status": "complete"})

    def test_never_applied_to_interrupted_value(self):
        s = self.session({"main": src("x = 1", "y = x + 1")})
        vis = [{"visualizationId": "v", "expressionId": "main:main/y", "expression": "lambda v: v", "apply": False}]
        s.kernel.interrupt_at_line(2)
        run = s.run(visualizations=vis)
        s.kernel.clear_interrupts()
        self.assertEqual(run.result, "interrupted")
        self.assertEqual(run.visualizations(), [])
        run = s.run(visualizations=vis)
        self.assertEqual([e["data"] for e in run.visualizations()], [2])


class BadInput(EngineTestCase):
    def test_execute_params(self):
        s = self.session({"main": src("x = 1")})
        explicit = main_stack()[0]
        cases = [
            (None, "contextId must be a non-empty string"),
            ({"contextId": "c"}, "stack must be a non-empty list"),
            ({"contextId": "c", "stack": [{"type": "LocalCall", "expressionId": "a"}]}, "stack item 0 must be an ExplicitCall"),
            ({"contextId": "c", "stack": [explicit, explicit]}, "ExplicitCall is only allowed at the bottom"),
            ({"contextId": "c", "stack": [{"type": "Weird"}]}, "unknown type 'Weird'"),
            ({"contextId": "c", "stack": [{"type": "ExplicitCall", "name": "main"}]}, "needs a string module"),
            ({"contextId": "c", "stack": [explicit], "invalidate": "some"}, "invalidate must be null"),
            ({"contextId": "c", "stack": [explicit], "wanted": "x"}, "wanted must be null or a list"),
            ({"contextId": "c", "stack": [explicit], "visualizations": [{"visualizationId": "v"}]}, "needs a string expressionId"),
            ({"contextId": "c", "stack": [dict(explicit, positionalArgumentsExpressions=[1])]}, "must be a list of strings"),
            ({"contextId": "c", "stack": [explicit], "stopAtSkip": "yes"}, "stopAtSkip must be a boolean"),
            ({"contextId": "c", "stack": [explicit], "finalize": 1}, "finalize must be a boolean"),
            ({"contextId": "c", "stack": [explicit], "runOnce": "no"}, "runOnce must be a boolean"),
        ]
        for params, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(ValueError) as ctx:
                    s.engine.execute(params)
                self.assertIn(message, str(ctx.exception))
        self.assertEqual(s.run().result, {"status": "complete"})
        for params, message in [
            ({"contexts": [{"contextId": 3}]}, "contexts[0] must be an object with a string contextId"),
            ({"contexts": "ctx"}, "contexts must be a list"),
            ({"contexts": [{"contextId": "c", "generation": "1"}]}, "contexts[0].generation must be an integer"),
        ]:
            with self.subTest(message=message):
                with self.assertRaises(ValueError) as ctx:
                    s.engine.drop_context(params)
                self.assertIn(message, str(ctx.exception))
        for params, message in [
            ({"contextId": "c", "stack": [explicit], "generation": "1"}, "generation must be an integer"),
            ({"contextId": "c", "stack": [explicit], "drop": {"contextId": "a"}}, "execute: drop must be a list"),
        ]:
            with self.subTest(message=message):
                with self.assertRaises(ValueError) as ctx:
                    s.engine.execute(params)
                self.assertIn(message, str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
