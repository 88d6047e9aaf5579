from broken_helper import oops


def test_uses_broken():
    oops()
