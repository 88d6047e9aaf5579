"""A project module whose docstrings are tests (test_lib's load_tests)."""


def double(x):
    """
    >>> double(2)
    4
    """
    return x * 2


def halve(x):
    """
    >>> halve(4)
    2.0
    """
    return x / 2
