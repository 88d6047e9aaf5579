"""Print a seeded random program and its edit sequence as JSON.

Used by engine/invariant_test.go: the programs and edits come from the
Python engine's own differential test (kernel/python/tests/fuzzprog.py),
so both levels test the same language of programs. This script adds one
thing: an occasional ``time.sleep(PAUSE)`` statement, so that an interrupt
sent by the Go test has a run in progress to land in (the sleep has no
digits, so a constant tweak cannot turn it into a long one).

Usage: gen.py SEED EDITS
Output: {"seed": SEED, "versions": [{"kind": str, "files": {path: text}}]}
where versions[0] is the initial program (kind "initial") and each next
one is the previous with one edit applied (kind names the edit).
"""

import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "kernel", "python", "tests"))

import fuzzprog  # noqa: E402

PAUSE_PROBABILITY = 0.04
HEADER = "import time\n\nPAUSE = 0.03\n"


class Generator(fuzzprog.Generator):
    def statement(self, env):
        if self.rng.random() < PAUSE_PROBABILITY:
            return fuzzprog.Stmt("time.sleep(PAUSE)", {})
        return super().statement(env)


def files(program):
    sources = program.sources()
    return {"main.py": HEADER + sources["main"], "helpers.py": sources["helpers"]}


def main():
    seed, edits = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    gen = Generator(rng)
    program = gen.program(rng.randint(10, 60))
    versions = [{"kind": "initial", "files": files(program)}]
    for _ in range(edits):
        program, kind = gen.edit(program)
        versions.append({"kind": kind, "files": files(program)})
    json.dump({"seed": seed, "versions": versions}, sys.stdout)


if __name__ == "__main__":
    main()
