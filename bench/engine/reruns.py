"""Statements re-run per edit: the cost of the conservative rules of 5.3.

Runs seeded random programs of the invariant test's generator
(kernel/python/tests/fuzzprog.py) through one engine and counts, for every
edit (one statement changed, inserted or deleted, a helper constant
changed), how many statements of main ran again. Prints the mean, median
and 90th percentile per edit and the total, so two engines (say the one
before the conservative rules and the one after) can be compared on the
same programs and edits.

Usage: python3 bench/engine/reruns.py [--engine DIR] [--fuzz DIR] [--seeds N] [--edits N]
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


if __name__ == "__main__":
    main()
