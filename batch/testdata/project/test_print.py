import sys


def test_prints():
    print("hello on stdout")
    print("hello on stderr", file=sys.stderr)
    done = True


def test_prints_then_fails():
    print("the context of the failure")
    value = 41
    assert value == 42
