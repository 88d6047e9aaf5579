"""What the audit hook of ../shared/PROTOCOL.md 8.2 costs a run
(kernel/python/ripple_kernel/effects.py); prints a table.

Usage: python3 bench/effects/hook.py [--rounds N] [--reps N] [--quick]

Each workload is a run that recomputes everything ("invalidate": "all")
of a main through the engine over the test's stub kernel:
- statements: 1,000 cheap statements (``a7 = 7 * 2``), target < 5%;
- reads: one statement that reads 10,000 small files (open + read each),
  target < 15%;
- temp writes (for information): one statement that writes 1,000 small
  files under the temp dir, allowed in hold mode after a realpath each.
Modes, each measured in a child process of its own, the children of one
round in a rotated order so that drift of the machine (other work on it)
falls on every mode alike:
- off: no audit hook in the process (the kernel before effects.py);
- record: the hook installed, an explicit run (effects are recorded);
- hold: the hook installed, an automatic run (effects "hold").
A child warms up, then times --reps runs and reports its median; the table
shows the median over rounds, and each mode's cost against off.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTS = os.path.join(REPO, "kernel", "python", "tests")
MODES = ("off", "record", "hold")
FILES = 10000
WRITES = 1000


def statements_main():
    return "def main():\n" + "".join("    a%d = %d * 2\n" % (i, i) for i in range(1000))


def reads_main(data):
    return ("import os\n\n\ndef main():\n"
            "    names = [os.path.join(%r, n) for n in sorted(os.listdir(%r))]\n"
            "    total = 0\n"
            "    for name in names:\n"
            "        with open(name) as f:\n"
            "            total += len(f.read())\n" % (data, data))


def writes_main(out):
    return ("import os\n\n\ndef main():\n"
            "    for i in range(%d):\n"
            "        with open(os.path.join(%r, 'w%%d.txt' %% i), 'w') as f:\n"
            "            f.write('x')\n" % (WRITES, out))


def child(mode, workload, data, reps):
    """One mode's timings (seconds): [the lowest, the median] of reps
    runs after two, in CPU time of the process (the machine is shared:
    wall time counts other work's turns too)."""
    sys.path.insert(0, TESTS)
    import enginetest

    effects = enginetest.engine_module().effects
    if mode == "off":
        effects.GUARD.installed = True  # install() then adds no hook: the process has none
    if workload == "statements":
        source = statements_main()
    elif workload == "reads":
        source = reads_main(data)
    else:
        os.makedirs(os.path.join(data, "w"), exist_ok=True)
        tempfile.tempdir = data  # the writes' dir is the temp dir: allowed
        source = writes_main(os.path.join(data, "w"))
    s = enginetest.Session({"main": source})
    try:
        hold = "hold" if mode == "hold" else "allow"
        samples = []
        for rep in range(reps + 2):
            t0 = time.process_time()
            run = s.run(invalidate="all", effects=hold)
            elapsed = time.process_time() - t0
            if run.result != {"status": "complete"} or run.reasons():
                raise SystemExit("%s/%s: the run did not complete: %r %r" % (workload, mode, run.result, run.reasons()))
            if rep >= 2:
                samples.append(elapsed)
        return [min(samples), statistics.median(samples)]
    finally:
        s.close()


def measure(workload, data, rounds, reps):
    """{mode: [[lowest, median] of each round]}."""
    out = {m: [] for m in MODES}
    for r in range(rounds):
        order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]
        for mode in order:
            got = subprocess.run([sys.executable, __file__, "--child", mode, workload, data, str(reps)],
                                 check=True, capture_output=True, text=True)
            out[mode].append(json.loads(got.stdout.strip().splitlines()[-1]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", nargs=4)
    args = ap.parse_args()
    if args.child:
        mode, workload, data, reps = args.child
        print(json.dumps(child(mode, workload, data, int(reps))))
        return
    if args.quick:
        args.rounds, args.reps = 3, 5
    data = tempfile.mkdtemp(prefix="ripple-bench-effects-")
    try:
        for i in range(FILES):
            with open(os.path.join(data, "f%05d.txt" % i), "w") as f:
                f.write("line %d\n" % i)
        rows = []
        for workload, target in (("statements", 5), ("reads", 15), ("writes", None)):
            got = measure(workload, data, args.rounds, args.reps)
            # Per mode: the median over rounds of each child's lowest and
            # of each child's median.
            low = {m: statistics.median(x[0] for x in got[m]) for m in MODES}
            mid = {m: statistics.median(x[1] for x in got[m]) for m in MODES}
            for mode in MODES:
                costs = "" if mode == "off" else "%+.1f%% %+.1f%%" % (
                    (low[mode] - low["off"]) / low["off"] * 100, (mid[mode] - mid["off"]) / mid["off"] * 100)
                note = "" if mode == "off" or target is None else "target < %d%%" % target
                rows.append((workload, mode, "%.2f ms" % (low[mode] * 1e3), "%.2f ms" % (mid[mode] * 1e3), costs, note))
        print("%-11s %-7s %-10s %-10s %-15s %s" % ("workload", "mode", "lowest", "median", "vs off", "note"))
        print("-" * 70)
        for row in rows:
            print("%-11s %-7s %-10s %-10s %-15s %s" % row)
        print("CPU time of a run that recomputes everything; %d rounds x %d runs, modes alternated in children.\n"
              "statements: 1,000 cheap statements; reads: %d files read in one statement; writes: %d files\n"
              "written under the temp dir (allowed in hold mode)." % (args.rounds, args.reps, FILES, WRITES))
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
