"""THE invariant (PROTOCOL.md 5.3), tested differentially.

Random programs get random edit sequences (change, insert, delete, rename a
variable, tweak a constant, edit the helper module) interleaved with
recomputes (none, "all", some ids), pushes and pops of LocalCalls into
helper calls, and interrupts (deterministic: at the n-th line of project
code, mid-statement, or at the n-th user-code region). After every step that
was not interrupted, every value of the visible frame as a client sees it
(type + preview, or Panic message and trace, or "not reached" and why) must equal
what a fresh engine reports running the current sources from scratch. The
fresh engine runs in a forked child that first unloads the parent engine's
modules, so it starts with fresh module objects and empty caches.

Seeded and reproducible: RIPPLE_INVARIANT_SEED picks the first seed,
RIPPLE_INVARIANT_STEPS the number of steps (default 1000).
test_random_programs_journalled runs RIPPLE_INVARIANT_JOURNAL_STEPS (default
300) more with a value journal, so that values later statements overwrite
are let go of and read back (ripple_kernel/overwritten.py); the fresh
reference never has one. A failing run
prints its seed and writes its concrete script (sources and operations) to
data/invariant_failure.json; copy it into data/invariant_regressions.json to
keep it as a regression case, which test_regressions replays.
"""

import json
import os
import random
import re
import sys
import traceback
import unittest

from enginetest import HERE, EngineTestCase, Session, main_stack, own_journal
from fuzzprog import Generator

DATA = os.path.join(HERE, "data")
REGRESSIONS = os.path.join(DATA, "invariant_regressions.json")
FAILURE = os.path.join(DATA, "invariant_failure.json")
STEPS_PER_PROGRAM = 30
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def view_of(updates):
    out = {}
    for expression_id, u in updates.items():
        payload = u["payload"]
        kind = payload["type"]
        if kind == "Value":
            out[expression_id] = ["Value", u.get("type"), _ADDRESS.sub(" at 0x?", payload.get("preview", ""))]
        elif kind == "Panic":
            out[expression_id] = ["Panic", payload["message"], list(payload["trace"])]
        else:
            # Pending: "not reached" with its reason (PROTOCOL.md 8.1: the
            # statement that raised ended the run), or a plain wait.
            reason = payload.get("reason")
            out[expression_id] = [kind, payload.get("message"), reason and [reason["kind"], reason.get("expressionId")]]
    return out


