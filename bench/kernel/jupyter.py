"""Jupyter side of bench/kernel: measures ipykernel through jupyter_client
with the same workloads as ripple's side and prints one JSON object.

Run by bench/kernel (go run ./bench/kernel); needs the Debian packages
python3-jupyter-client and python3-ipykernel, and /usr/bin/python3.
"""

import json
import statistics
import sys
import time

from jupyter_client.manager import KernelManager

STDOUT_CODE = "import sys\ns = 'x' * 65535 + '\\n'\nfor _ in range(800): sys.stdout.write(s)"
STDOUT_BYTES = 800 * 65536
BUSY_CODE = "print('go', flush=True)\nwhile True: pass"


def reply_to(kc, msg_id):
    while True:
        msg = kc.get_shell_msg(timeout=120)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def until_idle(kc, msg_id, on_stream=None):
    """Read iopub until the kernel is idle after msg_id: all output is in."""
    while True:
        msg = kc.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream" and on_stream is not None:
            if on_stream(msg["content"]["text"]):
                return
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            return


def start():
    km = KernelManager(kernel_name="python3")
    t0 = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    return km, kc, time.perf_counter() - t0


def stop(km, kc):
    kc.stop_channels()
    km.shutdown_kernel(now=True)


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    out = {}

    starts = []
    for _ in range(5):
        km, kc, dt = start()
        starts.append(dt)
        stop(km, kc)
    out["start_p50_ms"] = statistics.median(starts) * 1e3

    km, kc, _ = start()
    out["kernel_argv"] = km.kernel_spec.argv
    kc.execute_interactive("import sys", timeout=120)
    out["python"] = sys.version.split()[0]

    # Round trip of a trivial statement: execute, wait for its reply.
    for _ in range(100):
        reply_to(kc, kc.execute("x = 1"))
    rts = []
    for _ in range(n):
        t0 = time.perf_counter()
        msg_id = kc.execute("x = 1")
        reply_to(kc, msg_id)
        rts.append(time.perf_counter() - t0)
    out["rt_p50_us"] = pct(rts, 0.5) * 1e6
    out["rt_p99_us"] = pct(rts, 0.99) * 1e6
    while True:  # drop the iopub backlog of the round trips
        try:
            kc.get_iopub_msg(timeout=0.2)
        except Exception:
            break

    # Streaming: 50 MiB of stdout in 64 KiB writes, until all of it arrived.
    rates = []
    for _ in range(3):
        got = [0]

        def count(text):
            got[0] += len(text)

        t0 = time.perf_counter()
        msg_id = kc.execute(STDOUT_CODE)
        until_idle(kc, msg_id, count)
        dt = time.perf_counter() - t0
        reply_to(kc, msg_id)
        if got[0] != STDOUT_BYTES:
            raise SystemExit("jupyter: got %d bytes of output, want %d" % (got[0], STDOUT_BYTES))
        rates.append(STDOUT_BYTES / dt / 1e6)
    out["stdout_mb_s"] = statistics.median(rates)

    # Interrupt latency on a busy loop: from the interrupt to the reply.
    lat = []
    for _ in range(20):
        msg_id = kc.execute(BUSY_CODE, stop_on_error=False)
        until_idle(kc, msg_id, lambda text: "go" in text)
        t0 = time.perf_counter()
        km.interrupt_kernel()
        reply = reply_to(kc, msg_id)
        lat.append(time.perf_counter() - t0)
        if reply["content"].get("ename") != "KeyboardInterrupt":
            raise SystemExit("jupyter: interrupt gave %r" % reply["content"])
        until_idle(kc, msg_id)
    out["int_p50_ms"] = statistics.median(lat) * 1e3
    out["int_max_ms"] = max(lat) * 1e3

    # Restart (Jupyter's reset).
    restarts = []
    for _ in range(5):
        t0 = time.perf_counter()
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=120)
        restarts.append(time.perf_counter() - t0)
    out["restart_p50_ms"] = statistics.median(restarts) * 1e3
    stop(km, kc)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
