import pytest


@pytest.fixture(scope="session")
def service():
    raise RuntimeError("the service does not start")


@pytest.fixture(scope="session", autouse=True)
def fine():
    yield "fine"
