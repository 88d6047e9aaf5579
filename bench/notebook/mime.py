"""mimeTypes detection cost per statement (target <= 5 us p50 on
plain values): the engine's values.mime_types on the values plain
statements produce, and a 1,000-statement run with and without it.

Run: python3 bench/notebook/mime.py   (prints rows for bench/notebook/run.sh)
"""

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "kernel", "python", "tests"))

from enginetest import engine_module  # noqa: E402

values = engine_module().values
plain = [0, 1.5, "text", b"bytes", None, True, [1, 2, 3], {"a": 1}, (1, 2), {1, 2}, range(3), object()]

# Per call, cached per type (what every statement pays).
samples = []
for _ in range(200):
    t0 = time.perf_counter_ns()
    for _ in range(100):
        for v in plain:
            values.mime_types(v)
    samples.append((time.perf_counter_ns() - t0) / (100 * len(plain)))
print("mime_types per call (plain values, cached type): p50 %.3f us, p99 %.3f us" % (
    statistics.median(samples) / 1000, sorted(samples)[int(len(samples) * 0.99) - 1] / 1000))

# First sight of a type (the MRO walk and the _repr_*_ lookups).
class Fresh:
    pass

first = []
for i in range(2000):
    t = type("T%d" % i, (Fresh,), {})
    v = t()
    t0 = time.perf_counter_ns()
    values.mime_types(v)
    first.append(time.perf_counter_ns() - t0)
print("mime_types first sight of a type: p50 %.3f us" % (statistics.median(first) / 1000))
