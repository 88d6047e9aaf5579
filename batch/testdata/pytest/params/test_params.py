import pytest


@pytest.fixture(params=[1, 2, 3], ids=["one", "two", "three"])
def number(request):
    return request.param


@pytest.fixture(params=["a", "b"])
def letter(request):
    yield request.param


def test_number(number):
    assert number < 3


def test_both(number, letter):
    assert letter in "ab"
