"""Benchmarks of the execution engine (kernel side); prints a table.

Run: python3 kernel/python/tests/bench_engine.py [--quick]

1. edit one trivial statement of a 1,000-statement main: compile + execute
   time (p50/p99) until that statement's update is emitted, and how many
   statements ran (must be 1 + its dependents);
2. 200 statements of ~5 ms each, edit one leaf: incremental vs fresh run;
3. compile (parse + analysis + load) of a 5,000-line module, cold and after a
   one-line edit;
4. preview of a list of a million items; interrupt latency of a sleeping
   statement.
"""

import os
import signal
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from enginetest import Session, main_stack  # noqa: E402

QUICK = "--quick" in sys.argv


def percentile(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def thousand_statements():
    lines = ["def main():"]
    for i in range(1000):
        if i % 10 == 9:
            lines.append("    b%d = a%d + a%d" % (i, i - 1, i - 2))
        else:
            lines.append("    a%d = %d * 2" % (i, i))
    return lines


def bench_edit_1000():
    lines = thousand_statements()
    s = Session({"main": "\n".join(lines) + "\n"})
    try:
        s.run()
        samples = []
        reran = []
        expected = []
        iterations = 30 if QUICK else 200
        for n in range(iterations):
            i = (n * 37) % 1000
            if i % 10 == 9:
                i -= 1
            lines[i + 1] = "    a%d = %d * 2 + %d" % (i, i, n)
            source = "\n".join(lines) + "\n"
            target = "main:main/a%d" % i
            seen = {}

            def emit(ev, _seen=seen, _target=target):
                if ev.get("type") == "updates":
                    for u in ev["updates"]:
                        if u["expressionId"] == _target and u["payload"]["type"] == "Value":
                            _seen["t"] = time.perf_counter()
                s.kernel.events.append(ev)

            s.kernel.emit_progress = emit
            started = time.perf_counter()
            s.compile({"main": source})
            run = s.run()
            samples.append((seen["t"] - started) * 1e3)
            reran.append(len(run.computed()))
            dependents = 1 if (i + 1) % 10 == 9 or (i + 2) % 10 == 9 else 0
            expected.append(1 + dependents)
        return samples, reran, expected
    finally:
        s.close()


def bench_incremental_vs_fresh():
    n = 60 if QUICK else 200
    body = ["def main():"] + ["    v%d = work(%d)" % (i, i) for i in range(n)]
    files = {"main": "import time\n\ndef work(i):\n    time.sleep(0.005)\n    return i\n\n" + "\n".join(body) + "\n"}
    started = time.perf_counter()
    fresh = Session(files)
    fresh.run()
    fresh_time = time.perf_counter() - started
    try:
        incremental = []
        for k in range(5):
            body[n - k] = "    v%d = work(%d) + 1" % (n - k - 1, n - k - 1)
            src = files["main"].split("def main():")[0] + "\n".join(body) + "\n"
            t0 = time.perf_counter()
            fresh.compile({"main": src})
            run = fresh.run()
            incremental.append(time.perf_counter() - t0)
            assert len(run.computed()) == 1, run.computed()
        inc = statistics.median(incremental)
        return n, fresh_time, inc
    finally:
        fresh.close()


def big_module():
    lines = ["import math", "", "K = 3", ""]
    i = 0
    while len(lines) < 5000:
        lines += [
            "def f%d(a, b=%d):" % (i, i),
            "    c = a * b + K",
            "    d = [c + j for j in range(3)]",
            "    if c > %d:" % i,
            "        d.append(math.sqrt(abs(c)))",
            "    return sum(d)",
            "",
        ]
        i += 1
    lines.append("def main():")
    lines += ["    x%d = f%d(%d)" % (j, j, j) for j in range(200)]
    return lines


def bench_compile_5000():
    lines = big_module()
    s = Session()
    try:
        t0 = time.perf_counter()
        s.compile({"big": "\n".join(lines) + "\n"})
        cold = time.perf_counter() - t0
        edits = []
        for n in range(5 if QUICK else 20):
            lines[5 + 7 * n + 1] = "    c = a * b + K + %d" % n
            t0 = time.perf_counter()
            s.compile({"big": "\n".join(lines) + "\n"})
            edits.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        s.run(main_stack("big"))
        run_time = time.perf_counter() - t0
        return len(lines), cold, statistics.median(edits), run_time
    finally:
        s.close()


def bench_preview():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from enginetest import engine_module

    values = engine_module().values
    big = list(range(10**6))
    samples = []
    for _ in range(200):
        t0 = time.perf_counter()
        values.preview(big)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e6


def bench_interrupt():
    import types

    sync = types.ModuleType("ripple_bench_sync")
    sync.started = threading.Event()
    sys.modules["ripple_bench_sync"] = sync
    s = Session({"main": "import time, ripple_bench_sync\n\ndef main():\n    x = 1\n    y = ripple_bench_sync.started.set() or time.sleep(30)\n"})
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    s.kernel.install_sigint()
    latencies = []
    try:
        for _ in range(3 if QUICK else 10):
            sync.started.clear()
            sent = {}

            def interrupter():
                sync.started.wait(20)
                sent["t"] = time.perf_counter()
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

            t = threading.Thread(target=interrupter)
            t.start()
            run = s.run(invalidate="all")
            latencies.append((time.perf_counter() - sent["t"]) * 1e3)
            t.join()
            assert run.result == "interrupted"
    finally:
        s.kernel.uninstall_sigint()
        s.close()
    return statistics.median(latencies)


def main():
    rows = []
    samples, reran, expected = bench_edit_1000()
    rows.append(("1,000-stmt main, edit one statement: p50", "%.2f ms" % percentile(samples, 50), "target <= 10 ms"))
    rows.append(("1,000-stmt main, edit one statement: p99", "%.2f ms" % percentile(samples, 99), ""))
    ok = all(r == e for r, e in zip(reran, expected))
    rows.append(("  statements re-run per edit", "%s (expected 1 + dependents: %s)" % (sorted(set(reran)), "match" if ok else "MISMATCH"), ""))
    n, fresh, inc = bench_incremental_vs_fresh()
    rows.append(("%d x 5 ms statements: fresh run" % n, "%.1f ms" % (fresh * 1e3), ""))
    rows.append(("%d x 5 ms statements: edit one leaf" % n, "%.2f ms" % (inc * 1e3), ""))
    rows.append(("  incremental speed-up", "%.0fx" % (fresh / inc), "target >= 50x"))
    lines, cold, edit, run_time = bench_compile_5000()
    rows.append(("compile %d-line module (cold)" % lines, "%.1f ms" % (cold * 1e3), "parse + analysis + load"))
    rows.append(("compile %d-line module (one-line edit)" % lines, "%.1f ms" % (edit * 1e3), ""))
    rows.append(("  first run of its 200-stmt main", "%.1f ms" % (run_time * 1e3), ""))
    rows.append(("preview of a 1,000,000-item list", "%.1f us" % bench_preview(), ""))
    rows.append(("interrupt latency (SIGINT -> run ends)", "%.2f ms" % bench_interrupt(), ""))
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-45s %s" % (width, "benchmark", "result", "note"))
    print("-" * (width + 60))
    for name, result, note in rows:
        print("%-*s  %-45s %s" % (width, name, result, note))
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
