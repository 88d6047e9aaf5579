import os
import shutil

import pytest


# Like IPython's suite: a session fixture that takes a fixed directory and
# refuses to start when it exists. Under pytest there is one session; with
# several kernels every session but the first fails here unless ripple
# runs their tests elsewhere.
@pytest.fixture(scope="session", autouse=True)
def work_dir():
    path = os.path.abspath("work-dir")
    if os.path.exists(path):
        raise ValueError("work-dir already exists: is another session running?")
    os.mkdir(path)
    yield path
    shutil.rmtree(path)
