"""The first module: one failure, then passes. With --maxfail=2 pytest
stops at the second failure of the session, in test_b.py."""


def test_a1():
    pass


def test_a2_fails():
    assert 1 == 2


def test_a3():
    pass


def test_a4():
    pass
