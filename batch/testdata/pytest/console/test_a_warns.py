"""Warnings pytest groups by message in its summary, raised at collection
and in tests; tests of every outcome with distinct durations."""

import time
import warnings

import pytest

warnings.warn(UserWarning("at import of test_a_warns"))


def test_warns_once():
    warnings.warn(UserWarning("same message"))


def test_warns_same():
    warnings.warn(UserWarning("same message"))


def test_deprecated():
    warnings.warn(DeprecationWarning("old api"))


def test_slow_pass():
    time.sleep(0.4)


def test_fails():
    time.sleep(0.12)
    assert [1, 2] == [1, 3]


@pytest.mark.skip(reason="not here")
def test_skip_one():
    pass


@pytest.mark.skip(reason="not here")
def test_skip_two():
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="fixed now")
def test_xpass():
    pass
