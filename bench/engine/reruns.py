"""Statements re-run per edit: the cost of the conservative rules of 5.3.

Runs seeded random programs of the invariant test's generator
(kernel/python/tests/fuzzprog.py) through one engine and counts, for every
edit (one statement changed, inserted or deleted, a helper constant
changed), how many statements of main ran again. Prints the mean, median
and 90th percentile per edit and the total, so two engines (say the one
before the conservative rules and the one after) can be compared on the
same programs and edits.

With --fresh, it runs instead the over-invalidation cases of
fresh_cases.py (issue 27): for each, an edit and the statements that stay
fresh; it prints per class how many of those re-ran, and how many values
differ from a fresh engine's (missed re-runs: must be 0).

Usage: python3 bench/engine/reruns.py [--engine DIR] [--fuzz DIR] [--seeds N] [--edits N] [--fresh]
  --engine DIR: the directory holding ripple_kernel/ (or, for older engines,
  engine.py) (default kernel/python)
  --fuzz DIR: the directory of fuzzprog.py (default kernel/python/tests)
"""

import argparse
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTS = os.path.join(REPO, "kernel", "python", "tests")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default=os.path.join(REPO, "kernel", "python"))
    ap.add_argument("--fuzz", default=TESTS)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--edits", type=int, default=25)
    ap.add_argument("--fresh", action="store_true", help="the stays-fresh cases of fresh_cases.py")
    args = ap.parse_args()
    sys.path.insert(0, args.fuzz)
    import fuzzprog  # first: enginetest puts its own directory first on the path

    sys.path.insert(1, TESTS)
    import enginetest

    engine_dir = os.path.abspath(args.engine)
    if os.path.exists(os.path.join(engine_dir, "engine.py")):
        enginetest.ENGINE_PATH = os.path.join(engine_dir, "engine.py")  # the flat layout of older engines
    else:
        enginetest.KERNEL_DIR = engine_dir  # the ripple_kernel package

    if args.fresh:
        stays_fresh(args, enginetest)
        return
    counts, sizes = [], []
    for seed in range(1, args.seeds + 1):
        rng = random.Random(seed)
        gen = fuzzprog.Generator(rng)
        program = gen.program(rng.randint(10, 60))
        s = enginetest.Session(program.sources())
        try:
            s.run()
            for _ in range(args.edits):
                new, _kind = gen.edit(program)
                changed = {k: v for k, v in new.sources().items() if program.sources().get(k) != v}
                program = new
                if not changed:
                    continue
                s.compile(changed)
                run = s.run()
                counts.append(len(set(run.computed())))
                sizes.append(len(program.stmts))
        finally:
            s.close()
    counts.sort()
    print("engine %s, generator %s" % (args.engine, args.fuzz))
    print("%d edits of %d programs (mean %.1f statements in main)" % (len(counts), args.seeds, statistics.mean(sizes)))
    print("statements re-run per edit: mean %.2f, median %d, p90 %d, total %d"
          % (statistics.mean(counts), statistics.median(counts), counts[int(0.9 * (len(counts) - 1))], sum(counts)))


def _plain(preview):
    """A preview without object addresses (they differ between engines)."""
    import re

    return re.sub(r" at 0x[0-9a-f]+", " at 0x?", preview) if isinstance(preview, str) else preview


def stays_fresh(args, enginetest):
    """The --fresh table (the module doc)."""
    import importlib.util

    sys.path.insert(0, HERE)
    from fresh_cases import CASES

    table = {}  # class -> [stays fresh, re-ran, missed, cases]
    for kind, helper, body, (old, new), fresh_names in CASES:
        if kind in ("numpy", "pandas") and importlib.util.find_spec(kind) is None:
            continue
        before = "def main():\n" + "".join("    " + line.replace("\n", "\n    ") + "\n" for line in body)
        after = before.replace(old, new, 1)
        assert after != before, (kind, old)
        files = {"main": before}
        if helper is not None:
            files["helpers"] = helper
        s = enginetest.Session(files)
        try:
            s.run()
            s.compile({"main": after})
            run = s.run()
            ran = set(run.computed())
            got = s.view()
        finally:
            s.close()
        files["main"] = after
        ref = enginetest.Session(files)
        try:
            ref.run()
            want = ref.view()
        finally:
            ref.close()
        row = table.setdefault(kind, [0, 0, 0, 0])
        row[0] += len(fresh_names)
        row[1] += sum(1 for n in fresh_names if "main:main/" + n in ran)
        row[2] += sum(1 for k, v in want.items() if _plain(got.get(k)) != _plain(v))
        row[3] += 1
    print("engine %s: statements that stay fresh after an edit (fresh_cases.py)" % args.engine)
    print("%-20s %6s %10s %8s %7s %7s" % ("class", "cases", "stay fresh", "re-ran", "%", "missed"))
    total = [0, 0, 0, 0]
    for kind, row in table.items():
        print("%-20s %6d %10d %8d %6.0f%% %7d" % (kind, row[3], row[0], row[1], 100.0 * row[1] / row[0], row[2]))
        total = [a + b for a, b in zip(total, row)]
    print("%-20s %6d %10d %8d %6.0f%% %7d" % ("all", total[3], total[0], total[1], 100.0 * total[1] / total[0], total[2]))


if __name__ == "__main__":
    main()
