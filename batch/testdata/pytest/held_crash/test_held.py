"""Fast tests around one that kills its process and one that hangs: the
kernel holds the fast tests' progress for a moment (capture.py
Output.hold_locked), and what it held when it died is still each test's."""

import os
import time

import pytest


@pytest.mark.parametrize("n", range(150))
def test_before_exit(n):
    assert n >= 0


def test_exit():
    os._exit(3)


@pytest.mark.parametrize("n", range(150))
def test_before_hang(n):
    assert n >= 0


def test_hang():
    while True:
        try:
            time.sleep(60)
        except KeyboardInterrupt:
            pass  # ignores the interrupt: the kernel is killed


@pytest.mark.parametrize("n", range(50))
def test_after(n):
    assert n >= 0
