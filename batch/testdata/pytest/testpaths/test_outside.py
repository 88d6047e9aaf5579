def test_outside():
    assert False, "outside testpaths: pytest does not collect it"
