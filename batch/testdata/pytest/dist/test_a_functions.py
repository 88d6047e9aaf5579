"""Module-level test functions, collected first: --dist load cuts them
into chunks, so both kernels run some of them and each sets up the
module fixture once (counted in fsetups-PID); loadfile and loadscope run
them all on one kernel. Each test writes its kernel's pid to fpid-N."""
import os
import time

import pytest


@pytest.fixture(scope="module")
def shared():
    with open("fsetups-%d" % os.getpid(), "a") as f:
        f.write("setup\n")
    return []


@pytest.mark.parametrize("n", range(4))
def test_chunk(shared, n):
    with open("fpid-%d" % n, "w") as f:
        f.write(str(os.getpid()))
    shared.append(n)
    time.sleep(0.25)
    assert n in shared
