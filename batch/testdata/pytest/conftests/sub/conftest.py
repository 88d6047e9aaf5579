import pytest


@pytest.fixture
def who(who):
    return who + "/sub"