def fresh_reference(parent, files, stack):
    """(result, view of the top frame) of a fresh engine, computed in a fork."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            os.close(read_fd)
            # The parent's journal is left alone: its writer thread may
            # have held SQLite's locks at the fork (closing it here hung).
            parent.engine.journal = None
            parent.engine.close()
            os.environ.pop("RIPPLE_VALUES_DB", None)  # fresh: nothing from a journal
            fresh = Session(files, scripts=parent.scripts)
            try:
                run = fresh.run(stack)
                top = len(stack) - 1
                data = {"result": run.result, "view": view_of(fresh.latest.get(top, {}))}
            finally:
                fresh.close()
            payload = json.dumps(data).encode()
        except BaseException:
            payload = json.dumps({"error": traceback.format_exc()}).encode()
            code = 1
        with os.fdopen(write_fd, "wb") as w:
            w.write(payload)
        os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as r:
        payload = r.read()
    os.waitpid(pid, 0)
    data = json.loads(payload.decode())
    if "error" in data:
        raise AssertionError("fresh reference failed:\n" + data["error"])
    return data["result"], data["view"]


class Mismatch(AssertionError):
    pass


class Driver:
    """Applies script operations to an incremental session and checks each."""

    def __init__(self, session):
        self.session = session
        self.files = {}
        self.stack = main_stack(name="__main__") if session.scripts else main_stack()
        self.script = []
        self.checked = 0

    def apply(self, op):
        self.script.append(op)
        s = self.session
        if op["op"] == "compile":
            if op.get("scripts") and not s.scripts:  # a replayed script's first op
                s.scripts = list(op["scripts"])
                self.stack = main_stack(name="__main__")
            self.files.update(op["files"])
            s.compile(op["files"])
            return None
        self.stack = op["stack"]
        interrupt = op.get("interrupt")
        if interrupt:
            if interrupt[0] == "line":
                s.kernel.interrupt_at_line(interrupt[1])
            else:
                s.kernel.interrupt_at_region(interrupt[1])
        try:
            run = s.run(self.stack, invalidate=op.get("invalidate"))
        finally:
            s.kernel.clear_interrupts()
        if run.result == "interrupted":
            return run
        self.check(run)
        return run

    def check(self, run):
        result, expected = fresh_reference(self.session, self.files, self.stack)
        top = len(self.stack) - 1
        got = view_of(self.session.latest.get(top, {}))
        problems = []
        if run.result != result:
            problems.append("result: incremental %r, fresh %r" % (run.result, result))
        if result == {"status": "complete"}:
            for expression_id, want in sorted(expected.items()):
                have = got.get(expression_id)
                if have != want:
                    problems.append("%s: incremental %r, fresh %r" % (expression_id, have, want))
        self.checked += 1
        if problems:
            raise Mismatch("\n".join(problems))


def generate_and_check(seed, steps, rng_program_size=(10, 60)):
    """Run one seeded random session of about `steps` steps; returns steps
    checked. Every fifth seed's program is a script (fuzzprog.Program.script)."""
    rng = random.Random(seed)
    script = seed % 5 == 0
    gen = Generator(rng, script)
    session = Session(scripts=["main"] if script else ())
    driver = Driver(session)
    try:
        program = gen.program(rng.randint(*rng_program_size))
        driver.apply({"op": "compile", "files": program.sources(), "scripts": session.scripts})
        driver.apply({"op": "run", "stack": driver.stack})
        for _ in range(steps):
            roll = rng.random()
            if roll < 0.45:
                new, _kind = gen.edit(program)
                changed = {k: v for k, v in new.sources().items() if program.sources().get(k) != v}
                program = new
                if changed:
                    driver.apply({"op": "compile", "files": changed})
                driver.apply({"op": "run", "stack": driver.stack})
            elif roll < 0.6:
                choice = rng.random()
                if choice < 0.3:
                    invalidate = None
                elif choice < 0.5:
                    invalidate = "all"
                else:
                    ids = sorted(session.latest.get(len(driver.stack) - 1, {}))
                    invalidate = rng.sample(ids, min(len(ids), rng.randint(1, 3))) if ids else None
                driver.apply({"op": "run", "stack": driver.stack, "invalidate": invalidate})
            elif roll < 0.75:
                stack = driver.stack
                top = session.latest.get(len(stack) - 1, {})
                calls = sorted(i for i, u in top.items() if "methodCall" in u and u["payload"]["type"] == "Value")
                if calls and len(stack) < 3 and rng.random() < 0.7:
                    stack = stack + [{"type": "LocalCall", "expressionId": rng.choice(calls)}]
                elif len(stack) > 1:
                    stack = stack[:-1]
                driver.apply({"op": "run", "stack": stack})
            elif roll < 0.9:
                if rng.random() < 0.6:
                    interrupt = ["line", rng.randint(1, 40)]
                else:
                    interrupt = ["region", rng.randint(1, 12)]
                driver.apply({"op": "run", "stack": driver.stack, "interrupt": interrupt})
            else:
                # A failed LocalCall (its statement vanished) is popped.
                if len(driver.stack) > 1:
                    driver.apply({"op": "run", "stack": driver.stack[:-1]})
                else:
                    driver.apply({"op": "run", "stack": driver.stack})
        return driver.checked
    except Mismatch:
        os.makedirs(DATA, exist_ok=True)
        with open(FAILURE, "w") as f:
            json.dump({"seed": seed, "script": driver.script}, f, indent=1)
        sys.stderr.write("\ninvariant violated: seed %d; script written to %s\n" % (seed, FAILURE))
        raise
    finally:
        session.close()


def replay(script):
    session = Session()
    driver = Driver(session)
    try:
        for op in script:
            driver.apply(op)
    finally:
        session.close()
    return driver.checked


class Invariant(EngineTestCase):
    def test_regressions(self):
        if not os.path.exists(REGRESSIONS):
            self.fail("missing %s" % REGRESSIONS)
        with open(REGRESSIONS) as f:
            cases = json.load(f)
        self.assertGreater(len(cases), 0)
        for case in cases:
            with self.subTest(name=case.get("name"), seed=case.get("seed")):
                self.assertGreater(replay(case["script"]), 0)

    def test_random_programs(self):
        self.random_programs(int(os.environ.get("RIPPLE_INVARIANT_STEPS", "1000")), False)

    def test_random_programs_journalled(self):
        self.random_programs(int(os.environ.get("RIPPLE_INVARIANT_JOURNAL_STEPS", "300")), True)

    def random_programs(self, total, journalled):
        seed = int(os.environ.get("RIPPLE_INVARIANT_SEED", "1"))
        checked = 0
        done = 0
        while done < total:
            steps = min(STEPS_PER_PROGRAM, total - done)
            if journalled:
                checked += self.journalled(seed, steps)
            else:
                checked += generate_and_check(seed, steps)
            done += steps
            seed += 1
        # Interrupted steps are not compared, but most steps must be.
        self.assertGreater(checked, total // 2)

    @staticmethod
    def journalled(seed, steps):
        """generate_and_check with a journal of its own (a new file per
        program: nothing is restored from another program's)."""
        with own_journal("ripple-invariant-journal-"):
            return generate_and_check(seed, steps)


if __name__ == "__main__":
    unittest.main()
