"""A test whose helper raises KeyboardInterrupt: pytest ends its session
there and shows where it landed (the helper's line, not the test's)."""

import pytest


def stop_here():
    raise KeyboardInterrupt


@pytest.fixture
def resource():
    yield "r"


def test_before(resource):
    assert resource == "r"


def test_interrupts(resource):
    stop_here()


def test_after():
    pass
