def check_inside():
    assert True


def test_not_a_check():
    assert False, "not matched by python_functions"
