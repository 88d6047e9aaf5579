def test_c1_not_run():
    pass


def test_c2_fails_not_run():
    assert False
