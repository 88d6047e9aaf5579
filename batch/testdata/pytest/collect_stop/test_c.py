def test_c():
    pass
