"""How should --watch's hot path run the affected tests again in a warm
kernel? Two ways, measured in one process, alternated, medians:

  session: a new pytest session restricted to the node ids (pytest.main),
           the modules already imported (what a kernel would do without
           keeping its session: configuration, collection of the affected
           test modules, then the tests);
  items:   the items of the session that is already open, run again with
           pytest's runtestprotocol (what ripple does: batch/hot.go).

    python3 bench/watchtests/rerun.py                 # sympy's test_sets.py, 3 tests, 15 rounds
    python3 bench/watchtests/rerun.py -n 5 -r 21 PATH_TO_TEST_MODULE

The tests picked are the cheapest of the module (their own time is the
same either way; the difference is the overhead).
"""

import argparse
import contextlib
import os
import statistics
import sys
import time

import pytest
from _pytest.runner import runtestprotocol


def main():
    ap = argparse.ArgumentParser()
    default = os.path.join(os.path.dirname(__import__("sympy").__file__), "sets", "tests", "test_sets.py")
    ap.add_argument("module", nargs="?", default=default)
    ap.add_argument("-n", type=int, default=3, help="tests re-run")
    ap.add_argument("-r", type=int, default=15, help="rounds of each way")
    a = ap.parse_args()
    items, root, ran = [], [], []

    class Keep:
        def pytest_collection_finish(self, session):
            if not items:
                items[:] = session.items
                root.append(str(session.config.rootpath))

        def pytest_runtest_logreport(self, report):
            if report.when == "call":
                ran.append(report.nodeid)

    args = ["-q", "-p", "no:cacheprovider"]
    quiet = open(os.devnull, "w")
    with contextlib.redirect_stdout(quiet):
        pytest.main(args + [a.module], plugins=[Keep()])
    timed = []
    for it in items:
        t0 = time.perf_counter()
        runtestprotocol(it, log=False, nextitem=None)
        timed.append((time.perf_counter() - t0, it))
    timed.sort(key=lambda x: x[0])
    sel = [it for _, it in timed[: a.n]]
    sel.sort(key=items.index)
    ids = [it.nodeid for it in sel]
    os.chdir(root[0])  # node ids are relative to the rootdir
    times = {"session": [], "items": []}
    for _ in range(a.r):
        for way in ("session", "items"):
            t0 = time.perf_counter()
            if way == "session":
                del ran[:]
                with contextlib.redirect_stdout(quiet):
                    rc = pytest.main(args + ids, plugins=[Keep()])
                if rc != 0 or len(ran) != len(ids):
                    sys.exit("the new session ran %d of the %d tests (exit %s)" % (len(ran), len(ids), rc))
            else:
                for i, it in enumerate(sel):
                    runtestprotocol(it, log=False, nextitem=sel[i + 1] if i + 1 < len(sel) else None)
            times[way].append(time.perf_counter() - t0)
    print("%d tests of %s (%d collected), %d rounds alternated" % (len(sel), a.module, len(items), a.r))
    for way, ts in times.items():
        print("  %-8s median %6.1f ms  min %6.1f ms" % (way, statistics.median(ts) * 1000, min(ts) * 1000))


if __name__ == "__main__":
    sys.exit(main())
