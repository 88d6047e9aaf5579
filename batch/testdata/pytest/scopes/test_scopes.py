import pytest

from conftest import log


@pytest.fixture(scope="module")
def module_res(session_res):
    log("setup module")
    yield "m"
    log("teardown module")


@pytest.fixture(scope="class")
def class_res(module_res):
    log("setup class")
    yield "c"
    log("teardown class")


@pytest.fixture
def function_res(class_res):
    log("setup function")
    yield "f"
    log("teardown function")


class TestOne:
    def test_a(self, function_res, class_res, module_res, session_res):
        log("run TestOne.test_a")
        assert (function_res, class_res, module_res, session_res) == ("f", "c", "m", "s")

    def test_b(self, function_res):
        log("run TestOne.test_b")


class TestTwo:
    def test_c(self, class_res):
        log("run TestTwo.test_c")


def test_module_level(module_res, request):
    log("run test_module_level")
    assert request.node.name == "test_module_level"
