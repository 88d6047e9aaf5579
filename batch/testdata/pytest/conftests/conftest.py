import pytest


@pytest.fixture
def greeting():
    return "hello"


@pytest.fixture
def who():
    return "root"


@pytest.fixture(autouse=True)
def marker(request):
    request.node.user_properties.append(("autouse", "root"))
    yield
