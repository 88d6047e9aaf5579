import functools
from unittest import mock

import os


def twice(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        fn(*args, **kwargs)
        return fn(*args, **kwargs)
    return wrapper


CALLS = []


class TestDecorated:
    @twice
    def test_method_with_self(self):
        CALLS.append(self)
        assert isinstance(self, TestDecorated)

    @mock.patch("os.getcwd", return_value="/patched")
    def test_patched(self, getcwd):
        assert os.getcwd() == "/patched"
        assert getcwd.called


@mock.patch.dict(os.environ, {"RIPPLE_DECORATED": "yes"})
def test_patch_dict():
    assert os.environ["RIPPLE_DECORATED"] == "yes"


def test_calls_after():
    assert len(CALLS) == 2
