"""Issue 27: replaying a mutation does not re-run the earlier readers of
the object (rerun.RerunPlanner._replays). When ``xs.append(k)`` changes,
``xs = []`` and ``xs.append(1)`` run again to rebuild xs; ``n0 = len(xs)``
between them computes what it computed last time and stays cached. Every
value is checked against a fresh engine (test_causes.Differential)."""

import unittest

from enginetest import main_stack
from test_causes import Differential, compile_files, fresh_view
from test_invariant import view_of


def body(*lines):
    return "def main():\n" + "".join("    " + line + "\n" for line in lines)


C = "class C:\n    def __init__(self):\n        self.a = 1\n        self.b = 2\n"


class Replays(Differential):
    def ran(self, files, edits, helpers=None):
        """Run files, then each (old, new) edit of main in turn, each checked
        against a fresh engine; the ids the last run computed."""
        s = self.check_steps([(files, None)])
        main = files["main"]
        for old, new in edits:
            main = main.replace(old, new, 1)
            compile_files(s, {"main": main}, ())
            run = s.run(main_stack())
            _, want = fresh_view(dict(s.files), main_stack(), ())
            got = view_of(s.latest.get(0, {}))
            for expression_id, value in sorted(want.items()):
                self.assertEqual(got.get(expression_id), value, "%s after %r" % (expression_id, new))
        return sorted(run.computed())

    def test_an_earlier_reader_of_a_replayed_list_stays(self):
        main = body("xs = []", "n0 = len(xs)", "xs.append(1)", "k = 2", "xs.append(k)", "total = sum(xs)")
        ran = self.ran({"main": main}, [("k = 2", "k = 3")])
        self.assertNotIn("main:main/n0", ran)
        self.assertIn("main:main/xs", ran)

    def test_an_earlier_reader_of_a_replayed_attribute_stays(self):
        main = body("from helpers import C", "c = C()", "x = c.a", "c.b = 5", "y = c.b")
        ran = self.ran({"helpers": C, "main": main}, [("c.b = 5", "c.b = 6")])
        self.assertEqual(ran, ["main:main/#2", "main:main/c", "main:main/y"])

    def test_the_readers_of_a_reader_stay_too(self):
        main = body("xs = [1]", "n0 = len(xs)", "m0 = n0 * 2", "k = 2", "xs.append(k)", "t = sum(xs) + m0")
        ran = self.ran({"main": main}, [("k = 2", "k = 5"), ("k = 5", "k = 6")])
        self.assertNotIn("main:main/n0", ran)
        self.assertNotIn("main:main/m0", ran)

    def test_a_reader_after_a_changed_mutation_through_an_alias_runs(self):
        # ys is xs: the edited append changes what len(ys) reads, though no
        # signature of it names the append.
        main = body("xs = []", "ys = xs", "k = 2", "xs.append(k)", "n = len(ys)", "xs.append(1)", "t = k + 1",
                    "xs.append(t)", "m = len(ys) + sum(ys)")
        self.ran({"main": main}, [("t = k + 1", "t = k + 2"), ("k = 2", "k = 3"), ("xs.append(k)", "xs.append(k * 2)"),
                                  ("xs.append(1)", "xs.append(1)\n    xs.append(7)")])

    def test_a_reader_holding_the_object_runs(self):
        # A reader whose value holds the replayed object must see the new one.
        main = body("xs = []", "pair = (len(xs), xs)", "k = 2", "xs.append(k)", "n = sum(pair[1])")
        self.ran({"main": main}, [("k = 2", "k = 3"), ("k = 3", "k = 4")])

    def test_a_reader_that_mutates_runs(self):
        main = body("xs = []", "n0 = len(xs) + (xs.append(0) or 0)", "k = 2", "xs.append(k)", "t = list(xs)")
        self.ran({"main": main}, [("k = 2", "k = 3"), ("k = 3", "k = 4")])

    def test_a_reader_of_a_changed_value_runs(self):
        main = body("a = 1", "xs = [a]", "n0 = len(xs) + a", "k = 2", "xs.append(k)", "t = sum(xs) + n0")
        self.ran({"main": main}, [("k = 2", "k = 3"), ("a = 1", "a = 4"), ("k = 3", "k = 5")])

    def test_interrupted_and_recomputed(self):
        main = body("xs = []", "n0 = len(xs)", "xs.append(1)", "k = 2", "xs.append(k)", "total = sum(xs)")
        s = self.check_steps([({"main": main}, None), ({"main": main.replace("k = 2", "k = 3")}, None),
                              ({}, ["main:main/n0"]), ({}, "all"), ({"main": main.replace("k = 2", "k = 4")}, None),
                              ({}, ["main:main/xs"])])
        self.assertEqual(s.view()["main:main/total"], "5")


if __name__ == "__main__":
    unittest.main()
