"""A --collect-only listing over the kernel's 64 KiB answer cap (click's
is 137 KB): 2,000 items with long ids."""

import pytest


@pytest.mark.parametrize("n", range(2000), ids=lambda n: "a-rather-long-parameter-id-to-fill-the-listing-%04d" % n)
def test_long(n):
    assert n >= 0
