import pytest


class Identifier:
    pass


def make():
    return 1


@pytest.mark.parametrize("kind", [Identifier, int, make, len, None, 1.5, "x y"])
def test_kind(kind):
    assert kind is not str


@pytest.mark.parametrize("a,b", [(1, 2), pytest.param(3, 4, id="three-four"), pytest.param(5, 6, marks=pytest.mark.xfail)])
def test_pairs(a, b):
    assert b == a + 1 and a != 5
