"""Two classes of one module, each slow enough that with two kernels and
--dist loadscope each runs on its own kernel; with loadfile (the default)
both run on one. Each test writes its kernel's pid to pid-CLASS; the
module-scoped fixture counts its set-ups in setups-PID."""
import os
import time

import pytest


@pytest.fixture(scope="module")
def module_resource():
    with open("setups-%d" % os.getpid(), "a") as f:
        f.write("setup\n")
    return "resource"


class TestFirst:
    # Two tests: a kernel holds a group's last test back until it knows
    # its next group, so a class of one test would take the next class
    # along with it.
    @pytest.mark.parametrize("n", [1, 2])
    def test_one(self, module_resource, n):
        with open("pid-TestFirst", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(1)
        assert module_resource == "resource"


class TestSecond:
    @pytest.mark.parametrize("n", [1, 2])
    def test_two(self, module_resource, n):
        with open("pid-TestSecond", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(2)
        assert module_resource == "resource"


def test_module_level(module_resource):
    assert module_resource == "resource"
