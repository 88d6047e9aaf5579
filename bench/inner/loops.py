"""What recording inner values (kernel/python/ripple_kernel/nested.py)
costs a loop of 10^6 iterations; prints a table.

Usage: python3 bench/inner/loops.py --old DIR [--rounds N] [--reps N] [--n N]

DIR is a tree without inner values (``git archive main | tar -x -C DIR``):
its kernel is the "old" column. Each workload is a main whose one loop
runs N times (default 10^6); a run recomputes everything ("invalidate":
"all") through the engine over the tests' stub kernel, and the figure is
the CPU time of the run (time.process_time: the machine is shared, and
CPU time counts only this process's work; the loop is nearly all of it). Each
(tree, workload) is measured in a child process of its own, the children
of a round in a rotated order so that drift of the machine (other work
on it) falls on both trees alike; a child warms up, then times --reps
runs and reports its median; the table shows the median over rounds.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

WORKLOADS = {
    "x = i * 2": "    for i in range(N):\n        x = i * 2\n",
    "3 statements": "    for i in range(N):\n        a = i * 2\n        b = a + 1\n        total += b\n",
    "if in the loop": "    for i in range(N):\n        if i % 3 == 0:\n            hits += 1\n",
    "f-string + append": "    for i in range(N):\n        s = f'{i:06d}'\n        parts.append(s)\n",
    "math call": "    for i in range(N):\n        r = math.sqrt(i) * 2.0\n",
    "row of a dict": "    for i in range(N):\n        row = {'k': i, 'v': i * 2}\n        name = row['k']\n        total += row['v']\n",
    "project function": "    for i in range(N):\n        y = helper(i)\n",
}


def main_source(body, n):
    return ("import math\n\n\ndef helper(v):\n    w = v * 2\n    return w + 1\n\n\ndef main():\n    N = %d\n    total = 0\n    hits = 0\n    parts = []\n" % n
            + body + "    return total + hits + len(parts)\n")


def child(tree, workload, reps, n):
    """Runs in a child: times the loop statement, prints the median (ns)."""
    sys.path.insert(0, os.path.join(tree, "kernel", "python", "tests"))
    from enginetest import Session

    s = Session({"main": main_source(WORKLOADS[workload], n)})
    times = []
    try:
        for rep in range(reps + 1):
            t0 = time.process_time_ns()
            run = s.run(invalidate="all")
            ns = time.process_time_ns() - t0
            if run.result != {"status": "complete"}:
                raise SystemExit("%s: %r" % (workload, run.result))
            if rep:  # the first is a warm-up
                times.append(ns)
    finally:
        s.close()
    print(json.dumps(statistics.median(times)))


def measure(tree, workload, reps, n):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", tree, workload, str(reps), str(n)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="a tree without inner values (git archive main)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n", type=int, default=10 ** 6)
    args = ap.parse_args()
    trees = {"old": os.path.abspath(args.old), "new": REPO}
    results = {(t, w): [] for t in trees for w in WORKLOADS}
    for r in range(args.rounds):
        order = [(t, w) for w in WORKLOADS for t in trees]
        order = order[r % len(order):] + order[:r % len(order)]
        for t, w in order:
            results[(t, w)].append(measure(trees[t], w, args.reps, args.n))
    print("loop of %d iterations, CPU time of a run, median of %d rounds x %d runs (ms)" % (args.n, args.rounds, args.reps))
    print("| loop body | old | new | cost |")
    print("|---|---:|---:|---:|")
    for w in WORKLOADS:
        old = statistics.median(results[("old", w)]) / 1e6
        new = statistics.median(results[("new", w)]) / 1e6
        print("| %s | %.1f | %.1f | %+.0f%% |" % (w, old, new, (new / old - 1) * 100))


if __name__ == "__main__":
    main()
