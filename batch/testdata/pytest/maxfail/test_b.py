def test_b1():
    pass


def test_b2_fails():
    assert "b" == "c"


def test_b3_not_run():
    pass


def test_b4_not_run():
    pass
