import os
import time


def test_c_one(work_dir):
    time.sleep(0.3)
    assert os.path.isdir(work_dir)


def test_c_two():
    time.sleep(0.3)
    assert os.path.isdir("work-dir")
