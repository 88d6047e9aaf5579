import pytest


def test_b_passes():
    pass


@pytest.mark.skip(reason="never")
def test_b_skipped():
    pass


def test_b_fails():
    assert 1 == 2
