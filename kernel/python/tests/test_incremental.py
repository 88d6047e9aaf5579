"""Edits of long functions: the run of an edit visits what changed.

The engine keeps, between runs of a frame, what it needs to check and visit
only the statements an edit can affect (rerun.RerunPlanner.sync,
frame.SyncState): the statements to check, the dirty ones, the merged
bindings of blocks of clean statements. Here sessions edit one statement
at a time in bodies longer than a block, with the shapes that need a visit
(del, a return, a panic, mutations, visualizations, interrupts, partial
runs, script frames), and every step is compared with a fresh run (the
invariant test's Driver). Small blocks (frame.BLOCK) make block edges
frequent.
"""

import random

from enginetest import EngineTestCase, engine_module, main_stack
from test_invariant import Driver, generate_and_check


def long_body(n, marker=0):
    lines = ["xs = []", "d = {}"]
    for i in range(n):
        k = i % 9
        if k == 0:
            lines.append("a%d = %d * 2 + %d" % (i, i, marker if i == n // 2 else 0))
        elif k == 1:
            lines.append("xs.append(a%d)" % (i - 1))
        elif k == 2:
            lines.append("b%d = len(xs) + a%d" % (i, i - 2))
        elif k == 3:
            lines.append("t%d = b%d" % (i, i - 1))
        elif k == 4:
            lines.append("del t%d" % (i - 1))
        elif k == 5:
            lines.append("d[%d] = b%d" % (i, i - 3))
        elif k == 6:
            lines.append("ys%d = xs" % i)
        elif k == 7:
            lines.append("ys%d.append(%d)" % (i - 1, i))
        else:
            lines.append("c%d = sum(xs) + len(d)" % i)
    lines.append("if a0 > 100:")
    lines.append("    return a0")
    lines.append("total = sum(xs)")
    return lines


def module(lines, header=""):
    return header + "def main():\n" + "".join("    %s\n" % line for line in lines)


HELPERS = "K = 1\n\n\ndef h(v):\n    return v + K\n"


class LongFunctions(EngineTestCase):
    def setUp(self):
        engine_module()  # installs the package's loader
        from ripple_kernel import frame as frame_module

        self.addCleanup(setattr, frame_module, "BLOCK", frame_module.BLOCK)
        frame_module.BLOCK = 4

    def driver(self, files):
        s = self.session()
        d = Driver(s)
        d.apply({"op": "compile", "files": files})
        d.apply({"op": "run", "stack": main_stack()})
        return s, d

    def test_single_statement_edits_match_a_fresh_run(self):
        lines = long_body(120)
        header = "import helpers\n\n"
        s, d = self.driver({"main": module(lines, header), "helpers": HELPERS})
        rng = random.Random(16)
        edits = 0
        for step in range(60):
            i = rng.randrange(len(lines) - 3)
            line = lines[i]
            if line.startswith("a") and "=" in line:
                lines[i] = line.split("+")[0] + "+ %d" % step
            elif line.startswith("b"):
                lines[i] = line.replace("len(xs)", "len(xs) * 1") if "* 1" not in line else line.replace("len(xs) * 1", "len(xs)")
            elif line.startswith("c"):
                lines[i] = line + " + %d" % (step % 2) if not line.endswith("+ 0") and not line.endswith("+ 1") else line[:-4]
            elif line.startswith("del"):
                lines[i] = "pass" if step % 2 else line
            else:
                continue
            edits += 1
            d.apply({"op": "compile", "files": {"main": module(lines, header)}})
            run = d.apply({"op": "run", "stack": main_stack()})
            self.assertLess(len(run.computed()), len(lines))
            if step % 7 == 3:
                d.apply({"op": "run", "stack": main_stack(), "invalidate": [rng.choice(sorted(s.latest[0]))]})
            if step % 11 == 5:
                d.apply({"op": "compile", "files": {"helpers": HELPERS.replace("K = 1", "K = %d" % step)}})
                d.apply({"op": "run", "stack": main_stack()})
        self.assertGreater(edits, 20)
        self.assertGreater(d.checked, edits)

    def test_a_return_that_moves(self):
        lines = ["a%d = %d" % (i, i) for i in range(60)]
        lines[30] = "if a0 > 100:"
        lines[31] = "    return a1"
        s, d = self.driver({"main": module(lines)})
        for value in ("1000", "-1", "1000", "-1"):
            lines[0] = "a0 = %s" % value
            d.apply({"op": "compile", "files": {"main": module(lines)}})
            d.apply({"op": "run", "stack": main_stack()})
        lines[45] = "return a2"
        d.apply({"op": "compile", "files": {"main": module(lines)}})
        d.apply({"op": "run", "stack": main_stack()})
        lines[45] = "a45 = 45"
        d.apply({"op": "compile", "files": {"main": module(lines)}})
        d.apply({"op": "run", "stack": main_stack()})
        self.assertEqual(d.checked, 7)

    def test_panics_interrupts_and_partial_runs(self):
        lines = ["a%d = %d" % (i, i) for i in range(80)]
        lines[40] = "z = 1 // a0"
        lines[41] = "w = z + 1"
        s, d = self.driver({"main": module(lines)})
        for step, value in enumerate(["0", "2", "0", "3"]):
            lines[0] = "a0 = %s" % value
            d.apply({"op": "compile", "files": {"main": module(lines)}})
            d.apply({"op": "run", "stack": main_stack(), "interrupt": ["region", 1 + step]})
            d.apply({"op": "run", "stack": main_stack()})
        # A partial run (wanted), then a whole run.
        lines[60] = "a60 = a59 + 1"
        s.compile({"main": module(lines)})
        d.files["main"] = module(lines)
        part = s.run(wanted=["main:main/a70"])
        self.assertEqual(part.result, {"status": "complete"})
        d.apply({"op": "run", "stack": main_stack()})
        self.assertGreaterEqual(d.checked, 6)

    def test_dependents_of_a_statement_that_ran_before_an_interrupt(self):
        # a0 runs again, the run is interrupted at m: d keeps its entry,
        # made from the old a0, and must run next time.
        lines = ["a%d = %d" % (i, i) for i in range(60)]
        lines[20] = "m = a0 + 1"
        lines[50] = "dd = a0 + 2"
        s, d = self.driver({"main": module(lines)})
        lines[0] = "a0 = 100"
        d.apply({"op": "compile", "files": {"main": module(lines)}})
        self.assertEqual(d.apply({"op": "run", "stack": main_stack(), "interrupt": ["region", 2]}).result, "interrupted")
        run = d.apply({"op": "run", "stack": main_stack()})
        self.assertEqual(run.computed(), ["main:main/m", "main:main/dd"])

    def test_a_reverted_edit_after_an_interrupt(self):
        # x was Pending when the run was interrupted before it, then the
        # edit is undone: x's old entry is good again, and its value must
        # be sent again (the client holds Pending).
        lines = ["a%d = %d" % (i, i) for i in range(60)]
        s, d = self.driver({"main": module(lines)})
        lines[40] = "a40 = 41"
        d.apply({"op": "compile", "files": {"main": module(lines)}})
        run = d.apply({"op": "run", "stack": main_stack(), "invalidate": ["main:main/a10"], "interrupt": ["region", 1]})
        self.assertEqual(run.result, "interrupted")
        lines[40] = "a40 = 40"
        d.apply({"op": "compile", "files": {"main": module(lines)}})
        run = d.apply({"op": "run", "stack": main_stack()})
        self.assertEqual(run.computed(), ["main:main/a10"])

    def test_visualized_statements_in_a_long_function(self):
        lines = ["a%d = %d" % (i, i) for i in range(50)]
        s = self.session({"main": module(lines)})
        vis = [{"visualizationId": "v1", "expressionId": "main:main/a20", "expression": "lambda v: v * 10"}]
        s.run(visualizations=vis)
        lines[10] = "a10 = 11"
        s.compile({"main": module(lines)})
        run = s.run(visualizations=vis)
        self.assertEqual(run.computed(), ["main:main/a10"])
        self.assertEqual([v["data"] for v in run.visualizations()], [])
        lines[20] = "a20 = 21"
        s.compile({"main": module(lines)})
        run = s.run(visualizations=vis)
        self.assertEqual([v["data"] for v in run.visualizations()], [210])

    def test_script_frames(self):
        lines = ["import helpers", "from helpers import h"] + ["s%d = h(%d)" % (i, i) for i in range(70)]
        files = {"main": "\n".join(lines) + "\n", "helpers": HELPERS}
        s = self.session()
        stack = main_stack(name="__main__")
        d = Driver(s)
        d.stack = stack

        def compile_(changed):
            d.files.update(changed)
            mods = [{"name": n, "path": n + ".py", "source": t} for n, t in changed.items()]
            s.engine.compile({"modules": mods, "removed": [], "scripts": ["main"], "lazy": True})

        compile_(files)
        d.check(s.run(stack))
        for step in range(12):
            k = 2 + (step * 17) % 70
            lines[k] = "s%d = h(%d) + %d" % (k - 2, k - 2, step)
            compile_({"main": "\n".join(lines) + "\n"})
            run = s.run(stack)
            d.check(run)
            self.assertEqual(len(run.computed()), 1)
            if step == 6:
                compile_({"helpers": HELPERS.replace("K = 1", "K = 2")})
                d.check(s.run(stack))
        self.assertEqual(d.checked, 14)

    def test_random_long_programs(self):
        # The invariant test's generator and operations on bodies longer
        # than a few blocks.
        checked = 0
        for seed in (16001, 16002, 16003):
            checked += generate_and_check(seed, 20, rng_program_size=(40, 90))
        self.assertGreater(checked, 30)


if __name__ == "__main__":
    import unittest

    unittest.main()
