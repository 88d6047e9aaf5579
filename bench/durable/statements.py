"""What the value journal costs each statement of a run (issue 26).

Runs a generated main of N statements (each sleeps S) on the kernel's
engine in this process (the engine tests' harness, no server), with the
value journal on and off, alternated, and prints a table: the run's wall
time (median of the rounds), the difference per statement, and what the
journal did during the runs: the checkpoints written between statements
(a long run's finished statements are written every 100 ms), their
number and their cost on the run's thread (pickling; the SQLite commit
is a writer thread's), and the cost of the per-statement check itself.

Run it from the repository root:

    python3 bench/durable/statements.py            # -n 1000 -sleep 0.001 -rounds 5
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "kernel", "python", "tests"))

from enginetest import Session  # noqa: E402  (after the path)


def source(n: int, sleep: float) -> str:
    lines = ["import time", "", "", "def main():"]
    lines += ["    v%d = (time.sleep(%r), %d)[1]" % (i, sleep, i) for i in range(n)]
    return "\n".join(lines) + "\n"


class Counter:
    """Wraps Journal.finished and Journal.write to time them."""

    def __init__(self) -> None:
        self.finished_ns = 0
        self.finished_calls = 0
        self.writes = 0
        self.write_ns = 0

    def install(self, journal: object) -> None:
        finished, write = journal.finished, journal.write  # type: ignore[attr-defined]

        def timed_finished(*a: object) -> None:
            t = time.perf_counter_ns()
            finished(*a)
            self.finished_ns += time.perf_counter_ns() - t
            self.finished_calls += 1

        def timed_write(*a: object) -> object:
            t = time.perf_counter_ns()
            out = write(*a)
            self.write_ns += time.perf_counter_ns() - t
            self.writes += 1
            return out

        journal.finished, journal.write = timed_finished, timed_write  # type: ignore[attr-defined]


def one_run(src: str, journal: bool, counter: Counter) -> float:
    tmp = tempfile.mkdtemp(prefix="ripple-bench-statements-")
    if journal:
        os.environ["RIPPLE_VALUES_DB"] = os.path.join(tmp, "values.db")
    else:
        os.environ.pop("RIPPLE_VALUES_DB", None)
    sys.modules.pop("main", None)
    s = Session({"main": src})
    try:
        if s.engine.journal is not None:
            counter.install(s.engine.journal)
        t = time.perf_counter()
        r = s.run()
        took = time.perf_counter() - t
        if r.result != {"status": "complete"}:
            raise SystemExit("run failed: %r" % (r.result,))
        return took
    finally:
        s.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000, help="statements of main")
    ap.add_argument("-sleep", type=float, default=0.001, help="seconds each statement sleeps")
    ap.add_argument("-rounds", type=int, default=5, help="runs with and without the journal, alternated")
    a = ap.parse_args()
    src = source(a.n, a.sleep)
    on, off = [], []
    counter = Counter()
    one_run(src, True, Counter())  # warm-up: imports, code caches
    for _ in range(a.rounds):
        on.append(one_run(src, True, counter))
        off.append(one_run(src, False, counter))
    med_on, med_off = statistics.median(on), statistics.median(off)
    runs = a.rounds
    rows = [
        ("run of %d statements of %g ms, journal on (median of %d)" % (a.n, a.sleep * 1e3, runs), "%.1f ms" % (med_on * 1e3)),
        ("same, journal off", "%.1f ms" % (med_off * 1e3)),
        ("difference per statement", "%.1f us" % ((med_on - med_off) / a.n * 1e6)),
        ("checkpoints written per run (between statements)", "%.1f" % (counter.writes / runs)),
        ("one checkpoint on the run's thread (keys, records, pickle)", "%.2f ms" % (counter.write_ns / max(counter.writes, 1) / 1e6)),
        ("Journal.finished per statement, checkpoints included", "%.1f us" % (counter.finished_ns / max(counter.finished_calls, 1) / 1e3)),
    ]
    width = max(len(r[0]) for r in rows)
    print("%-*s  %s" % (width, "value journal, per statement of a run", "measured"))
    for name, value in rows:
        print("%-*s  %s" % (width, name, value))


if __name__ == "__main__":
    main()
