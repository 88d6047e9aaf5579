"""Every kind of report pytest's junitxml writes."""

import sys

import pytest


def helper(x):
    return x + 1


def test_passes():
    print("not shown for a pass")


def test_fails_with_output():
    print("to stdout")
    print("to stderr", file=sys.stderr)
    assert helper(1) == 3


@pytest.fixture
def broken_teardown():
    yield 1
    raise RuntimeError("teardown broke")


def test_fails_then_teardown_errors(broken_teardown):
    assert broken_teardown == 2


def test_passes_then_teardown_errors(broken_teardown):
    assert broken_teardown == 1


@pytest.fixture
def broken_setup():
    raise ValueError("setup broke")


def test_setup_errors(broken_setup):
    pass


def test_skipped():
    pytest.skip("not today")


@pytest.mark.skip(reason="marked")
def test_marked_skip():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False


@pytest.mark.xfail(reason="fixed", strict=True)
def test_xpass_strict():
    pass


class TestClass:
    def test_method_fails(self):
        x = {"a": 1}
        assert x == {"a": 2}
