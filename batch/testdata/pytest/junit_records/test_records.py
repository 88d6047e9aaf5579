"""What tests record into pytest's --junitxml: record_property (the
testcase's <properties>), record_xml_attribute (its attributes) and
record_testsuite_property (the testsuite's <properties>)."""

import pytest


def test_property(record_property):
    record_property("ticket", "JIRA-1")
    record_property("weight", 3)


def test_property_fails(record_property):
    record_property("ticket", "JIRA-2")
    assert 1 == 2


def test_attribute(record_xml_attribute):
    record_xml_attribute("owner", "team-a")
    record_xml_attribute("classname", "custom.Class")


def test_suite_property(record_testsuite_property):
    record_testsuite_property("ARCH", "x86_64")


@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")


def test_fails_then_teardown_errors(record_property, broken_teardown):
    record_property("phase", "call")
    assert False


def test_plain():
    pass
