"""Tests that print with pytest's capture off (-s): the text reaches the
terminal while the test runs, between its location and its letter."""

import sys


def test_prints():
    print("one: printed")


def test_prints_and_fails():
    print("one: before the failure")
    sys.stderr.write("one: on stderr\n")
    assert 1 == 2


def test_quiet():
    pass
