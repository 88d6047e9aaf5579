"""Issue 27's precision by run-time facts (observe.py): a call that only
reads the object it is given does not re-create the object when the call
re-runs, and one that stores into it (now, or in its last run) still does,
every value checked against a fresh engine (test_causes.Differential)."""

import importlib.util
import os
import subprocess
import unittest

from enginetest import main_stack
from test_causes import Differential, compile_files, fresh_view
from test_invariant import view_of

HERE = os.path.dirname(os.path.abspath(__file__))

PEEK = "class P:\n    def __init__(self):\n        self.v = [1]\n\n\ndef peek(p):\n    return p.v[0]\n"
GROW = PEEK + ("\n\ndef grow(p, n):\n    if n > 1:\n        p.v.append(n)\n    return len(p.v)\n"
               "\n\ndef deep(p, n):\n    if n > 1:\n        p.d['k'][1].append(n)\n    return n\n")


def body(*lines):
    return "def main():\n" + "".join("    " + line + "\n" for line in lines)


class ReadsItsArgument(Differential):
    def ran(self, steps):
        """check_steps, and the ids the last step's run computed."""
        s = self.check_steps(steps[:-1])
        changed, _ = steps[-1]
        compile_files(s, changed, ())
        run = s.run(main_stack())
        files = dict(s.files)
        _, want = fresh_view(files, main_stack(), ())
        got = view_of(s.latest.get(0, {}))
        for expression_id, value in sorted(want.items()):
            self.assertEqual(got.get(expression_id), value, expression_id)
        return sorted(run.computed())

    def test_a_reading_call_does_not_recreate_its_argument(self):
        main = body("from helpers import P, peek", "p = P()", "a = peek(p)", "b = 1", "c = peek(p) + b")
        ran = self.ran([({"helpers": PEEK, "main": main}, None), ({"main": main.replace("b = 1", "b = 2")}, None)])
        self.assertEqual(ran, ["main:main/b", "main:main/c"])

    def test_a_call_that_starts_storing_is_seen_by_later_readers(self):
        # Its last run left p alone: p is not re-created, but the readers
        # after it run (it may store now, and does).
        main = body("from helpers import P, grow", "p = P()", "a = len(p.v)", "b = 1", "c = grow(p, b)",
                    "w = len(p.v)")
        steps = [({"helpers": GROW, "main": main}, None)]
        for old, new in [("b = 1", "b = 2"), ("b = 2", "b = 3"), ("b = 3", "b = 1"), ("b = 1", "b = 4")]:
            main = main.replace(old, new)
            steps.append(({"main": main}, None))
        self.check_steps(steps)

    def test_a_call_that_stored_last_time_recreates_its_argument(self):
        main = body("from helpers import P, grow", "p = P()", "b = 2", "c = grow(p, b)")
        ran = self.ran([({"helpers": GROW, "main": main}, None), ({"main": main.replace("b = 2", "b = 3")}, None)])
        self.assertIn("main:main/p", ran)

    def test_a_store_deep_inside_the_argument_is_a_mutation(self):
        helpers = GROW.replace("self.v = [1]", "self.v = [1]\n        self.d = {'k': (0, [])}")
        main = body("from helpers import P, deep", "p = P()", "b = 1", "c = deep(p, b)", "n = len(p.d['k'][1])")
        steps = [({"helpers": helpers, "main": main}, None)]
        for old, new in [("b = 1", "b = 2"), ("b = 2", "b = 3"), ("b = 3", "b = 0")]:
            main = main.replace(old, new)
            steps.append(({"main": main}, None))
        self.check_steps(steps)

    def test_a_method_that_stores_into_its_receiver_sometimes(self):
        helpers = PEEK + "\n\nclass Q(P):\n    def add(self, n):\n        if n % 2:\n            self.v.append(n)\n        return len(self.v)\n"
        main = body("from helpers import Q", "q = Q()", "a = q.v[0]", "n = 2", "c = q.add(n)", "w = sum(q.v)")
        steps = [({"helpers": helpers, "main": main}, None)]
        for old, new in [("n = 2", "n = 3"), ("n = 3", "n = 5"), ("n = 5", "n = 4"), ("n = 4", "n = 6")]:
            main = main.replace(old, new)
            steps.append(({"main": main}, None))
        self.check_steps(steps + [({}, ["main:main/c"]), ({}, "all")])

    def test_recompute_of_a_storing_call(self):
        main = body("from helpers import P, grow", "p = P()", "b = 2", "c = grow(p, b)", "w = len(p.v)")
        self.check_steps([({"helpers": GROW, "main": main}, None), ({}, ["main:main/c"]), ({}, ["main:main/c"])])

    def test_a_flat_list_given_to_a_storing_function(self):
        helpers = "def put(xs, n):\n    if n % 2:\n        xs.append(n)\n    return len(xs)\n"
        main = body("from helpers import put", "xs = [1]", "n = 2", "k = put(xs, n)", "m = sum(xs)")
        steps = [({"helpers": helpers, "main": main}, None)]
        for old, new in [("n = 2", "n = 3"), ("n = 3", "n = 4"), ("n = 4", "n = 5"), ("n = 5", "n = 7")]:
            main = main.replace(old, new)
            steps.append(({"main": main}, None))
        self.check_steps(steps)

    def test_an_object_the_last_run_did_not_observe_is_not_clean(self):
        # Last run f was len (it cannot mutate xs: xs was not observed)
        # and the closure h appended to xs unseen; now f is a project
        # function: xs must still be re-created before t runs again.
        helpers = "def total(xs):\n    s = 0\n    for v in xs:\n        s += v\n    return s\n"
        main = body("from helpers import total", "xs = [1]", "h = lambda: xs.append(9)", "f = len",
                    "t = f(xs) + (h() or 0)", "n = len(xs)")
        self.check_steps([({"helpers": helpers, "main": main}, None),
                          ({"main": main.replace("f = len", "f = total")}, None)])


