"""How a run ends and what clients see of it (PROTOCOL.md 8.1, 8.4): an
uncaught exception ends the frame's run as in Python, in functions,
scripts and LocalCall frames; a statement that starts running is marked
with its start time; after an interrupt no statement is left waiting."""

import os
import re
import unittest

from enginetest import EngineTestCase, main_stack, path_of
from test_invariant import Driver

STARTED_AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def script_stack(module="main"):
    return main_stack(module=module, name="__main__")


class ExceptionEndsTheRun(EngineTestCase):
    def test_a_failing_assert_then_a_write(self):
        s = self.session()
        published = os.path.join(s.root, "published.txt")
        s.compile({"main": "def main():\n    rows = []\n    assert len(rows) > 0\n"
                           "    open(%r, 'w').close()\n    n = 2\n    return n\n" % published})
        run = s.run()
        self.assertEqual(run.result, {"status": "complete"})
        self.assertEqual(run.values()["main:main/#1"][:2], ("Panic", "AssertionError"))
        for later in ("main:main/#2", "main:main/n", "main:main/return"):
            self.assertEqual(run.values()[later], ("Pending", "not reached"))
            self.assertEqual(run.reasons()[later], ("exception", "main:main/#1"))
        self.assertFalse(os.path.exists(published))
        self.assertEqual([d["expressionId"] for d in run.diagnostics()], ["main:main/#1"])

    def test_a_caught_exception_goes_on(self):
        s = self.session({"main": "def fail():\n    raise ValueError('no')\n\n\n"
                                  "def main():\n    try:\n        fail()\n    except ValueError:\n        caught = True\n"
                                  "    n = 2\n    return n\n"})
        run = s.run()
        self.assertEqual(run.values()["main:main/n"], "2")
        self.assertEqual(run.values()["main:main/return"], "2")
        self.assertEqual(run.reasons(), {})

    def test_in_a_script_frame(self):
        s = self.session(compile_files=False)
        source = "rows = []\nassert len(rows) > 0\nprint('published')\nn = 2\n"
        s.files["main"] = source
        s.engine.compile({"modules": [{"name": "main", "path": path_of("main"), "source": source}], "removed": [],
                          "scripts": ["main"]})
        run = s.run(script_stack())
        self.assertEqual(run.values()["main:__main__/#1"][0], "Panic")
        self.assertEqual(run.reasons(), {"main:__main__/#2": ("exception", "main:__main__/#1"),
                                         "main:__main__/n": ("exception", "main:__main__/#1")})
        self.assertEqual(run.output, "")

    def test_in_a_local_call_frame(self):
        files = {"main": "import os\n\n\ndef publish(rows):\n    assert os.path.exists(READY)\n"
                         "    print('published')\n    n = len(rows)\n    return n\n\n\n"
                         "def main():\n    rows = [1]\n    y = publish(rows)\n    return y\n"}
        s = self.session(files, compile_files=False)
        ready = os.path.join(s.root, "ready")
        open(ready, "w").close()
        s.compile({"main": "READY = %r\n" % ready + files["main"]})
        self.assertEqual(s.run().values()["main:main/y"], "1")
        stack = main_stack() + [{"type": "LocalCall", "expressionId": "main:main/y"}]
        self.assertEqual(s.run(stack).values(1)["main:publish/n"], "1")
        os.remove(ready)
        run = s.run(stack, invalidate="all")
        self.assertEqual(run.values(1)["main:publish/#1"][0], "Panic")
        self.assertEqual(run.reasons(1), {"main:publish/#2": ("exception", "main:publish/#1"),
                                          "main:publish/n": ("exception", "main:publish/#1"),
                                          "main:publish/return": ("exception", "main:publish/#1")})
        self.assertEqual(run.output, "")

    def test_fixing_the_exception_gives_what_a_fresh_run_gives(self):
        # The invariant (5.3) with 8.1: checked against a fresh engine's run
        # (test_invariant.Driver), which stops at the exception too.
        source = "def main():\n    x = 1\n    assert x > 1\n    y = x + 1\n    return y\n"
        d = Driver(self.session())
        d.apply({"op": "compile", "files": {"main": source}})
        d.apply({"op": "run", "stack": main_stack()})
        for fixed in ("assert x > 0", "assert x > 5", "assert x >= 1", "assert x > 1"):
            d.apply({"op": "compile", "files": {"main": source.replace("assert x > 1", fixed)}})
            d.apply({"op": "run", "stack": main_stack()})
        self.assertEqual(d.checked, 5)


