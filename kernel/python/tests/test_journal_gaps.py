"""Issue 26's gaps of the value journal (ripple_kernel/journal.py,
reads.py, journaldefs.py): what a new kernel restores and what it does
not."""

import os
import unittest

from enginetest import JournalTestCase, main_stack

SIDE = "def step(i):\n    print('ran', i)\n    return i * 2\n"


class JournalGapsTest(JournalTestCase):
    def test_module_attribute_call(self):
        main = "import side\n\n\ndef main():\n    a = side.step(1)\n    b = a + 1\n"
        self.assertEqual(self.session({"main": main, "side": SIDE}).run().output, "ran 1\n")
        r = self.session({"main": main, "side": SIDE}).run()
        self.assertEqual(r.output, "")
        self.assertEqual(r.computed(), [])
        self.assertEqual(self.sessions[0].latest[0]["main:main/b"]["payload"]["preview"], "3")

    def test_script_calling_its_functions(self):
        main = "import side\n\ndef f(i, k=1):\n    print('f', i)\n    return i + k\n\na = f(1)\nb = side.step(a)\n"
        stack = main_stack(name="__main__")
        self.assertEqual(self.session({"main": main, "side": SIDE}, ["main"]).run(stack).output, "f 1\nran 2\n")
        r = self.session({"main": main, "side": SIDE}, ["main"]).run(stack)
        self.assertEqual(r.output, "")
        self.assertEqual(r.computed(), [])
        # The function restored is the script's: an edit of a caller runs it.
        s = self.sessions[0]
        s.engine.compile({"modules": [{"name": "main", "path": "main.py", "source": main.replace("f(1)", "f(5)")}],
                          "removed": [], "scripts": ["main"]})
        r = s.run(stack)
        self.assertEqual(r.output, "f 5\nran 6\n")

    def test_decorated_function_runs_again(self):
        main = "import functools\n\n@functools.lru_cache\ndef f(i):\n    print('f', i)\n    return i\n\na = f(1)\n"
        stack = main_stack(name="__main__")
        self.session({"main": main}, ["main"]).run(stack)
        self.assertEqual(self.session({"main": main}, ["main"]).run(stack).output, "f 1\n")

    def test_file_read_changed(self):
        data = os.path.join(self.dir, "data.txt")
        main = "def main():\n    x = open(%r).read()\n    y = x * 2\n    z = 7\n" % data
        with open(data, "w") as f:
            f.write("a")
        s = self.session({"main": main})
        r = s.run()
        self.assertEqual(s.latest[0]["main:main/y"]["payload"]["preview"], "'aa'")
        self.assertEqual([e["paths"] for e in r.events if e.get("type") == "reads"], [[data]])
        # A second context on the same kernel: from the journal, current.
        s.engine.journal_flush()
        self.assertEqual(s.run(context="ctx2").computed(), [])
        # A new kernel, the file changed: x and y run again.
        with open(data, "w") as f:
            f.write("bbb")
        s = self.session({"main": main})
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/x", "main:main/y"])
        self.assertEqual(s.latest[0]["main:main/y"]["payload"]["preview"], "'bbbbbb'")
        # The live cache: dropped before the context's next run.
        with open(data, "w") as f:
            f.write("cc")
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/x", "main:main/y"])
        self.assertEqual(s.latest[0]["main:main/y"]["payload"]["preview"], "'cccc'")
        self.assertEqual([e for e in r.events if e.get("type") == "reads"], [])  # the same file as before

    def test_same_contents_written_again_is_current(self):
        data = os.path.join(self.dir, "data.txt")
        with open(data, "w") as f:
            f.write("a")
        s = self.session({"main": "def main():\n    x = open(%r).read()\n" % data})
        s.run()
        os.utime(data, ns=(1, 1))
        self.assertEqual(s.run().computed(), [])
        with open(data, "w") as f:
            f.write("b")
        self.assertEqual(s.run().computed(), ["main:main/x"])

    def test_displays_kept_and_replayed(self):
        # (The stub kernel has no output frames: displays only here; the
        # binary tests cover printed text.)
        main = "import ripple\n\n\ndef main():\n    x = 6\n    ripple.display(x * 7)\n    y = x + 1\n"
        r = self.session({"main": main}).run()
        self.assertEqual([e for e in r.events if e.get("type") == "replay"], [])
        r = self.session({"main": main}).run()
        self.assertEqual(r.computed(), [])
        replays = [e["items"] for e in r.events if e.get("type") == "replay"]
        self.assertEqual(len(replays), 1)
        self.assertEqual([(i["expressionId"], i["data"]["text/plain"]) for i in replays[0]], [("main:main/#1", "42")])
        # A run that computes it again sends it live, not replayed.
        r = self.sessions[0].run(invalidate=["main:main/#1"])
        self.assertEqual([e for e in r.events if e.get("type") == "replay"], [])
        self.assertEqual([e["data"]["text/plain"] for e in r.events if e.get("type") == "displayData"], ["42"])

    def test_checkpoint_during_a_long_run(self):
        # A kernel killed right after a long run, before its idle time
        # (no flush), keeps what the run wrote between its statements
        # (here after every statement: no timing in the test).
        from ripple_kernel import journal

        saved = journal.CHECKPOINT_SECONDS, journal.CHECKPOINT_FACTOR
        journal.CHECKPOINT_SECONDS, journal.CHECKPOINT_FACTOR = 0.0, 0
        self.addCleanup(setattr, journal, "CHECKPOINT_SECONDS", saved[0])
        self.addCleanup(setattr, journal, "CHECKPOINT_FACTOR", saved[1])
        main = "import side\n\n\ndef main():\n    a = side.step(1)\n    b = side.step(2)\n"
        self.session({"main": main, "side": SIDE}).run()
        s = self.sessions[0]
        s.engine.journal.flush()  # the writer thread's queue, not the idle write
        r = self.session({"main": main, "side": SIDE}, flush=False).run()
        self.assertEqual(r.output, "")
        self.assertEqual(r.computed(), [])


if __name__ == "__main__":
    unittest.main()
