import sys

import pytest

HAVE_FEATURE = False
VERSION = (1, 2)


@pytest.mark.skipif("not HAVE_FEATURE", reason="no feature")
def test_needs_feature():
    assert False


@pytest.mark.skipif("VERSION < (1, 0)")
def test_new_enough():
    assert VERSION >= (1, 0)


@pytest.mark.xfail("VERSION == (1, 2)", reason="known bug in 1.2", strict=True)
def test_known_bug():
    assert VERSION != (1, 2)


@pytest.mark.skipif(sys.version_info < (3, 0), reason="py2")
def test_py3():
    pass


@pytest.mark.xfail(reason="was flaky")
def test_xpass():
    assert VERSION


@pytest.mark.xfail(VERSION > (1, 0), reason="strict and passes", strict=True)
def test_xpass_strict():
    pass
