"""An edit whose statement produces an equal value stops propagation
(issue 27, ripple_kernel/equalstop.py): its dependents stay cached when
every name it binds is interchangeable with the old value, and run as
before otherwise. Every step is checked against a fresh engine."""

import unittest

from test_causes import Differential, compile_files, fresh_view
from test_invariant import view_of
from enginetest import main_stack


def body(lines):
    return {"main": "def main():\n" + "".join("    %s\n" % line for line in lines)}


def ids(*names):
    return ["main:main/%s" % n for n in names]


class Edits(Differential):
    def edits(self, versions):
        """Run each version of main's body, checking it against a fresh
        engine; returns the ids computed by the last run."""
        s = self.session(compile_files=False)
        files = {}
        run = None
        for i, lines in enumerate(versions):
            files.update(body(lines))
            compile_files(s, body(lines), ())
            run = s.run(main_stack())
            result, want = fresh_view(dict(files), main_stack(), ())
            self.assertEqual(run.result, result, "step %d" % i)
            got = view_of(s.latest.get(0, {}))
            for expression_id, value in sorted(want.items()):
                self.assertEqual(got.get(expression_id), value, "step %d, %s" % (i, expression_id))
        return run.computed()


class EqualValueStops(Edits):
    def test_an_equal_int_stops(self):
        a = ["x = 0", "y = x + 1", "z = y * 2"]
        b = ["x = 1 - 1", "y = x + 1", "z = y * 2"]
        self.assertEqual(self.edits([a, b]), ids("x"))

    def test_an_equal_result_stops_midway(self):
        a = ["n = 4", "m = n % 2", "w = m + 10", "v = n + 1"]
        b = ["n = 6", "m = n % 2", "w = m + 10", "v = n + 1"]
        self.assertEqual(self.edits([a, b]), ids("n", "m", "v"))

    def test_equal_strings_and_tuples_stop(self):
        a = ["s = 'ab'", "t = (1, s, None, b'x')", "u = t[1] + '!'"]
        b = ["s = 'a' + 'b'", "t = (1, s, None, b'x')", "u = t[1] + '!'"]
        c = ["s = 'a' + 'b'", "t = (1, 'ab', None, b'x')", "u = t[1] + '!'"]
        self.assertEqual(self.edits([a, b]), ids("s"))
        self.assertEqual(self.edits([a, c]), ids("s", "t"))

    def test_a_changed_value_still_propagates(self):
        a = ["x = 0", "y = x + 1", "z = y * 2"]
        b = ["x = 1 - 1", "y = x + 1", "z = y * 2"]
        c = ["x = 2", "y = x + 1", "z = y * 2"]
        self.assertEqual(self.edits([a, b, c]), ids("x", "y", "z"))

    def test_equal_but_of_another_type_propagates(self):
        a = ["x = 0", "y = repr(x)"]
        b = ["x = False", "y = repr(x)"]
        self.assertEqual(self.edits([a, b]), ids("x", "y"))

    def test_negative_zero_and_nan_propagate(self):
        a = ["x = 0.0", "y = str(x)"]
        b = ["x = -0.0", "y = str(x)"]
        self.assertEqual(self.edits([a, b]), ids("x", "y"))
        a = ["x = float('nan')", "y = str(x)"]
        b = ["x = float('nan') + 0", "y = str(x)"]
        self.assertEqual(self.edits([a, b]), ids("x", "y"))

    def test_a_mutable_value_propagates(self):
        a = ["x = [0]", "y = x", "y.append(1)", "n = len(x)"]
        b = ["x = [1 - 1]", "y = x", "y.append(1)", "n = len(x)"]
        computed = self.edits([a, b])
        self.assertIn("main:main/y", computed)
        self.assertIn("main:main/n", computed)

    def test_an_equal_value_read_by_a_mutation_runs_its_chain(self):
        # The mutation's chain starts before k: equality cannot skip it (the
        # creator of xs would run after the mutation was decided), so the
        # rule does not act; the values are right.
        a = ["xs = []", "k = 2", "xs.append(k)", "n = len(xs)", "t = sum(xs)"]
        b = ["xs = []", "k = 1 + 1", "xs.append(k)", "n = len(xs)", "t = sum(xs)"]
        self.assertIn("main:main/t", self.edits([a, b]))

    def test_a_loop_binding_equal_values_stops(self):
        a = ["for i in (0, 1, 2):\n        last = i", "u = last * 2", "w = i"]
        b = ["for i in (0, 1, 1 + 1):\n        last = i", "u = last * 2", "w = i"]
        self.assertEqual(self.edits([a, b]), ids("#1"))


class TupleTargetsPerName(Edits):
    def test_readers_of_an_unchanged_name_stay(self):
        a = ["a, b = 1, 2", "x = a * 10", "y = b * 10"]
        b = ["a, b = 1, 3", "x = a * 10", "y = b * 10"]
        self.assertEqual(self.edits([a, b]), ids("a,b", "y"))

    def test_through_a_call_and_transitively(self):
        a = ["def pair():\n        return 1, 2", "a, b = pair()", "x = a + 1", "y = b + 1", "z = x + 1"]
        b = ["def pair():\n        return 1, 5", "a, b = pair()", "x = a + 1", "y = b + 1", "z = x + 1"]
        self.assertEqual(sorted(self.edits([a, b])), sorted(ids("#1", "a,b", "y")))

    def test_a_reader_of_both_runs(self):
        a = ["a, b = 1, 2", "x = a + b", "y = a * 2"]
        b = ["a, b = 1, 3", "x = a + b", "y = a * 2"]
        self.assertEqual(self.edits([a, b]), ids("a,b", "x"))

    def test_both_changed_run_both(self):
        a = ["a, b = 1, 2", "x = a * 10", "y = b * 10"]
        b = ["a, b = 4, 3", "x = a * 10", "y = b * 10"]
        self.assertEqual(self.edits([a, b]), ids("a,b", "x", "y"))

    def test_a_mutable_name_beside_an_equal_one(self):
        a = ["a, b = 1, [2]", "x = a * 10", "y = b", "y.append(3)", "n = len(b)"]
        b = ["a, b = 1, [5]", "x = a * 10", "y = b", "y.append(3)", "n = len(b)"]
        computed = self.edits([a, b])
        self.assertNotIn("main:main/x", computed)
        self.assertIn("main:main/n", computed)


if __name__ == "__main__":
    unittest.main()
