import time


def test_c_one():
    time.sleep(0.26)


def test_c_two():
    pass
