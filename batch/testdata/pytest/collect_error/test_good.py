def test_good():
    pass
