"""ripple's Jupyter kernel and ipykernel side by side, both driven by
jupyter_client as a frontend drives them, on the same interpreter.

Prints one table (p50/p99 or mean over the runs, milliseconds):
- execute round trip of `x = 1` (request sent to execute_reply and idle);
- a 50 MiB stream (64 KiB writes to stdout, until every byte arrived);
- interrupt latency (SIGINT, interrupt_mode signal, on a busy loop until
  the execute_reply);
- restart to namespace back: a notebook of cells taking 2 s in all, then a
  restart; ripple gets the values from its journal, ipykernel runs the
  cells again (what a user does after a restart);
- re-run of an edited cell whose unchanged first statement takes 1 s
  (ripple with a cell id, as JupyterLab sends; ipykernel runs it all).

Usage: python3 bench.py [-n ROUND_TRIPS] (run.sh installs the kernelspec).
"""

import argparse
import statistics
import sys
import time

from jupyter_client.manager import start_new_kernel

MIB = 1 << 20


def collect(kc, msg_id, on_msg=None, timeout=120):
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if on_msg is not None:
            on_msg(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def execute(kc, code, cell_id=None, on_msg=None):
    if cell_id is None:
        msg_id = kc.execute(code)
    else:
        msg = kc.session.msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                 "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
                             metadata={"cellId": cell_id})
        kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
    content = collect(kc, msg_id, on_msg)
    if content["status"] != "ok":
        raise RuntimeError("%r failed: %s" % (code, content))
    return content


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def round_trip(kc, n):
    execute(kc, "x = 1")
    return [timed(lambda: execute(kc, "x = 1")) for _ in range(n)]


def stream(kc, size, run):
    # A new cell each time (run): ripple would show a re-run cell's
    # kept output (its first MiB) instead of running it again.
    code = "import sys\nchunk%d = 'x' * 65536\nfor _ in range(%d):\n    sys.stdout.write(chunk%d)\nsys.stdout.flush()" % (
        run, size // 65536, run)
    got = [0]

    def on_msg(msg):
        if msg["msg_type"] == "stream":
            got[0] += len(msg["content"]["text"])

    ms = timed(lambda: execute(kc, code, on_msg=on_msg))
    if got[0] != size:
        raise RuntimeError("stream: %d of %d bytes arrived" % (got[0], size))
    return ms


def interrupt(km, kc, runs):
    out = []
    for i in range(runs):
        msg_id = kc.execute("import time\nn%d = 0\nwhile True:\n    n%d += 1" % (i, i))
        while True:  # wait until the cell runs (busy)
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
                break
        time.sleep(0.2)
        t = time.perf_counter()
        km.interrupt_kernel()
        content = collect(kc, msg_id)
        out.append((time.perf_counter() - t) * 1000)
        if content.get("ename") != "KeyboardInterrupt":
            raise RuntimeError("interrupt: %s" % content)
    return out


NOTEBOOK = [
    "import time\nrows = time.sleep(0.5) or [list(range(50)) for _ in range(2000)]",
    "totals = time.sleep(0.5) or [sum(r) for r in rows]",
    "lookup = time.sleep(0.5) or {i: t for i, t in enumerate(totals)}",
    "summary = time.sleep(0.5) or (len(lookup), sum(totals))",
]


def restart(km, kc, ripple):
    for i, code in enumerate(NOTEBOOK):
        execute(kc, code, cell_id="nb-%d" % i)
    if ripple:
        time.sleep(0.5)  # the journal is written once the kernel is idle (150 ms)
    t = time.perf_counter()
    km.restart_kernel(now=False)
    kc.wait_for_ready(timeout=120)
    if not ripple:
        for i, code in enumerate(NOTEBOOK):
            execute(kc, code, cell_id="nb-%d" % i)
    execute(kc, "assert summary == (2000, 2000 * sum(range(50)))")
    return (time.perf_counter() - t) * 1000


def rerun(kc, runs):
    cell = "import time\ndata = time.sleep(1) or list(range(100000))\nresult = sum(data) * %d"
    execute(kc, cell % 0, cell_id="slow")
    return [timed(lambda k=k: execute(kc, cell % (k + 1), cell_id="slow")) for k in range(runs)]


def measure(name, n):
    ripple = name == "ripple"
    km, kc = start_new_kernel(kernel_name=name, startup_timeout=120)
    try:
        rt = round_trip(kc, n)
        st = [stream(kc, 50 * MIB, run) for run in range(3)]
        it = interrupt(km, kc, 10)
        rs = [restart(km, kc, ripple)]
        rr = rerun(kc, 3)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    return {
        "round trip x = 1, p50": statistics.median(rt),
        "round trip x = 1, p99": pct(rt, 99),
        "50 MiB stream, mean of 3": statistics.mean(st),
        "interrupt, p50 of 10": statistics.median(it),
        "interrupt, max of 10": max(it),
        "restart to namespace back (4 cells, 2 s)": rs[0],
        "re-run edited cell, slow first line (1 s), mean of 3": statistics.mean(rr),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300, help="round trips of x = 1")
    args = ap.parse_args()
    rows = {k: measure(k, args.n) for k in ("ripple", "python3")}
    print("%-56s %12s %12s %9s" % ("ms (lower is better)", "ripple", "ipykernel", "ratio"))
    for key in rows["ripple"]:
        r, i = rows["ripple"][key], rows["python3"][key]
        print("%-56s %12.2f %12.2f %8.2fx" % (key, r, i, r / i if i else float("nan")))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
