import warnings

import pytest


@pytest.mark.parametrize("n", range(12))
def test_many_warn(n):
    warnings.warn(RuntimeWarning("twelve of these"))


@pytest.fixture
def noisy_teardown():
    yield
    print("in teardown")


def test_teardown_output_after_failure(noisy_teardown):
    print("in call")
    assert False, "boom"


def test_error_in_setup(request):
    request.getfixturevalue("no_such_fixture")
