"""What a script that rebinds df ten times holds (issue 30): the kernel's
memory once the run is done, before and after overwritten values are let
go of (kernel/python/ripple_kernel/overwritten.py), and what letting go
costs the run (each overwritten frame is pickled into the value journal)
and an edit's run (the frame its edited statement reads comes back from
the journal).

Each measure runs in a process of its own (the engine tests' harness,
no server): the script is run once, then an edit of its sixth rebinding
is run; after each, the DataFrames alive in the process are counted (and
their bytes), and the resident memory (VmRSS, after gc) is taken, less
what it was before the first run (it counts what malloc keeps, the
journal's pickles included: DataFrames alive is the measure). Old: an engine from another tree (--old, e.g. main's,
unpacked with git archive), with the journal; new: this tree's, with and
without a journal (without one nothing is let go of: the module doc).

Run it from the repository root, with an interpreter that has pandas:

    git archive main | tar -x -C /tmp/old-engine
    /usr/bin/python3 bench/overwritten/memory.py --old /tmp/old-engine   # -rows 200000 -rounds 3
"""

import argparse
import gc
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
REBINDINGS = 10


def script(rows: int) -> str:
    lines = ["import numpy as np", "import pandas as pd", "",
             "df = pd.DataFrame(np.random.default_rng(0).random((%d, 10)))" % rows]
    lines += ["df = df * %d + 1" % (k + 2) for k in range(REBINDINGS - 1)]
    lines += ["total = float(df.values.sum())"]
    return "\n".join(lines) + "\n"


def rss_mib() -> float:
    gc.collect()
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def frames() -> tuple:
    """(number, MiB) of the DataFrames alive in the process."""
    import pandas

    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, pandas.DataFrame)]
    return len(alive), sum(int(f.memory_usage(index=True).sum()) for f in alive) / (1 << 20)


def child(tests: str, rows: int, journal: bool) -> None:
    sys.path.insert(0, tests)
    from enginetest import Session, main_stack

    # Imported before the baseline: their memory is not the cache's.
    importlib.import_module("numpy")
    importlib.import_module("pandas")

    d = tempfile.mkdtemp(prefix="ripple-bench-overwritten-")
    if journal:
        os.environ["RIPPLE_VALUES_DB"] = os.path.join(d, "values.db")
    else:
        os.environ.pop("RIPPLE_VALUES_DB", None)
    src = script(rows)
    s = Session({"main": src})
    base = rss_mib()
    t = time.perf_counter()
    r = s.run(main_stack(name="__main__"))
    first = time.perf_counter() - t
    assert r.result == {"status": "complete"}, r.result
    after_first = rss_mib()
    n_first, mib_first = frames()
    s.compile({"main": src.replace("df = df * 7 + 1", "df = df * 7 + 2")})
    t = time.perf_counter()
    r = s.run(main_stack(name="__main__"))
    edit = time.perf_counter() - t
    assert r.result == {"status": "complete"}, r.result
    ran = r.computed()
    after_edit = rss_mib()
    n_edit, mib_edit = frames()
    s.close()
    shutil.rmtree(d, ignore_errors=True)
    print(json.dumps({"first_s": first, "edit_s": edit, "held_first": after_first - base,
                      "held_edit": after_edit - base, "edit_ran": len(ran), "frames_first": n_first,
                      "frames_mib_first": mib_first, "frames_edit": n_edit, "frames_mib_edit": mib_edit}))


def measure(tests: str, rows: int, journal: bool) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", tests, "-rows", str(rows)]
                         + (["--journal"] if journal else []), check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", help="root of another tree (its kernel/python/tests)")
    ap.add_argument("-rows", type=int, default=200000)
    ap.add_argument("-rounds", type=int, default=3)
    ap.add_argument("--child")
    ap.add_argument("--journal", action="store_true")
    a = ap.parse_args()
    if a.child:
        child(a.child, a.rows, a.journal)
        return
    new = os.path.join(REPO, "kernel", "python", "tests")
    configs = [("new, journal", new, True), ("new, no journal", new, False)]
    if a.old:
        configs.insert(0, ("old, journal", os.path.join(a.old, "kernel", "python", "tests"), True))
    results = {name: [] for name, _, _ in configs}
    for _ in range(a.rounds):  # alternated
        for name, tests, journal in configs:
            results[name].append(measure(tests, a.rows, journal))
    mib = a.rows * 10 * 8 / (1 << 20)
    print("%d rebindings of a %d x 10 float frame (%.1f MiB each); median of %d rounds" % (REBINDINGS, a.rows, mib, a.rounds))
    print("| engine | frames alive after the run | after an edit's run | RSS growth after the run / the edit's | first run | edit's run (statements run) |")
    print("|---|---|---|---|---|---|")
    for name, _, _ in configs:
        rs = results[name]

        def med(k: str) -> float:
            return statistics.median(r[k] for r in rs)

        print("| %s | %d (%.0f MiB) | %d (%.0f MiB) | %.0f / %.0f MiB | %.0f ms | %.0f ms (%d) |" % (
            name, med("frames_first"), med("frames_mib_first"), med("frames_edit"), med("frames_mib_edit"),
            med("held_first"), med("held_edit"), med("first_s") * 1000, med("edit_s") * 1000, med("edit_ran")))


if __name__ == "__main__":
    main()
