"""Runs after test_a under pytest; its many tests made it go first when
the queue was sorted largest group first. It changes the default for
good, as a test suite of pyparsing's does."""

import pytest

import defaults


def test_set_default():
    defaults.PRECISION = 4
    assert defaults.fmt(1) == "1.0000"


@pytest.mark.parametrize("n", range(12))
def test_more(n):
    assert defaults.fmt(n).endswith("0000")
