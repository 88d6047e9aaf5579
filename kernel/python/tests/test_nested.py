"""Inner values (kernel/PROTOCOL.md "Inner values", ripple_kernel/nested.py):
the statements nested in a compound statement report their last values and
counts with its update, without changing what the code computes."""

import os
import sys
import unittest

from enginetest import EngineTestCase, JournalTestCase, Session


def src(*lines, header=""):
    return header + "def main():\n" + "".join("    %s\n" % line for line in lines)


def inner(update):
    """{line (1-based): (preview, count, panic)} of an update's inner values."""
    return {v["range"]["start"]["line"] + 1: (v.get("preview"), v["count"], v.get("panic")) for v in update.get("inner", ())}


class InnerValues(EngineTestCase):
    def latest(self, s, id_):
        return s.latest[0][id_]

    def test_loop_if_try_values_and_counts(self):
        s = self.session({"main": src(
            "total = 0",
            "for i in range(10):",            # line 3
            "    sq = i * i",
            "    total += sq",
            "    if i % 4 == 0:",
            "        label = 'four'",
            "    print(i) if i > 8 else None",
            "try:",                           # line 9
            "    ratio = total / 0",
            "except ZeroDivisionError as e:",
            "    ratio = None",
            "else:",
            "    never = 1",
            "finally:",
            "    done = 'yes'",
            "return total",
        )})
        run = s.run()
        self.assertEqual(run.output, "9\n")
        self.assertEqual(inner(self.latest(s, "main:main/#1")), {
            4: ("81", 10, None), 5: ("285", 10, None), 7: ("'four'", 3, None), 8: ("None", 10, None)})
        # The raising statement a try caught has no value; the handler's and
        # the finally's have theirs; the else did not run.
        self.assertEqual(inner(self.latest(s, "main:main/#2")), {12: ("None", 1, None), 16: ("'yes'", 1, None)})
        self.assertEqual(self.latest(s, "main:main/return")["payload"]["preview"], "285")

    def test_cheap_recording_reports_the_same(self):
        # The loop-counted segments (for NAME in range(...)), the names
        # read after the statement and the stored values agree with what
        # ran: a break, a continue, an exception caught in the body, a name
        # bound twice (stored: the last run's, not the name's at the end),
        # a del after the assignment, a rebound range and a huge range.
        s = self.session({"main": src(
            "y = 0",
            "for i in range(10):",            # line 3
            "    a = i * 2",
            "    b = a + 1",
            "    if i == 6:",
            "        break",
            "    if i % 2:",
            "        continue",
            "    c = a",
            "for j in range(4):",             # line 11
            "    d = j",
            "    y = d * 10",
            "    try:",
            "        e = 1 // (j - 2)",
            "    except ZeroDivisionError:",
            "        pass",
            "    y = -1",
            "    f = j",
            "    del f",
            "for k in range(10 ** 30, 10 ** 30 + 3):",  # line 21
            "    g = k - 10 ** 30",
            "range = lambda n: [n, n + 1]",   # line 23
            "for m in range(5):",
            "    h = m",
            "    q = 0",
            "    while q < m:",
            "        q += 1",
            "        if q == 6:",
            "            break",
        )})
        s.run()
        self.assertEqual(inner(self.latest(s, "main:main/#1")), {
            4: ("12", 7, None), 5: ("13", 7, None), 10: ("8", 3, None)})
        self.assertEqual(inner(self.latest(s, "main:main/#2")), {
            12: ("3", 4, None), 13: ("30", 4, None), 15: ("1", 3, None), 18: ("-1", 4, None), 19: ("3", 4, None)})
        self.assertEqual(inner(self.latest(s, "main:main/#3")), {22: ("2", 3, None)})
        self.assertEqual(inner(self.latest(s, "main:main/#4")), {
            25: ("6", 2, None), 26: ("0", 2, None), 28: ("6", 11, None)})

    def test_name_a_called_function_rebinds_is_stored(self):
        # bump rebinds x after the loop's x = i: the value shown is the
        # assignment's, not the name's after the loop (stored, not read).
        s = self.session({"main": src(
            "x = 0",
            "def bump():",
            "    nonlocal x",
            "    x += 100",
            "for i in range(3):",             # line 6
            "    x = i",
            "    y = i",
            "    bump()",
            "return x",
        )})
        s.run()
        self.assertEqual(inner(self.latest(s, "main:main/#2")), {
            7: ("2", 3, None), 8: ("2", 3, None), 9: ("None", 3, None)})
        self.assertEqual(self.latest(s, "main:main/return")["payload"]["preview"], "102")

    def test_loop_counted_segment_cut_by_an_exception(self):
        # The loop's iterations count the segment's starts; the cut of the
        # exception that ended the statement comes off them.
        s = self.session({"main": src(
            "for i in range(5):",
            "    a = i",
            "    b = 10 // (3 - i)",
            "    c = b",
        )})
        s.run()
        self.assertEqual(inner(self.latest(s, "main:main/#1")), {
            3: ("3", 4, None), 4: ("10", 3, "ZeroDivisionError: integer division or modulo by zero"),
            5: ("10", 3, None)})

    def test_ranges_are_code_points(self):
        s = self.session({"main": src("if True: é = 'ü'; n = 2", "z = 1")})
        s.run()
        items = self.latest(s, "main:main/#1")["inner"]
        self.assertEqual([(v["range"]["start"], v["range"]["end"]) for v in items], [
            ({"line": 1, "character": 13}, {"line": 1, "character": 20}),
            ({"line": 1, "character": 22}, {"line": 1, "character": 27}),
        ])
        self.assertEqual([v["type"] for v in items], ["builtins.str", "builtins.int"])

    def test_nested_loops_count_every_run(self):
        s = self.session({"main": src(
            "n = 0",
            "for i in range(3):",
            "    for j in range(4):",
            "        n += 1",
            "    k = 0",
            "    while k < 2:",
            "        k += 1",
        )})
        s.run()
        self.assertEqual(inner(self.latest(s, "main:main/#1")), {5: ("12", 12, None), 6: ("0", 3, None), 8: ("2", 6, None)})

    def test_nested_scopes_are_not_instrumented(self):
        # A def, a class and a lambda in a loop run when called: their
        # bodies report nothing; the calls' statements do.
        s = self.session({"main": src(
            "out = []",
            "for i in range(2):",
            "    def f(v):",
            "        w = v + 1",
            "        return w",
            "    class C:",
            "        attr = 5",
            "    g = lambda v: v * 2",
            "    out.append(f(i) + g(i) + C.attr)",
            "return out",
        )})
        s.run()
        lines = sorted(inner(self.latest(s, "main:main/#1")))
        self.assertEqual(lines, [9, 10])
        self.assertEqual(inner(self.latest(s, "main:main/#1"))[10], ("None", 2, None))
        self.assertEqual(self.latest(s, "main:main/return")["payload"]["preview"], "[6, 9]")

    def test_code_computes_the_same(self):
        # Chained and unpacking targets, an augmented attribute (no value to
        # show: reading it again could run a property), an annotation, a
        # walrus, a del, a with body; the namespace never holds the slots.
        header = ("import contextlib\n\n\nclass O:\n    n = 1\n\n\n")
        s = self.session({"main": src(
            "o = O()",
            "seen = []",
            "with contextlib.nullcontext(3) as c:",
            "    a = b = c + 1",
            "    p, q = a, b * 2",
            "    o.n += p",
            "    t: int = q",
            "    (w := t + 1)",
            "    tmp = 1",
            "    del tmp",
            "    seen.append(sorted(n for n in dir() if 'ripple_inner' in n))",
            "return (a, b, p, q, o.n, t, w, seen)",
            header=header,
        )})
        s.run()
        self.assertEqual(self.latest(s, "main:main/return")["payload"]["preview"], "(4, 4, 4, 8, 5, 8, 9, [[]])")
        got = inner(self.latest(s, "main:main/#1"))
        self.assertEqual(got[12], ("4", 1, None))   # a = b = c + 1
        self.assertEqual(got[13], ("(4, 8)", 1, None))
        self.assertEqual(got[14], (None, 1, None))  # o.n += p: counted, no value
        self.assertEqual(got[15], ("8", 1, None))
        self.assertEqual(got[16], ("9", 1, None))
        self.assertEqual(got[17], ("1", 1, None))
        self.assertNotIn(18, got)  # del reports nothing

    def test_counts_after_caught_exceptions_continue_and_break(self):
        # A statement's count is the runs that completed: an exception a try
        # caught cuts its run short at the statement that raised (the two on
        # one line too); a continue or a break skips what follows it.
        s = self.session({"main": src(
            "for x in [1, 0, 2, 0, 5]:",
            "    try:",
            "        a = 10 // x",
            "        b = a + 1",
            "        p = x; q = 1 // x",
            "    except ZeroDivisionError:",
            "        z = 'zero'",
            "    c = x",
            "    if x > 2:",
            "        break",
            "    d = x",
            "    if x == 0:",
            "        continue",
            "    e = x",
            "    try:",
            "        raise ValueError(x)",
            "        never = 1",
            "    except ValueError:",
            "        pass",
        )})
        s.run()
        got = inner(self.latest(s, "main:main/#1"))
        self.assertEqual(got[4], ("2", 3, None))    # a = 10 // x: 1, 2, 5 -> 2
        self.assertEqual(got[5], ("3", 3, None))    # b
        self.assertEqual(got[6][1:], (3, None))     # p = x (x = 1, 2, 5) and q = 1 // x: on one line
        self.assertEqual(got[8], ("'zero'", 2, None))
        self.assertEqual(got[9], ("5", 5, None))    # c
        self.assertEqual(got[12], ("0", 4, None))   # d: not after the break (x = 1, 0, 2, 0)
        self.assertEqual(got[15], ("2", 2, None))   # e: not after a continue (x = 0 twice)
        self.assertNotIn(18, got)                   # never runs

    def test_the_inner_statement_that_raised(self):
        s = self.session({"main": src(
            "xs = [2, 1, 0]",
            "out = []",
            "for x in xs:",
            "    r = 6 // x",
            "    out.append(r)",
        )})
        run = s.run()
        # The traceback is the user's, as without the instrumentation.
        self.assertEqual(run.diagnostics()[0]["stack"][0]["location"]["start"], {"line": 4, "character": 12})
        u = self.latest(s, "main:main/#1")
        self.assertEqual(u["payload"]["type"], "Panic")
        self.assertEqual(inner(u), {5: ("6", 2, "ZeroDivisionError: integer division or modulo by zero"), 6: ("None", 2, None)})
        s.compile({"main": src("for x in [0]:", "    r = 6 // x")})
        s.run()
        self.assertEqual(inner(self.latest(s, "main:main/#1")), {3: (None, 0, "ZeroDivisionError: integer division or modulo by zero")})

    def test_cached_and_moved(self):
        body = ("total = 0", "for i in range(3):", "    total += i")
        s = self.session({"main": src(*body)})
        s.run()
        s.compile({"main": src("pad = 0", *body)})
        run = s.run()
        moved = [u for u in run.updates() if u["expressionId"] == "main:main/#1"]
        self.assertEqual(len(moved), 1)
        self.assertTrue(moved[0]["fromCache"])
        self.assertEqual(inner(moved[0]), {5: ("3", 3, None)})
        self.assertEqual(moved[0]["inner"][0]["range"]["start"], {"line": 4, "character": 8})

    def test_many_constants_and_many_inner_statements(self):
        # Over 255 constants: the slots go through the namespace for the
        # run (the bytecode cannot name them as a constant), and leave it.
        # Over MAX_INNER inner statements: the first 256 report.
        consts = " + ".join("%d.5" % i for i in range(300))  # 300 constants: v + 0.5 + 1.5 ...
        many = ["    v%d = %d" % (i, i) for i in range(300)]
        s = self.session({"main": src(
            "v = 0", "if True:", "    xs = v + %s" % consts, "    left = [n for n in globals() if 'ripple_inner' in n]",
            "if True:", *many, "names = [n for n in globals() if 'ripple_inner' in n]",
            header="")})
        s.run()
        first = inner(self.latest(s, "main:main/#1"))
        self.assertEqual(first[4], ("45000.0", 1, None))
        self.assertEqual(first[5], ("['__ripple_inner__', '__ripple_inner_values__', '__ripple_inner_counts__']", 1, None))  # bound while it ran
        second = self.latest(s, "main:main/#2")["inner"]
        self.assertEqual(len(second), 256)
        self.assertEqual(second[-1]["preview"], "255")
        self.assertEqual(self.latest(s, "main:main/names")["payload"]["preview"], "[]")

    def test_script_top_level(self):
        s = Session({"job": "total = 0\nfor i in range(4):\n    total += i\n"})
        try:
            run = s.run([{"type": "ExplicitCall", "module": "job", "definedOnType": "", "name": "__main__",
                          "positionalArgumentsExpressions": []}])
            loop = [u for u in run.updates() if u["expressionId"].endswith("/#1")][-1]
            self.assertEqual(inner(loop), {3: ("6", 4, None)})
        finally:
            s.close()

    def test_script_global_rebound_by_a_call_is_stored(self):
        s = Session({"job": "x = 0\ndef bump():\n    global x\n    x += 100\nfor i in range(3):\n    x = i\n    bump()\n"})
        try:
            run = s.run([{"type": "ExplicitCall", "module": "job", "definedOnType": "", "name": "__main__",
                          "positionalArgumentsExpressions": []}])
            loop = [u for u in run.updates() if u["expressionId"].endswith("/#1")][-1]
            self.assertEqual(inner(loop), {6: ("2", 3, None), 7: ("None", 3, None)})
        finally:
            s.close()


