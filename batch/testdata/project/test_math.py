import unittest

from helper import add, divide


def test_add():
    total = add(2, 2)
    assert total == 4


def test_add_wrong():
    total = add(2, 2)
    expected = 5
    assert total == expected, "2 + 2 should be 5"


def test_raises_in_helper():
    ratio = divide(1, 0)
    doubled = ratio * 2


def test_needs_fixture(tmp_path):
    assert tmp_path


@unittest.skip("not today")
def test_marked_skip():
    assert False


def helper_not_a_test():
    assert False


class TestCalc:
    def test_method(self):
        x = add(1, 1)
        assert x == 2

    def test_method_wrong(self):
        x = add(1, 1)
        assert x == 3

    def not_a_test(self):
        pass


class TestWithInit:
    def __init__(self, value):
        self.value = value

    def test_never_collected(self):
        pass
