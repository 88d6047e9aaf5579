import time


def test_c_one():
    time.sleep(0.2)


def test_c_two():
    pass