class RunState(EngineTestCase):
    def test_a_statement_that_starts_is_marked_running(self):
        s = self.session({"main": "def main():\n    a = 1\n    b = a + 1\n    c = b + 1\n"})
        run = s.run()
        updates = run.updates()
        for expression_id in ("main:main/a", "main:main/b", "main:main/c"):
            mine = [u["payload"] for u in updates if u["expressionId"] == expression_id]
            self.assertEqual([(p["type"], p.get("message")) for p in mine],
                             [("Pending", None), ("Pending", "running"), ("Value", None)])
            self.assertRegex(mine[1]["startedAt"], STARTED_AT)
        # A statement's value comes before the next one's running mark.
        order = [(u["expressionId"], u["payload"].get("message", u["payload"]["type"])) for u in updates]
        self.assertLess(order.index(("main:main/a", "Value")), order.index(("main:main/b", "running")))
        # Served from the cache: no running mark.
        s.compile({"main": "def main():\n    a = 1\n    b = a + 1\n    c = b + 2\n"})
        run = s.run()
        running = [u["expressionId"] for u in run.updates() if u["payload"].get("message") == "running"]
        self.assertEqual(running, ["main:main/c"])

    def assert_nothing_waits(self, s, depth=0):
        for expression_id, u in s.latest.get(depth, {}).items():
            payload = u["payload"]
            if payload["type"] == "Pending":
                self.assertNotIn(payload.get("message"), (None, "running"), expression_id)

    def test_an_interrupt_leaves_no_statement_waiting(self):
        lines = ["a%d = %d" % (i, i) for i in range(20)]
        lines[10] = "for k in range(3):\n        a10 = k"
        source = "def main():\n" + "".join("    %s\n" % line for line in lines)
        s = self.session({"main": source})
        s.kernel.interrupt_at_line(14)  # inside the loop, mid-statement
        try:
            run = s.run()
        finally:
            s.kernel.clear_interrupts()
        self.assertEqual(run.result, "interrupted")
        reasons = run.reasons()
        self.assertEqual(reasons["main:main/#1"], ("interrupted", None))
        self.assertEqual(reasons["main:main/a19"], ("interrupted", None))
        self.assertEqual(run.values()["main:main/a9"], "9")
        self.assert_nothing_waits(s)
        # Before a statement starts (at its region) too.
        s.kernel.interrupt_at_region(2)
        try:
            run = s.run(invalidate="all")
        finally:
            s.kernel.clear_interrupts()
        self.assertEqual(run.result, "interrupted")
        self.assertEqual(run.values()["main:main/a0"], "0")
        self.assertEqual(run.reasons()["main:main/a1"], ("interrupted", None))
        self.assert_nothing_waits(s)
        # The next run computes them.
        run = s.run()
        self.assertEqual(run.values()["main:main/a19"], "19")
        self.assertEqual(run.reasons(), {})

    def test_an_interrupt_in_a_local_call_frame(self):
        s = self.session({"main": "def f(v):\n    p = v + 1\n    q = p + 1\n    return q\n\n\n"
                                  "def main():\n    y = f(1)\n"})
        s.run()
        stack = main_stack() + [{"type": "LocalCall", "expressionId": "main:main/y"}]
        s.kernel.interrupt_at_region(2)
        try:
            run = s.run(stack, invalidate="all")
        finally:
            s.kernel.clear_interrupts()
        self.assertEqual(run.result, "interrupted")
        self.assertEqual(run.reasons(1), {"main:f/q": ("interrupted", None), "main:f/return": ("interrupted", None)})
        self.assert_nothing_waits(s, 1)


if __name__ == "__main__":
    unittest.main()