class Fingerprints(unittest.TestCase):
    """observe.fingerprint: the same state before and after a read, another
    after any store, None where it cannot see the state."""

    def setUp(self):
        import enginetest

        enginetest.engine_module()
        from ripple_kernel import observe

        self.observe = observe

    def state(self, obj):
        return self.observe.fingerprint(obj, self.observe._Budget())

    def changed(self, obj, act):
        before = self.state(obj)
        self.assertIsNotNone(before)
        act(obj)
        after = self.state(obj)
        self.assertIsNotNone(after)
        return not self.observe.same(before, after)

    def test_reads_and_stores(self):
        import collections

        class P:
            def __init__(self):
                self.v = [1]
                self.d = {"k": (0, [2])}
                self.x = 0.0

        Pair = collections.namedtuple("Pair", "a b")
        self.assertFalse(self.changed(P(), lambda p: (p.v[0], dict(p.d), p.x)))
        self.assertTrue(self.changed(P(), lambda p: p.d["k"][1].append(3)))  # deep inside a tuple
        self.assertTrue(self.changed(P(), lambda p: setattr(p, "v", [1])))  # an equal list, another object
        self.assertTrue(self.changed(P(), lambda p: setattr(p, "x", -0.0)))  # a float by its bits
        self.assertTrue(self.changed(P(), lambda p: setattr(p, "y", None)))
        self.assertTrue(self.changed({1: [2]}, lambda d: d[1].append(2)))
        self.assertTrue(self.changed(Pair(1, [2]), lambda t: t.b.append(3)))
        self.assertFalse(self.changed(Pair(1, [2]), lambda t: t.a + len(t.b)))
        self.assertTrue(self.changed(bytearray(b"ab"), lambda b: b.__setitem__(0, 0)))
        shared = [1]
        self.assertTrue(self.changed([shared, shared], lambda xs: xs.__setitem__(1, [1])))  # aliasing is state

    def test_what_it_cannot_see(self):
        class Slotted:
            __slots__ = ("a",)

        class MyList(list):
            pass

        self.assertIsNone(self.state(Slotted()))
        self.assertIsNone(self.state(MyList([1])))
        self.assertIsNone(self.state([iter([1])]))
        n = 1
        self.assertIsNone(self.state({"f": lambda: n}))  # a closure's cells
        self.assertIsNone(self.state(list(range(5000))))  # beyond the budget


class RangeIsNoMutator(Differential):
    def test_iterating_range_does_not_rerun_its_other_readers(self):
        main = body("s = 0", "for i in range(3):\n        s += i", "r = list(range(5))")
        s = self.check_steps([({"main": main}, None)])
        s.compile({"main": main.replace("range(3)", "range(4)")})
        run = s.run(main_stack())
        self.assertNotIn("main:main/r", run.computed())


