"""The 13 acceptance scenarios of the engine (edits, recomputes, panics,
visualizations, interrupts, mutation chains), at the engine level."""

import signal
import sys
import threading
import types
import unittest

from enginetest import EngineTestCase, main_stack

MAIN = "from helpers import foo\n\n\ndef main():\n    x = 6\n    y = foo(x, 5)\n    z = y + 5\n"
HELPERS = "def foo(a, b):\n    c = a * b\n    return c\n"
FILES = {"helpers": HELPERS, "main": MAIN}
X, Y, Z = "main:main/x", "main:main/y", "main:main/z"


def edit(source, old, new):
    assert old in source, old
    return source.replace(old, new, 1)


class Scenarios(EngineTestCase):
    def test_01_first_run(self):
        s = self.session(FILES)
        run = s.run()
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.pending(), [X, Y, Z])
        self.assertEqual(run.values(), {X: "6", Y: "30", Z: "35"})
        for u in run.updates():
            if u["payload"]["type"] == "Value":
                self.assertFalse(u["fromCache"])
                self.assertEqual(u["type"], "builtins.int")
                self.assertEqual(u["profilingInfo"][0]["type"], "ExecutionTime")
                self.assertIsInstance(u["profilingInfo"][0]["nanoTime"], int)
        y = [u for u in run.updates() if u["expressionId"] == Y and u["payload"]["type"] == "Value"][0]
        self.assertEqual(y["methodCall"], {"methodPointer": {"module": "helpers", "definedOnType": "", "name": "foo"}})
        self.assertEqual(y["range"], {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 17}})
        x = [u for u in run.updates() if u["expressionId"] == X and u["payload"]["type"] == "Value"][0]
        self.assertNotIn("methodCall", x)

    def test_02_recompute(self):
        s = self.session(FILES)
        s.run()
        run = s.run()
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.updates(), [])
        run = s.run(invalidate="all")
        self.assertEqual(run.pending(), [X, Y, Z])
        self.assertEqual(run.computed(), [X, Y, Z])
        self.assertEqual(run.values(), {X: "6", Y: "30", Z: "35"})
        run = s.run(invalidate=[Z])
        self.assertEqual(run.pending(), [Z])
        self.assertEqual(run.computed(), [Z])

    def test_03_print_once(self):
        s = self.session({"helpers": HELPERS, "main": edit(MAIN, "x = 6", "x = print('hello') or 6")})
        run = s.run()
        self.assertEqual(run.output, "hello\n")
        run = s.run(invalidate=[Z])
        self.assertEqual(run.computed(), [Z])
        self.assertEqual(run.output, "")

    def test_04_edits(self):
        s = self.session(FILES)
        s.run()
        main = edit(MAIN, "x = 6", "x = 7")
        s.compile({"main": main})
        run = s.run()
        self.assertEqual(run.computed(), [X, Y, Z])
        self.assertEqual(run.values(), {X: "7", Y: "35", Z: "40"})
        s.compile({"main": edit(main, "z = y + 5", "z = y + 50")})
        run = s.run()
        self.assertEqual(run.pending(), [Z])
        self.assertEqual(run.computed(), [Z])
        self.assertEqual(s.view(), {X: "7", Y: "35", Z: "85"})

    def test_05_local_call(self):
        s = self.session(FILES)
        s.run()
        stack = main_stack() + [{"type": "LocalCall", "expressionId": Y}]
        run = s.run(stack)
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.values(1), {"helpers:foo/c": "30", "helpers:foo/return": "30"})
        s.compile({"helpers": edit(HELPERS, "c = a * b", "c = a * b + 1")})
        run = s.run(stack)
        self.assertEqual(run.computed(1), ["helpers:foo/c", "helpers:foo/return"])
        self.assertEqual(run.values(1), {"helpers:foo/c": "31", "helpers:foo/return": "31"})
        # The caller's frame ran too, so its cache is current for the pop.
        self.assertEqual(run.values(0)[Y], "31")
        run = s.run(main_stack())
        self.assertEqual(run.computed(), [])
        self.assertEqual(s.view(0), {X: "6", Y: "31", Z: "36"})

    def test_06_panic_and_fix(self):
        main = edit(MAIN, "z = y + 5", "z = y + 5\n    w = 3")
        s = self.session({"helpers": HELPERS, "main": main})
        s.run()
        s.compile({"main": edit(main, "x = 6", "x = 1/0")})
        run = s.run()
        self.assertEqual(run.result, {"status": "complete"})
        msg = "ZeroDivisionError: division by zero"
        values = run.values()
        self.assertEqual(values[X], ("Panic", msg, (X,)))
        # The exception ends the run (8.1): the statements after it, the
        # independent w too, are not reached, naming x.
        for later in (Y, Z, "main:main/w"):
            self.assertEqual(values[later], ("Pending", "not reached"))
            self.assertEqual(run.reasons()[later], ("exception", X))
        [diag] = run.diagnostics()
        self.assertEqual(diag["expressionId"], X)
        self.assertEqual(diag["path"], "main.py")
        self.assertEqual(diag["location"]["start"], {"line": 4, "character": 4})
        self.assertEqual(diag["stack"][-1]["functionName"], "main")
        s.compile({"main": main})
        run = s.run()
        self.assertEqual(run.values(), {X: "6", Y: "30", Z: "35", "main:main/w": "3"})
        # y runs again (x has no entry) and binds 30 as before: z and w come
        # from the cache (an equal value stops propagation, equalstop.py).
        self.assertEqual(run.computed(), [X, Y])
        self.assertEqual(s.view(), {X: "6", Y: "30", Z: "35", "main:main/w": "3"})

    def test_07_undefined_name(self):
        s = self.session({"helpers": HELPERS, "main": edit(MAIN, "foo(x, 5)", "foo(q, 5)")})
        run = s.run()
        values = run.values()
        msg = "NameError: name 'q' is not defined"
        self.assertEqual(values[Y], ("Panic", msg, (Y,)))
        self.assertEqual(values[Z], ("Pending", "not reached"))
        self.assertEqual(run.reasons(), {Z: ("exception", Y)})
        self.assertEqual(values[X], "6")
        [diag] = run.diagnostics()
        self.assertEqual(diag["location"], {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 17}})
        self.assertEqual(diag["message"], msg)

    def test_08_visualization(self):
        main = edit(MAIN, "x = 6", "x = print('x ran') or 6")
        s = self.session({"helpers": HELPERS, "main": main})
        s.run()
        vis = {"visualizationId": "v1", "expressionId": X, "expression": "lambda v: v * 2", "apply": True}
        run = s.run(wanted=[X], visualizations=[vis])
        self.assertEqual(run.computed(), [])
        self.assertEqual(run.output, "")
        self.assertEqual(
            run.visualizations(), [{"type": "visualization", "visualizationId": "v1", "expressionId": X, "data": 12}]
        )
        vis["apply"] = False
        main = edit(main, "or 6", "or 7")
        s.compile({"main": main})
        run = s.run(visualizations=[vis])
        self.assertEqual([v["data"] for v in run.visualizations()], [14])
        s.compile({"main": edit(main, "z = y + 5", "z = y + 6")})
        run = s.run(visualizations=[vis])
        self.assertEqual(run.computed(), [Z])
        self.assertEqual(run.visualizations(), [])
        run = s.run(invalidate="all")
        self.assertEqual(run.visualizations(), [])

    def test_09_raising_visualization(self):
        s = self.session(FILES)
        s.run()
        vis = {"visualizationId": "v1", "expressionId": X, "expression": "lambda v: 1/0", "apply": True}
        run = s.run(visualizations=[vis], wanted=[X])
        self.assertEqual(run.result, {"status": "complete"})
        [failed] = run.visualizations()
        self.assertEqual(failed["type"], "visualizationFailed")
        self.assertEqual(failed["message"], "ZeroDivisionError: division by zero")

    def test_10_execute_expression(self):
        s = self.session(FILES)
        s.run()
        vis = {"visualizationId": "e1", "expressionId": Z, "expression": "x + y", "oneshot": True}
        run = s.run(visualizations=[vis], wanted=[Z])
        self.assertEqual([v["data"] for v in run.visualizations()], [36])
        run = s.run()
        self.assertEqual(run.visualizations(), [])

    def test_11_interrupt(self):
        sync = types.ModuleType("ripple_test_sync")
        sync.started = threading.Event()
        sync.slow = True
        sys.modules["ripple_test_sync"] = sync
        self.addCleanup(sys.modules.pop, "ripple_test_sync", None)
        main = edit(MAIN, "y = foo(x, 5)", "y = foo(x, 5) + (ripple_test_sync.started.set() or time.sleep(30 if ripple_test_sync.slow else 0) or 0)")
        main = "import time\nimport ripple_test_sync\n" + main
        s = self.session({"helpers": HELPERS, "main": main})
        # A parent (go test) may start us with SIGINT blocked.
        old_mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        self.addCleanup(signal.pthread_sigmask, signal.SIG_SETMASK, old_mask)
        s.kernel.install_sigint()
        self.addCleanup(s.kernel.uninstall_sigint)
        main_thread = threading.main_thread().ident

        def interrupter():
            if sync.started.wait(20):
                signal.pthread_kill(main_thread, signal.SIGINT)

        t = threading.Thread(target=interrupter)
        t.start()
        run = s.run()
        t.join()
        # Had the interrupt not arrived, the sleep would have finished and
        # the run completed with a value for y.
        self.assertEqual(run.result, "interrupted")
        self.assertNotIn(Y, {k for k, v in run.values().items() if not isinstance(v, tuple)})
        self.assertEqual(run.values()[X], "6")
        sync.slow = False
        run = s.run()
        self.assertEqual(run.computed(), [Y, Z])
        self.assertEqual(s.view(), {X: "6", Y: "30", Z: "35"})

    def test_12_syntax_error(self):
        s = self.session(FILES)
        s.run()
        result = s.compile({"main": edit(MAIN, "z = y + 5", "z = y +")})
        [entry] = [m for m in result["modules"] if m["name"] == "main"]
        self.assertFalse(entry["ok"])
        diag = entry["diagnostic"]
        self.assertEqual(diag["path"], "main.py")
        self.assertEqual(diag["location"]["start"]["line"], 6)
        self.assertTrue(diag["message"].startswith("SyntaxError"))
        run = s.run()
        self.assertEqual(run.result["status"], "failed")
        self.assertEqual(run.result["result"]["kind"], "compileError")
        self.assertEqual(run.result["result"]["diagnostic"]["location"], diag["location"])
        s.compile({"main": MAIN})
        run = s.run()
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(s.view(), {X: "6", Y: "30", Z: "35"})

    def test_13_mutation_chain(self):
        main = "def main():\n    xs = []\n    xs.append(1)\n    n = len(xs)\n"
        s = self.session({"main": main})
        run = s.run()
        self.assertEqual(run.values()["main:main/n"], "1")
        s.compile({"main": edit(main, "append(1)", "append(2)")})
        vis = {"visualizationId": "e", "expressionId": "main:main/n", "expression": "xs", "oneshot": True}
        run = s.run(visualizations=[vis])
        self.assertEqual(run.values()["main:main/n"], "1")
        self.assertEqual([v["data"] for v in run.visualizations()], [[2]])


if __name__ == "__main__":
    unittest.main()
