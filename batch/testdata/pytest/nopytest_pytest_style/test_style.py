def test_function():
    assert True
