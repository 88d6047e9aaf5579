def test_c_needs_service(service):
    assert service


def test_c_plain(fine):
    assert fine == "fine"
