import os

import pytest

LOG = os.path.join(os.path.dirname(__file__), "log.txt")


def log(what):
    with open(LOG, "a") as f:
        f.write(what + "\n")


@pytest.fixture(scope="session")
def session_res():
    log("setup session")
    yield "s"
    log("teardown session")
