"""Values later statements overwrite (ripple_kernel/overwritten.py): let go
of once the run passes the rebinding, as Python lets go of them, and read
back from the value journal when an edit needs them, without running their
statements again."""

import gc
import os
import sqlite3
import unittest

from enginetest import JournalTestCase

SIDE = '''
class Box:
    def __init__(self, n):
        print("made", n)
        self.n = n
'''

# gone: whether the first Box is gone once b is rebound (pandas asks the
# same of the frame a slice came from: SettingWithCopyWarning).
MAIN = '''import side
import weakref


def main():
    b = side.Box(1)
    k = b.n * 2
    r = weakref.ref(b)
    b = side.Box(b.n + 1)
    gone = r() is None
    c = b.n
'''

# An edit of the rebinding reads the first list back instead of running
# its statement again. (A Box's statement would run again all the same:
# the rules cannot tell that calling a project class leaves b alone.)
PLAIN = '''def main():
    b = [1]
    k = b[0] * 2
    b = [b[0] + 1]
    c = b[0]
'''


class OverwrittenTest(JournalTestCase):
    @staticmethod
    def previews(s):
        return {k.split("/")[1]: u["payload"].get("preview") for k, u in s.latest[0].items()}

    @staticmethod
    def frame(s):
        return next(iter(s.engine.contexts.values())).frames[0]

    def test_overwritten_value_is_gone_as_in_python(self):
        s = self.session({"side": SIDE, "main": MAIN})
        s.run()
        self.assertEqual(self.previews(s)["gone"], "True")
        self.assertEqual(self.frame(s).released, {"main:main/b"})

    def test_rebound_by_a_later_edit(self):
        # The first Box comes from the cache in the second run (as a
        # notebook's earlier cell does), the rebinding runs: the first is
        # gone once it has.
        first = '''import side


def main():
    k = 1
    b = side.Box(41)
'''
        s = self.session({"side": SIDE, "main": first})
        s.run()
        s.compile({"main": first + "    b = side.Box(2)\n    c = k + 1\n"})
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/b#2", "main:main/c"])
        self.assertEqual(self.frame(s).released, {"main:main/b"})
        gc.collect()
        self.assertEqual(sum(type(o).__name__ == "Box" and o.n == 41 for o in gc.get_objects()), 0)

    def test_kept_without_a_journal(self):
        os.environ.pop("RIPPLE_VALUES_DB")
        s = self.session({"side": SIDE, "main": MAIN})
        s.run()
        # Nothing could give it back: the cache keeps it (the module doc).
        self.assertEqual(self.previews(s)["gone"], "False")

    def test_edit_reads_it_back_without_running_its_statement(self):
        s = self.session({"main": PLAIN})
        s.run()
        self.assertEqual(self.frame(s).released, {"main:main/b"})
        s.compile({"main": PLAIN.replace("b[0] + 1", "b[0] + 10")})
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/b#2", "main:main/c"])
        self.assertEqual(self.previews(s)["c"], "11")
        # Let go of again once the run passed the rebinding.
        self.assertEqual(self.frame(s).released, {"main:main/b"})
        s.compile({"main": PLAIN.replace("b[0] + 1", "b[0] + 10").replace("b[0] * 2", "b[0] * 3")})
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/k"])
        self.assertEqual(self.previews(s)["k"], "3")

    def test_read_back_after_a_restart(self):
        s = self.session({"main": PLAIN})
        s.run()
        s = self.session({"main": PLAIN})
        r = s.run()
        self.assertEqual(r.computed(), [])
        self.assertEqual(self.frame(s).released, {"main:main/b"})
        s.compile({"main": PLAIN.replace("b[0] + 1", "b[0] + 5")})
        r = s.run()
        self.assertEqual(r.computed(), ["main:main/b#2", "main:main/c"])
        self.assertEqual(self.previews(s)["c"], "6")

    def test_visualization_of_a_released_value(self):
        s = self.session({"main": PLAIN})
        s.run()
        vis = {"visualizationId": "v1", "expressionId": "main:main/b", "expression": "lambda v: v + [0]", "apply": True}
        r = s.run(wanted=["main:main/b"], visualizations=[vis])
        self.assertEqual(r.computed(), [])
        self.assertEqual([v.get("data") for v in r.visualizations()], [[1, 0]])

    def rows(self):
        db = sqlite3.connect(os.environ["RIPPLE_VALUES_DB"])
        try:
            return db.execute("SELECT COUNT(*) FROM released").fetchone()[0]
        finally:
            db.close()

    def test_rows_go_with_their_entries(self):
        s = self.session({"main": PLAIN})
        s.run()
        s.engine.journal_flush()
        self.assertEqual(self.rows(), 1)
        # b runs again: its first value is let go of again, a new row;
        # the old row goes with the frame's next write.
        s.compile({"main": PLAIN.replace("b = [1]", "b = [5]")})
        s.run()
        s.engine.journal_flush()
        self.assertEqual(self.rows(), 1)
        self.assertEqual(self.previews(s)["c"], "6")

    def test_mutation_after_the_reader_runs_its_creator_again(self):
        # xs carries the append when it is let go of; k must not see it:
        # its creator runs again (mutation.dirty_reads on the value read
        # back, with its mutation log).
        main = '''def main():
    xs = [1]
    k = len(xs)
    xs.append(2)
    xs = [9]
    c = xs[0]
'''
        s = self.session({"main": main})
        s.run()
        self.assertEqual(self.frame(s).released, {"main:main/xs", "main:main/#1"})
        s.compile({"main": main.replace("k = len(xs)", "k = len(xs) * 10")})
        r = s.run()
        self.assertIn("main:main/xs", r.computed())
        self.assertEqual(self.previews(s)["k"], "10")

    def test_value_held_elsewhere_is_kept(self):
        main = '''import side
import weakref


def main():
    a = side.Box(1)
    keep = [a]
    r = weakref.ref(a)
    a = side.Box(2)
    alive = r() is not None
'''
        s = self.session({"side": SIDE, "main": main})
        s.run()
        self.assertEqual(self.previews(s)["alive"], "True")
        self.assertEqual(self.frame(s).released, set())

    def test_ten_rebindings_hold_one_value(self):
        side = SIDE + '''

class Frame:
    def __init__(self):
        self.data = bytearray(1 << 20)
'''
        main = '''import side
import weakref


def main():
    refs = []
''' + "".join('''    df = side.Frame()
    refs.append(weakref.ref(df))
''' for _ in range(10)) + '''    alive = sum(r() is not None for r in refs)
'''
        s = self.session({"side": side, "main": main})
        s.run()
        self.assertEqual(self.previews(s)["alive"], "1")


if __name__ == "__main__":
    unittest.main()
