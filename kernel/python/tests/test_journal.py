"""The value journal (ripple_kernel/journal.py): a second Engine on the same
journal file (a new kernel after a restart) restores what the first one
computed, and nothing that would break the caching invariant."""

import os
import sqlite3
import unittest

from enginetest import JournalTestCase, main_stack

MAIN = """import threading


def main():
    xs = []
    print("one")
    xs.append(1)
    ys = xs
    ys.append(2)
    n = len(xs)
    del ys
    lock = threading.Lock()
    b = n + 1
    c = (lock is not None, b)
"""


class JournalTest(JournalTestCase):
    def test_restores_without_running_again(self):
        s = self.session({"main": MAIN})
        r = s.run()
        self.assertEqual(r.output, "one\n")
        s = self.session({"main": MAIN})
        r = s.run()
        self.assertEqual(r.result, {"status": "complete"})
        self.assertEqual(r.output, "")
        self.assertEqual(r.computed(), ["main:main/lock", "main:main/c"])
        latest = s.latest[0]
        self.assertTrue(latest["main:main/xs"]["fromCache"])
        self.assertEqual(latest["main:main/n"]["payload"]["preview"], "2")
        self.assertEqual(latest["main:main/c"]["payload"]["preview"], "(True, 3)")
        # The restored frame behaves as the in-memory cache: an edit of a
        # mutator re-runs the list's chain, and its readers.
        s.compile({"main": MAIN.replace("ys.append(2)", "ys.append(5)")})
        r = s.run()
        self.assertIn("main:main/xs", r.computed())
        self.assertEqual(s.latest[0]["main:main/n"]["payload"]["preview"], "2")
        self.assertEqual(s.latest[0]["main:main/ys"]["payload"]["preview"], "[1]")

    def test_mutation_by_a_later_statement_is_known(self):
        # n read xs before the append: an edit of n alone must not see the
        # appended list (the mutation log comes back with the values).
        src = "def main():\n    xs = []\n    n = len(xs)\n    xs.append(1)\n"
        s = self.session({"main": src})
        s.run()
        s = self.session({"main": src})
        self.assertEqual(s.run().computed(), [])
        s.compile({"main": src.replace("n = len(xs)", "n = len(xs) + 10")})
        s.run()
        self.assertEqual(s.latest[0]["main:main/n"]["payload"]["preview"], "10")

    def test_restored_reader_moved_across_a_call_mutator(self):
        # A restored entry knows what it saw of the mutations through
        # calls: deleting the first zs = list(xs) hands its label to the
        # second, after the pop, which must run (mutation.seen_mutations;
        # the invariant test's seed 7018, after a restart).
        src = "def main():\n    xs = [2, 4, 4]\n    zs = list(xs)\n    m = len(xs) * 0 + xs.pop()\n    zs = list(xs)\n"
        s = self.session({"main": src})
        s.run()
        s = self.session({"main": src})
        self.assertEqual(s.run().computed(), [])
        s.compile({"main": src.replace("    zs = list(xs)\n    m", "    b = 0\n    m", 1)})
        s.run()
        self.assertEqual(s.latest[0]["main:main/zs"]["payload"]["preview"], "[2, 4]")

    def test_recompute_of_a_new_frame_runs_what_it_names(self):
        s = self.session({"main": MAIN})
        s.run()
        s = self.session({"main": MAIN})
        r = s.run(invalidate=["main:main/#1"])
        self.assertEqual(r.output, "one\n")
        self.assertEqual(r.computed(), ["main:main/#1", "main:main/lock", "main:main/c"])
        s = self.session({"main": MAIN})
        r = s.run(invalidate="all")
        self.assertEqual(r.output, "one\n")
        self.assertEqual(len(r.computed()), len(s.latest[0]))

    def test_arguments_key_the_frame(self):
        src = "def main(k):\n    print('ran', k)\n    v = k * 2\n"
        s = self.session({"main": src})
        s.run(main_stack(args=["3"]))
        s = self.session({"main": src})
        r = s.run(main_stack(args=["3"]))
        self.assertEqual(r.output, "")
        self.assertEqual(s.latest[0]["main:main/v"]["payload"]["preview"], "6")
        s = self.session({"main": src})
        r = s.run(main_stack(args=["4"]))
        self.assertEqual(r.output, "ran 4\n")
        self.assertEqual(s.latest[0]["main:main/v"]["payload"]["preview"], "8")

    def test_module_state_is_not_journalled(self):
        src = "G = 0\n\n\ndef main():\n    global G\n    print('bump')\n    G = G + 1\n    v = G\n"
        s = self.session({"main": src})
        s.run()
        s = self.session({"main": src})
        r = s.run()
        self.assertEqual(r.output, "bump\n")
        self.assertEqual(s.latest[0]["main:main/v"]["payload"]["preview"], "1")

    def test_a_changed_global_runs_its_readers(self):
        helper = "K = 1\n"
        src = "import helper\n\n\ndef main():\n    a = 5\n    v = helper.K + a\n"
        s = self.session({"main": src, "helper": helper})
        s.run()
        s = self.session({"main": src, "helper": "K = 2\n"})
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/v"])
        self.assertEqual(s.latest[0]["main:main/v"]["payload"]["preview"], "7")

    def test_damaged_file_is_moved_aside(self):
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "w") as f:
            f.write("not a database\n" * 100)
        s = self.session({"main": MAIN})
        logged = []
        s.engine.journal.log = logged.append
        self.assertEqual(s.run().output, "one\n")
        s.engine.journal_flush()
        self.assertEqual(len(logged), 1, logged)
        aside = [n for n in os.listdir(os.path.dirname(self.path)) if n.startswith("values.db.corrupt-")]
        self.assertEqual(len(aside), 1)
        s = self.session({"main": MAIN})
        self.assertEqual(s.run().output, "")

    def test_database_damaged_inside_is_moved_aside(self):
        src = "def main():\n    print('ran')\n    v = 'x' * 50000\n    w = len(v)\n"
        s = self.session({"main": src})
        s.run()
        s.engine.journal_flush()
        s.close()
        self.sessions = []
        db = sqlite3.connect(self.path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        size = os.path.getsize(self.path)
        self.assertGreater(size, 5 * 4096)
        with open(self.path, "r+b") as f:
            for page in range(1, size // 4096):
                f.seek(page * 4096)
                f.write(b"\xff" * 4096)
        s = self.session({"main": src})
        logged = []
        s.engine.journal.log = logged.append
        r = s.run()
        self.assertEqual(r.result, {"status": "complete"})
        self.assertEqual(r.output, "ran\n")
        s.engine.journal_flush()
        aside = [n for n in os.listdir(os.path.dirname(self.path)) if n.startswith("values.db.corrupt-") and n[-4:] not in ("-wal", "-shm")]
        self.assertEqual(len(aside), 1, (aside, logged))
        s = self.session({"main": src})
        self.assertEqual(s.run().output, "")

    def test_foreign_database_is_moved_aside(self):
        os.makedirs(os.path.dirname(self.path))
        db = sqlite3.connect(self.path)
        db.execute("CREATE TABLE mine(x)")
        db.commit()
        db.close()
        s = self.session({"main": MAIN})
        s.run()
        s.engine.journal_flush()
        aside = [n for n in os.listdir(os.path.dirname(self.path)) if n.startswith("values.db.corrupt-")]
        self.assertEqual(len(aside), 1)
        s = self.session({"main": MAIN})
        self.assertEqual(s.run().output, "")

    def test_large_values_are_not_kept(self):
        src = "def main():\n    print('small')\n    big = list(range(2_000_000))\n    n = len(big)\n    k = 3\n"
        s = self.session({"main": src})
        s.run()
        s = self.session({"main": src})
        r = s.run()
        self.assertEqual(r.output, "")
        self.assertEqual(r.computed(), ["main:main/big", "main:main/n"])
        self.assertEqual(s.latest[0]["main:main/n"]["payload"]["preview"], "2000000")

    def test_a_call_comes_back_enterable(self):
        helper = "def double(v):\n    w = v * 2\n    return w\n"
        src = "from helper import double\n\n\ndef main():\n    print('once')\n    a = double(4)\n"
        s = self.session({"main": src, "helper": helper})
        s.run()
        s = self.session({"main": src, "helper": helper})
        r = s.run()
        self.assertEqual(r.output, "")
        self.assertIn("methodCall", s.latest[0]["main:main/a"])
        stack = main_stack() + [{"type": "LocalCall", "expressionId": "main:main/a"}]
        r = s.run(stack)
        self.assertEqual(r.result, {"status": "complete"})
        self.assertEqual(s.latest[1]["helper:double/w"]["payload"]["preview"], "8")

    def test_budget_evicts_least_recently_used(self):
        os.environ["RIPPLE_VALUES_BUDGET"] = "3000"
        try:
            big = "def main():\n    print('big')\n    v = 'x' * 2000\n"
            other = "def other():\n    print('other')\n    w = 'y' * 2000\n"
            s = self.session({"main": big + "\n\n" + other})
            s.run()
            s.run(main_stack(name="other"), context="c2")
            s = self.session({"main": big + "\n\n" + other})
            self.assertEqual(s.run().output, "big\n")  # evicted for other
            self.assertEqual(s.run(main_stack(name="other"), context="c2").output, "")
        finally:
            os.environ.pop("RIPPLE_VALUES_BUDGET", None)


if __name__ == "__main__":
    unittest.main()