class InnerValuesJournal(JournalTestCase):
    """A new kernel restores a compound statement's inner values with its
    value from the value journal."""

    def test_restored_with_the_value(self):
        text = src("total = 0", "for i in range(5):", "    print(i)", "    total += i")
        self.session({"main": text}).run()
        s = self.session({"main": "\n" + text})
        s.run()
        u = s.latest[0]["main:main/#1"]
        self.assertTrue(u["fromCache"])
        self.assertEqual(inner(u), {5: ("None", 5, None), 6: ("10", 5, None)})


if __name__ == "__main__":
    unittest.main()


class RandomLoops(unittest.TestCase):
    """Seeded random functions of loops, ifs and trys: ripple's run returns
    what a plain call of the function returns, and after an edit the
    incremental run reports the same values and inner values as a fresh
    engine (the caching invariant, inner values included)."""

    NAMES = ["a", "b", "c", "d"]

    def stmt(self, rng, depth, in_loop):
        n = self.NAMES
        r = rng.random()
        if depth < 2 and r < 0.25:
            head = rng.choice(["for i%d in range(%d):" % (depth, rng.randint(0, 6)),
                               "if %s %% %d == %d:" % (rng.choice(n), rng.randint(2, 3), rng.randint(0, 1)),
                               "try:", "while w%d < %d:" % (depth, rng.randint(1, 4))])
            lines = [head]
            if head.startswith("while"):
                lines = ["w%d = 0" % depth, head, "    w%d += 1" % depth]
            body = [l for _ in range(rng.randint(1, 3)) for l in self.stmt(rng, depth + 1, in_loop or head[:3] in ("for", "whi"))]
            lines += ["    " + l for l in body]
            if head == "try:":
                lines += ["except ZeroDivisionError:", "    %s = -1" % rng.choice(n)]
            elif head.startswith("if") and rng.random() < 0.5:
                lines += ["else:", "    %s = %d" % (rng.choice(n), rng.randint(0, 9))]
            return lines
        if in_loop and r < 0.32:
            return ["if %s %% 3 == 0:" % rng.choice(n), "    " + rng.choice(["continue", "break"])]
        t, x, y = rng.choice(n), rng.choice(n), rng.choice(n)
        return [rng.choice(["%s = %s + %d" % (t, x, rng.randint(0, 9)), "%s += %s %% 5" % (t, x),
                            "%s = %s // (%s %% 4)" % (t, x, y), "log.append(%s)" % x])]

    def program(self, rng):
        body = ["a, b, c, d = 1, 2, 3, 4", "log = []"]
        for _ in range(rng.randint(2, 4)):
            body += self.stmt(rng, 0, False)
        body.append("return (a, b, c, d, log[-5:], len(log))")
        return src(*body)

    @staticmethod
    def view(updates):
        out = {}
        for id_, u in updates.items():
            p = u["payload"]
            inner_view = [(v["range"]["start"]["line"], v.get("preview"), v["count"], v.get("panic")) for v in u.get("inner", ())]
            out[id_] = (p["type"], p.get("preview") or p.get("message"), inner_view)
        return out

    def test_random_programs(self):
        import random

        seed = int(os.environ.get("RIPPLE_INVARIANT_SEED", "1"))
        checked = 0
        for n in range(40):
            rng = random.Random(seed * 1000 + n)
            text = self.program(rng)
            # A plain call of the function, outside ripple.
            ns = {}
            exec(compile(text, "plain", "exec"), ns)
            try:
                want = ("Value", repr(ns["main"]()))
            except ZeroDivisionError as e:
                want = ("Panic", "ZeroDivisionError: " + str(e))
            s = Session({"main": text})
            try:
                s.run()
                ret = s.latest[0].get("main:main/return")
                got = ("Value", ret["payload"]["preview"]) if ret and ret["payload"]["type"] == "Value" else None
                if want[0] == "Panic":
                    panics = [u["payload"]["message"] for u in s.latest[0].values() if u["payload"]["type"] == "Panic"]
                    self.assertIn(want[1], panics, text)
                else:
                    self.assertEqual(got, want, text)
                # An edit of one constant, and a line inserted above the
                # rest half of the time: incremental against fresh.
                lines = text.split("\n")
                digits = [i for i, l in enumerate(lines) if any(ch.isdigit() for ch in l) and "return" not in l]
                i = rng.choice(digits)
                lines[i] = "".join(str((int(ch) + 1) % 10) if ch.isdigit() and k == max(j for j, c in enumerate(lines[i]) if c.isdigit()) else ch
                                   for k, ch in enumerate(lines[i]))
                if rng.random() < 0.5:
                    lines.insert(3, "    z = 0")  # everything below moves down a line
                edited = "\n".join(lines)
                s.compile({"main": edited})
                s.run()
                fresh = Session({"main": edited})
                try:
                    fresh.run()
                    self.assertEqual(self.view(s.latest[0]), self.view(fresh.latest[0]), edited)
                finally:
                    fresh.close()
                checked += 1
            finally:
                s.close()
                sys.modules.pop("main", None)
        self.assertEqual(checked, 40)