PANDAS_MAIN = body("import pandas as pd", "df = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})", "c = list(df.columns)",
                   "r = 2", "d = df.head(r)")
PANDAS_STORE = ("def put(df, r):\n    if r > 1:\n        df.loc[0, 'a'] = r\n    return int(df['a'].sum())\n")


class Pandas(Differential):
    """Run where pandas imports: by this python, else by Debian's
    /usr/bin/python3 in a child (.ci/run installs python3-pandas)."""

    def setUp(self):
        super().setUp()
        if importlib.util.find_spec("pandas") is None:
            self.skipTest("pandas: run by PandasElsewhere")

    def test_head_does_not_recreate_the_frame(self):
        s = self.check_steps([({"main": PANDAS_MAIN}, None)])
        s.compile({"main": PANDAS_MAIN.replace("r = 2", "r = 1")})
        run = s.run(main_stack())
        self.assertEqual(sorted(run.computed()), ["main:main/d", "main:main/r"])

    def test_a_function_storing_into_the_frame(self):
        main = body("import pandas as pd", "from helpers import put", "df = pd.DataFrame({'a': [1, 2]})",
                    "r = 1", "t = put(df, r)", "u = int(df['a'].sum())")
        steps = [({"helpers": PANDAS_STORE, "main": main}, None)]
        for old, new in [("r = 1", "r = 5"), ("r = 5", "r = 6"), ("r = 6", "r = 0")]:
            main = main.replace(old, new)
            steps.append(({"main": main}, None))
        self.check_steps(steps)

    def test_frame_and_array_states(self):
        import enginetest

        enginetest.engine_module()
        import numpy as np
        import pandas as pd
        from ripple_kernel import observe

        def changed(obj, act):
            before = observe.fingerprint(obj, observe._Budget())
            act(obj)
            return not observe.same(before, observe.fingerprint(obj, observe._Budget()))

        frame = lambda: pd.DataFrame({"a": [1, 2], "b": [3, 4]})  # noqa: E731
        for act in (lambda d: d.head(1), lambda d: list(d.columns), lambda d: d.describe(), lambda d: d["a"].sum(),
                    lambda d: d.groupby("a").sum()):
            self.assertFalse(changed(frame(), act))
        for act in (lambda d: d.loc.__setitem__((0, "a"), 9), lambda d: d.insert(0, "z", 1),
                    lambda d: d.sort_values("a", ascending=False, inplace=True), lambda d: d.pop("a"),
                    lambda d: setattr(d.index, "name", "i"), lambda d: d.attrs.__setitem__("k", 1),
                    lambda d: d.values.__setitem__((0, 0), 7), lambda d: d.__setitem__("c", 1)):
            self.assertTrue(changed(frame(), act))
        self.assertFalse(changed(np.arange(5), lambda a: a.sum()))
        self.assertTrue(changed(np.arange(5), lambda a: a.__setitem__(0, 9)))
        self.assertTrue(changed(np.arange(5), lambda a: setattr(a, "shape", (5, 1))))

    def test_an_in_place_method(self):
        main = body("import pandas as pd", "df = pd.DataFrame({'a': [3, 1, 2]})", "k = 'a'",
                    "df.sort_values(k, inplace=True)", "f = df['a'].tolist()")
        self.check_steps([({"main": main}, None), ({"main": main.replace("k = 'a'", "k = 'a' + ''")}, None),
                          ({}, ["main:main/#1"])])


class PandasElsewhere(unittest.TestCase):
    def test_pandas_cases_with_a_python_that_has_pandas(self):
        if importlib.util.find_spec("pandas") is not None:
            return  # Pandas ran here
        python = "/usr/bin/python3"
        has = os.path.exists(python) and subprocess.run([python, "-c", "import pandas"], capture_output=True).returncode == 0
        if not has:
            if os.environ.get("CI") == "true":
                self.fail("no python3 with pandas (.ci/run installs python3-pandas)")
            self.skipTest("no python3 with pandas")
        out = subprocess.run([python, "-m", "unittest", "test_observe.Pandas"], cwd=HERE, capture_output=True,
                             text=True, timeout=600)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("Ran 4 tests", out.stderr)
        self.assertNotIn("skipped", out.stderr)


if __name__ == "__main__":
    unittest.main()
